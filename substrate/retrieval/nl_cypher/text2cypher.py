"""The model-backed translator (the ``cypher`` role): neo4j-graphrag's Text2Cypher prompt
(``Text2CypherTemplate``) with the live schema and few-shot pairs from
``cypher/nl/fewshot.yaml``; its ``extract_cypher`` takes the query out of the reply. A failed
query gets one repair round: the same prompt, the query and the guard's error message."""

from __future__ import annotations

from functools import lru_cache

import yaml
from neo4j_graphrag.generation.prompts import Text2CypherTemplate
from neo4j_graphrag.retrievers.text2cypher import extract_cypher

from substrate.llm.roles import RoleLLM, Usage
from substrate.settings import PROJECT_ROOT

FEWSHOT = PROJECT_ROOT / "cypher" / "nl" / "fewshot.yaml"
RULES = ("Write one read-only Cypher query. Use only the labels, relationship types and "
         "properties of the schema; entity ids are ceid values like 'service:payment'. Do not "
         "filter on tenant_id (the service scopes every query). Return the query only.")
REPAIR = ("\n\nThis query failed:\n{query}\nError: {error}\n"
          "Write a corrected query that avoids the error.")


@lru_cache(maxsize=1)
def examples() -> list[str]:
    pairs = yaml.safe_load(FEWSHOT.read_text())
    return [f"USER INPUT: '{p['question']}' QUERY: {p['cypher']}" for p in pairs]


def prompt(question: str, schema: str, failed: tuple[str, str] | None = None) -> str:
    text = Text2CypherTemplate().format(schema=schema, examples="\n".join(examples()),
                                        query_text=question)
    if failed is not None:
        text += REPAIR.format(query=failed[0], error=failed[1])
    return text


async def generate(llm: RoleLLM, question: str, schema: str, usage: Usage,
                   failed: tuple[str, str] | None = None) -> str:
    reply = await llm.complete(prompt(question, schema, failed), usage, system=RULES)
    return extract_cypher(reply).strip().rstrip(";").strip()

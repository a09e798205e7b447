"""NL→Cypher (RSN-01) as a retrieval strategy.

Owns: the question vocabulary (``lexicon``: labels, relationship types and their synonyms from
``substrate/ontology.yaml``, entity names from the graph), the embedded zero-LLM translator
(``parser`` → ``emit``: a lark grammar over tagged words, a small query IR, parameterised
Cypher from ``cypher/nl/select.cypher.j2``), the model-backed translator (``text2cypher``:
live schema + few-shot prompt, one repair round), and the ``nl_cypher`` strategy
(``strategy``) that runs whatever was generated through the ``POST /cypher`` guard and scope
(``substrate.retrieval.cypher_run.run_cypher``) and says when it falls back.
"""

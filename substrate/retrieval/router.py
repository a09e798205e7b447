"""Deterministic query router: which use-case family a question belongs to, and why.

No model is involved: each family has cue patterns with a weight in (0, 1]. A family's score
is the noisy-or of its matched cues, ``1 - Π(1 - w)``; the best family wins when it scores at
least ``MIN_SCORE``, otherwise the question is ``free_text``. Reported confidence is
``best - 0.5 × runner_up`` (clipped to [0, 1]): a clear cue with no competitor is near its
weight, two families pulling equally halve it. ``temporal`` never counts as a runner-up — a
time scope qualifies any question rather than competing with it. ``free_text`` reports
``1 - best``. Ties go to the family listed first in ``Intent``.

Pinning cues ("as of", a bare date) weigh little for ``temporal``, so "what did checkout depend
on as of March 10th?" stays a ``dependency`` question with a ``time`` scope attached and
``temporal`` as a secondary intent; "what changed ..." or "the state of the graph on ..." make
``temporal`` primary.

Families and their examples (reasoning-search-service.txt, RSN-UC-01..08): dependency ("What
does PaymentService depend on?"), callers ("Find all services calling auth directly"),
ownership ("Who owns the checkout service?"), decision_rationale ("Why was this architectural
decision made?"), temporal ("What changed before last Friday's incident?"), strategic_risks
("What are our top 3 architectural risks?"), epic_impact ("Which services does this epic
affect?"), intent_mismatch (PR code vs its project item).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from .mentions import entity_candidates, extract_mentions, fuzzy_query
from .timephrases import TimeScope, parse_time_scope

__all__ = ["Cue", "Intent", "Route", "SPEC_STRATEGIES", "asks_for_risks", "classify",
           "entity_candidates", "fuzzy_query"]

MIN_SCORE = 0.3
MAX_DEPTH = 3  # RSN-04: "The traversal depth is 1–3 hops"


class Intent(StrEnum):
    DEPENDENCY = "dependency"
    CALLERS = "callers"
    OWNERSHIP = "ownership"
    DECISION_RATIONALE = "decision_rationale"
    TEMPORAL = "temporal"
    STRATEGIC_RISKS = "strategic_risks"
    EPIC_IMPACT = "epic_impact"
    INTENT_MISMATCH = "intent_mismatch"
    ATTRIBUTES = "attributes"
    MESSAGES = "messages"
    WHEN = "when"
    FREE_TEXT = "free_text"


# The spec's strategy table, per family (names as reported in ``retrieval_strategies_used``).
SPEC_STRATEGIES: dict[Intent, tuple[str, ...]] = {
    Intent.DEPENDENCY: ("local_graphrag",),
    Intent.CALLERS: ("nl_cypher", "local_graphrag"),
    Intent.OWNERSHIP: ("owns_traversal", "codeowners"),
    Intent.DECISION_RATIONALE: ("memory",),
    Intent.TEMPORAL: ("temporal_diff", "hyde"),
    Intent.STRATEGIC_RISKS: ("raptor", "global_graphrag"),
    Intent.EPIC_IMPACT: ("intent_assertion_traversal",),
    Intent.INTENT_MISMATCH: ("embedding_similarity",),
    Intent.ATTRIBUTES: ("edge_properties",),
    Intent.MESSAGES: ("message_flows",),
    Intent.WHEN: ("edge_validity_history",),
    Intent.FREE_TEXT: ("vector", "keyword", "local_graphrag"),
}

_I = Intent
# "which services / what / who" + at most two words that are not an auxiliary ("what does X
# use" keeps its subject) + the verb: the question asks for the subjects of the relation
_REVERSE = (r"\b(?:which|what|who)\s+(?:(?!does\b|do\b|did\b|is\b|are\b|should\b|can\b|could\b"
            r"|would\b)\w+\s+){0,2}?")  # "who should I talk to" asks for a person
# "the blast radius of X", "what breaks / would be affected if X goes down (fails, is removed)"
_BLAST = (r"\bblast\s+radius\b|\bwhat\s+(?:else\s+)?(?:would\s+|will\s+)?(?:breaks?|fails?)\b"
          r"|\bif\s+(?:\S+\s+){1,4}?(?:goes|went|is|was|were|are)\s+(?:down|offline|unavailable"
          r"|removed|deleted|decommissioned)\b"
          r"|\bif\s+(?:\S+\s+){1,4}?(?:fails|failed|crashes|crashed|dies|died|breaks|broke)\b")
# "where does cart store its data?", "where are the orders kept?", "what does cart persist
# to?": the datastores among its dependencies
_WHERE_STORED = (r"^\W*where\s+(?:does|do|did|will|would)\s+.+?\s+(?:store|keep|persist|save"
                 r"|put|cache|write)\b|^\W*where\s+(?:is|are|was|were|gets?)\s+.+?\s+"
                 r"(?:stored|kept|persisted|saved|cached|written)\b|\bwhat\s+(?:does|do|did)"
                 r"\s+.+?\s+(?:persist|store|save)\s+(?:\w+\s+){0,2}?(?:to|in|into)\b")
_PUBSUB_VERB = r"\b(?:publish|subscrib|consum|produc|emit|handl|listen)\w*"
MESSAGE_CUE = (r"^(?=.*(?:\b(?:events?|topics?|queues?|messages?|exchanges?)\b"
               r"|(?-i:[a-z]Event\b))).*?" + _PUBSUB_VERB +
               r"|\bwhat\s+(?:does|do|did)\s+(?:the\s+)?[\w.-]+(?:\s+service)?\s+(?:publish"
               r"|emit|produce|consume)\b(?!\s+(?:to|from|on)\b)"
               r"|\b(?:publishers?|subscribers?)\b|\bproducers?\s+(?:and|or|vs\.?|versus)\s+"
               r"consumers?\b|\bwho\s+(?:publish|subscrib|produc|emit)\w*"
               r"|\b(?:publish|produc)\w*\s+(?:vs\.?|versus|or|and)\s+(?:consum|subscrib)\w*"
               r"|\b(?:consum|subscrib)\w*\s+(?:vs\.?|versus|or|and)\s+(?:publish|produc)\w*")
# "which Python version", "what version of Node", "the Go version", "runtime version"
LANGUAGE_VERSION = (r"\b(?:python|node(?:\.?js)?|go(?:lang)?|java|jdk|jre|ruby|php|rust|elixir"
                    r"|kotlin|dotnet|\.net|runtime|language|interpreter)\s+versions?\b"
                    r"|\bversions?\s+of\s+(?:the\s+)?(?:python|node(?:\.?js)?|go(?:lang)?|java"
                    r"|jdk|ruby|php|rust|elixir|kotlin|\.net|runtime|language|interpreter)\b")
# "does checkout call payment?", "does cart use a cache?", "is orders using Kafka?": whether
# the subject's dependencies hold the other end (strategies_graph.relation_check)
_WHETHER = (r"^\W*(?:does|do|did|will|would|is|are)\s+(?:the\s+)?[\w.-]+(?:\s+(?:service|svc|app"
            r"|api|application))?\s+(?:still\s+|ever\s+|actually\s+|directly\s+)?(?:use|call"
            r"|depend\s+on|rely\s+on|talk\s+to|connect\s+to|need|read\s+from|write\s+to"
            r"|publish\s+to|consume\s+from|send\s+\w+\s+to|using|calling|depending\s+on"
            r"|talking\s+to|connecting\s+to)\b")
_CUES: tuple[tuple[Intent, float, str], ...] = (
    (_I.DEPENDENCY, 0.8, r"\bdepend(?:s|ed|ing)?\s+on\b"),
    (_I.DEPENDENCY, 0.8, r"\bdependenc(?:y|ies)\b"),
    (_I.DEPENDENCY, 0.7, r"\b(?:relies|rely|relying)\s+on\b"),
    (_I.DEPENDENCY, 0.6, r"\bwhat\s+(?:does|did|do)\s+.+?\s+(?:use|call|need|require)\b"),
    # "what does the payment service call?": what it calls ("service call" is no caller cue)
    (_I.DEPENDENCY, 0.85, r"^\W*(?:what|which\s+\w+)\s+(?:does|did|do)\s+(?:the\s+)?"
                          r"(?!(?:we|i|you|they|us)\b)[\w.-]+"
                          r"(?:\s+(?:service|svc|api|app|application|function|module))?\s+"
                          r"(?:call|invoke|use)\W*$"),
    # "which database does X use", "what broker did X use on <date>": X's dependencies
    (_I.DEPENDENCY, 0.7, r"\b(?:which|what)\s+(?:\w+\s+){1,2}(?:does|did|do)\s+.+?\s+"
                         r"(?:use|call|need|require|talk\s+to|connect\s+to)\b"),
    (_I.DEPENDENCY, 0.5, r"\b(?:down|up)stream\b"),
    # "does checkout call payment?": a yes or no from checkout's dependencies
    (_I.DEPENDENCY, 0.92, _WHETHER),
    # where a service keeps its data: its datastores (strategies_graph keeps those)
    (_I.DEPENDENCY, 0.85, _WHERE_STORED),
    # "what does checkout talk to?", "show me everything checkout connects to"
    (_I.DEPENDENCY, 0.75, r"\bwhat\s+(?:does|did|do)\s+.+?\s+(?:talk|connect|speak|send\s+\w+)"
                          r"\s+to\b|\b(?:everything|all\s+(?:the\s+)?(?:services|things|systems))"
                          r"\s+(?:that\s+)?[\w.-]+\s+(?:talks?|connects?|calls?|uses?|needs?"
                          r"|reaches?|sends?\s+\w+)\b"),
    # who publishes and who consumes a topic, a queue or an event, as the services' code says
    # (strategies_messages): a publish/consume verb with a message word, or an event's class
    # name ("who subscribes to OrderStartedIntegrationEvent?"); "publishers", "subscribers"
    (_I.MESSAGES, 0.99, MESSAGE_CUE),
    # messaging: "what does notification publish to", "which topics does X consume from"
    (_I.DEPENDENCY, 0.7, r"\b(?:publish(?:es)?|emits?|produces?|pushes|sends?)\s+(?:\w+\s+)?to\b"
                         r"|\b(?:consumes?|subscribes?|reads?|pulls?)\s+(?:\w+\s+)?from\b"
                         r"|\b(?:subscribes?|listens?)\s+to\b"),
    # a gateway's or proxy's routes: "what does the gateway route to", "where does X forward"
    (_I.DEPENDENCY, 0.7, r"\b(?:route[sd]?|routing|forward(?:s|ed|ing)?|prox(?:y|ies|ied))\s+"
                         r"(?:\w+\s+)?to\b|\bwhat\s+routes\b|\bbackends?\s+of\b"),
    # passive: "what is used by X" names the user, so it asks for X's dependencies
    (_I.DEPENDENCY, 0.85, r"\b(?:used|consumed|depended\s+(?:up)?on|relied\s+(?:up)?on)\s+by\b"),
    (_I.CALLERS, 0.9, r"\bwho\s+calls\b"),
    # reverse direction: the question names the callee ("which services depend on X")
    (_I.CALLERS, 0.92, _REVERSE + r"(?:depends?|depended|relies|rely|relying)\s+(?:up)?on\b"),
    (_I.CALLERS, 0.85, _REVERSE + r"(?:uses?|using|consumes?|connects?\s+to|talks?\s+to"
                       r"|reads?\s+from|writes?\s+to|publish(?:es)?\s+to|emits?\s+to"
                       r"|produces?\s+to|sends?\s+(?:\w+\s+)?to|subscribes?\s+to"
                       r"|listens?\s+to)\b"),
    (_I.CALLERS, 0.9, r"\b(?:dependents|consumers|clients)\b|\bdependent\s+services\b"),
    # "which services share the catalog-db?": the ones using it
    (_I.CALLERS, 0.8, r"\b(?:which|what)\s+(?:\w+\s+)?(?:share|shares|sharing)\b"
                      r"|\bshared\s+by\b"),

    (_I.CALLERS, 0.85, r"\bcallers?\b|\bcalled\s+by\b|\bincoming\s+calls\b"),
    # blast radius: what fails with X is what depends on X, at any depth (``depth_hint``)
    (_I.CALLERS, 0.9, _BLAST),
    # "which services call X?" (never the end of a name: "does genai-service call vets?")
    (_I.CALLERS, 0.75, r"(?<![\w.-])(?:services?|functions?|modules?|what|which|who)\s+"
                       r"(?!does\b|do\b|did\b)"
                       r"(?:\w+\s+)?(?:call|calls|calling|invoke[sd]?|invoking)\b"),
    (_I.OWNERSHIP, 0.9, r"\bwho\s+owns\b"),
    (_I.OWNERSHIP, 0.75, r"\bown(?:s|ed|er|ers|ership)\b"),
    # "which teams own code?", "what do the developers own?" (the verb in the plural; "own"
    # alone is also an adjective: "its own database")
    (_I.OWNERSHIP, 0.8, r"\b(?:teams?|people|developers?|groups?|engineers?)\s+own\b"),
    (_I.OWNERSHIP, 0.8, r"\bcodeowners\b"),
    (_I.OWNERSHIP, 0.6, r"\bmaintain(?:s|er|ers)\b|\bresponsible\s+for\b|\bwhich\s+team\b"
                        r"|\blooks?\s+after\b|\btakes?\s+care\s+of\b"),
    # "who is on call for X?", not "how do I add someone to the on-call rota?" (a how-to)
    (_I.OWNERSHIP, 0.4, r"^(?!\W*how\s+(?:do|can|should|would|to)\b).*?"
                        r"(?:\bon[-\s]?call\b|\bcontact\b)"),
    # "who should I talk to about the ledger?", "who do I ask about checkout?"
    (_I.OWNERSHIP, 0.8, r"\bwho\s+(?:should|do|can|could|would)\s+(?:i|we)\s+(?:talk|speak|ask"
                        r"|reach(?:\s+out)?|go|contact|ping|escalate)\b|\bpoints?\s+of\s+contact\b"
                        r"|\bwho\s+knows\s+(?:about|the)\b|\bexperts?\s+(?:on|for|in)\b"),
    (_I.DECISION_RATIONALE, 0.85, r"^\W*why\b"),
    (_I.DECISION_RATIONALE, 0.6, r"\bwhy\b"),
    (_I.DECISION_RATIONALE, 0.85, r"\brationale\b|\breasons?\s+(?:for|behind|why|that\s+we|we)\b"),
    (_I.DECISION_RATIONALE, 0.6, r"\bmotivation\b|\bwhat\s+led\s+to\b|\bjustif\w+"),
    (_I.DECISION_RATIONALE, 0.5, r"\b(?:adrs?|decisions?|decided?|decides)\b"),
    # a record named by its number ("what does ADR 21 decide about dependency updates?") is
    # about that record, whatever else the question names
    (_I.DECISION_RATIONALE, 0.9, r"\b(?:adr|decision\s+record)[-\s#]*0*\d{1,4}\b"),
    # "what is the status of the decision to host GSP on EKS?": a record's status
    (_I.DECISION_RATIONALE, 0.95, r"\bstatus\s+of\s+(?:the\s+|our\s+)?(?:decision|adr|record"
                                  r"|architecture\s+decision)s?\b"),
    (_I.TEMPORAL, 0.85, r"\bwhat\s+(?:has\s+)?changed\b"
                        r"|\bchanges?\s+(?:since|between|before|after)\b"),
    (_I.TEMPORAL, 0.8, r"\bstate\s+of\s+the\s+graph\b|\bpoint[-\s]in[-\s]time\b"),
    # "which services were removed?" (no window: the whole history)
    (_I.TEMPORAL, 0.8, r"\b(?:which|what|any)\s+(?:\w+\s+)?(?:services?|datastores?|databases?"
                       r"|components?)\s+(?:were|have\s+been|has\s+been|got)\s+(?:ever\s+)?"
                       r"(?:removed|deleted|dropped|retired|decommissioned)\b"),
    # "which decisions were added in July 2026": what changed, about one kind of thing
    (_I.TEMPORAL, 0.85, r"\b(?:were|was|got)\s+(?:added|recorded|introduced|created|removed"
                        r"|written|dropped)\s+(?:in|between|during|since|before|after|on)\b"),
    (_I.TEMPORAL, 0.8, r"\b(?:before|after|during|since)\s+(?:the\s+|\w+\s+\w+'s\s+|\w+'s\s+)?"
                       r"(?:outage|incident|deploy\w*|release|rollout)\b"),
    (_I.TEMPORAL, 0.5, r"\b(?:diff|delta|history|timeline)\b"),
    (_I.TEMPORAL, 0.35, r"\bas\s+of\b|\bat\s+the\s+time\b"),
    (_I.ATTRIBUTES, 0.85, r"\b(?:address(?:es)?|host\s?names?|(?<!\bto )hosts?|ports?|urls?"
                          r"|endpoints?|connection\s+strings?|uris?|dsn)\b"),
    # a question that opens asking for the value ("what is the address of sqldata used by
    # ordering-api?") is about the value, whatever the relation words after it
    (_I.ATTRIBUTES, 0.95, r"^\W*(?:what|which)(?:\s+is|\s+are|'s)\s+(?:the\s+)?(?:[\w.-]+'s\s+)?"
                          r"(?:\w+\s+)?(?:address(?:es)?|host\s?names?|ports?|urls?|endpoints?"
                          r"|connection\s+strings?|uris?|dsn|(?:container\s+|docker\s+)?images?"
                          r"|image\s+tags?|versions?)\b"),
    (_I.ATTRIBUTES, 0.6, r"\bwhat\s+version\b|\bwhich\s+version\b|\bimage\s+tag\b"),
    # a runtime's version ("which Python version does tock use?"), not a dependency
    (_I.ATTRIBUTES, 0.9, LANGUAGE_VERSION),
    # what a service is and is written in, as its README says (attributes.py)
    (_I.ATTRIBUTES, 0.8, r"^\W*what\s+(?:does|do)\s+(?:the\s+)?[\w.-]+(?:\s+(?:service|svc|api"
                         r"|server|app))?\s+do\b"),
    (_I.ATTRIBUTES, 0.85, r"\b(?:what|which)\s+(?:programming\s+)?languages?\b"
                          r"|\b(?:written|implemented|coded)\s+in\b"),
    # the framework its build declares ("which framework does payment use?"), the runtime it
    # runs on ("what runtime does basket-api use?": its language and version)
    (_I.ATTRIBUTES, 0.9, r"\b(?:what|which)\s+(?:web\s+|application\s+|app\s+)?(?:frameworks?"
                         r"|runtimes?)\b"
                         r"|\bbuilt\s+(?:with|on)\s+(?:what|which)\b"),
    # how a service is deployed: the files that deploy it (attributes.py), not instructions
    (_I.ATTRIBUTES, 0.85, r"^\W*(?:how|where|by\s+what|with\s+what)\s+(?:is|are|was|were|gets?)"
                          r"\s+(?:the\s+)?[\w.-]+(?:\s+(?:service|svc|api|app|application"
                          r"|database|db|datastore|cache|queue|bucket))?\s+(?:deployed"
                          r"|provisioned)\b"
                          r"|\bwhat\s+deploys\b|\b(?:which|what)\s+(?:manifests?|files?"
                          r"|helm\s+charts?|charts?)\s+(?:deploys?|defines?|runs?)\b"),
    # how a service is reached: the Kubernetes Services exposing it, its published ports
    (_I.ATTRIBUTES, 0.85, r"^\W*(?:how|where)\s+(?:is|are)\s+(?:the\s+)?[\w.-]+(?:\s+service)?"
                          r"\s+exposed\b|^\W*is\s+(?:the\s+)?[\w.-]+(?:\s+service)?\s+(?:exposed"
                          r"|reachable|accessible)\b"),
    # what a piece of infrastructure is: "which engine does orders_rds run?", "what kind of
    # database is fac-db?", "what instance class is it?"
    (_I.ATTRIBUTES, 0.85, r"\b(?:which|what)\s+(?:\w+\s+)?engines?\b|\bengine\s+versions?\b"
                          r"|\b(?:instance|node)\s+(?:class|type|size)s?\b"
                          r"|^\W*what\s+(?:kind|type|sort)\s+of\s+(?:\w+\s+)?(?:is|are)\b"),
    (_I.ATTRIBUTES, 0.85, r"\b(?:which|what)\s+(?:(?:container|docker|oci)\s+)?image\b"
                          r"|\b(?:database|db|schema|bucket|queue|topic)\s+name\b"),
    # a question opening with "when did/was" asks for a time, whatever else it names
    (_I.WHEN, 0.95, r"^\W*when\s+(?:did|was|were|has|have|do)\b|\bsince\s+when\b"),
    # "who took over checkout and when?", "on what date was X removed?", "which commit ..."
    (_I.WHEN, 0.9, r"\band\s+when\b|\bwhen\s+(?:exactly\s+)?(?:did|was|were)\b"
                   r"|\b(?:on\s+)?what\s+date\b|\bwhich\s+(?:date|day|commit)\b"
                   r"|^\W*(?:(?:please\s+)?tell\s+me|show\s+me|find\s+out|do\s+you\s+know)"
                   r"\s+when\b"),
    (_I.WHEN, 0.7, r"\b(?:start(?:ed)?|stop(?:ped)?|beg[ia]n|ceased?|quit)\s+"
                   r"(?:calling|using|depending|talking|connecting|to\s+(?:call|use|depend))\b"),
    (_I.STRATEGIC_RISKS, 0.9, r"\bsingle\s+points?\s+of\s+failure\b|\bspofs?\b"),
    (_I.STRATEGIC_RISKS, 0.75, r"\brisks?\b|\briskiest\b"),
    (_I.STRATEGIC_RISKS, 0.6, r"\bhot\s?spots?\b|\bbottlenecks?\b|\btech(?:nical)?\s+debt\b"),
    (_I.STRATEGIC_RISKS, 0.6, r"\bhow\s+is\s+.+\s+structured\b|\barchitecture\s+overview\b"),
    (_I.STRATEGIC_RISKS, 0.3, r"\barchitectur(?:al|e)\b|\btop\s+\w+\b"),
    # a corpus-wide overview ("summarise the architecture", "the main domains of our system")
    # the system's technologies as a whole ("which technologies do we use?"), not one service's
    (_I.STRATEGIC_RISKS, 0.9, r"\btech(?:nology)?\s+stack\b|\b(?:what|which)\s+technologies\s+"
                              r"(?:do|does|did)\s+(?:we|our\s+\w+|the\s+(?:system|platform"
                              r"|project|product|app|application|company))\s+use\b"),
    (_I.STRATEGIC_RISKS, 0.6, r"\bsummar(?:y|ise|ize)\s+(?:of\s+)?(?:the|our)\s+(?:whole\s+)?"
                              r"(?:architecture|system|platform|codebase)\b"
                              r"|\bmain\s+(?:domains|areas|subsystems|building\s+blocks)\b"
                              r"|\b(?:system|platform)\s+overview\b|\bbig\s+picture\b"),
    (_I.EPIC_IMPACT, 0.85, r"\bepics?\b"),
    (_I.EPIC_IMPACT, 0.6, r"\bproject\s+items?\b|\broadmap\s+items?\b"),
    (_I.EPIC_IMPACT, 0.35, r"\b(?:affect(?:s|ed)?|impact(?:s|ed)?|touch(?:es|ed)?)\b"),
    (_I.INTENT_MISMATCH, 0.9, r"\bintent[-\s]check\b|\bmismatch\w*"),
    (_I.INTENT_MISMATCH, 0.8, r"\bmatch(?:es)?\s+(?:the\s+|its\s+)?(?:linked\s+)?"
                              r"(?:ticket|issue|item|epic|story)\b|\bwrong\s+ticket\b"),
    (_I.INTENT_MISMATCH, 0.6, r"\bintent\b|\bscope\s+creep\b|\bdrift\w*"),
    (_I.INTENT_MISMATCH, 0.4, r"\b(?:pr|pull\s+request)\s*#?\d+\b"),
)
_COMPILED = tuple((intent, w, re.compile(rx, re.I)) for intent, w, rx in _CUES)
_BLAST_RE = re.compile(_BLAST, re.I)
_WHERE_STORED_RE = re.compile(_WHERE_STORED, re.I)
_WHETHER_RE = re.compile(_WHETHER, re.I)
_DATE_CUE_WEIGHT = 0.45
_ORDER = {intent: n for n, intent in enumerate(Intent)}

_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "twenty": 20}
_NUM = r"(\d+|" + "|".join(_NUMBER_WORDS) + r")"
_DEPTH_N = re.compile(rf"\b{_NUM}\s+(?:hops?|levels?|layers?)\b", re.I)
_DEPTH_DEEP = re.compile(r"\btransitiv\w*|\bindirect\w*|\brecursiv\w*|\ball\s+the\s+way\b"
                         r"|\b(?:entire|full|whole)\s+(?:chain|tree|graph)\b", re.I)
_DEPTH_DIRECT = re.compile(r"\bdirect(?:ly)?\b|\bimmediate\b", re.I)
_TOP_N = re.compile(rf"\btop\s+{_NUM}\b", re.I)
_PR = re.compile(r"(?:\bpr|\bpull\s+request)\s*#?(\d+)\b|(?<![\w#])#(\d+)\b", re.I)


@dataclass(frozen=True)
class Cue:
    intent: Intent
    weight: float
    text: str  # the words of the question that matched


@dataclass(frozen=True)
class Route:
    intent: Intent
    confidence: float
    cues: tuple[Cue, ...]
    secondary: tuple[Intent, ...] = ()
    mentions: tuple[str, ...] = ()
    time: TimeScope = field(default_factory=TimeScope)
    depth: int | None = None
    top_n: int | None = None
    pr_numbers: tuple[int, ...] = ()
    scores: tuple[tuple[Intent, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        def iso(t: datetime | None) -> str | None:
            return t.isoformat() if t else None

        return {
            "intent": str(self.intent), "confidence": self.confidence,
            "cues": [{"intent": str(c.intent), "weight": c.weight, "text": c.text}
                     for c in self.cues],
            "secondary": [str(i) for i in self.secondary], "mentions": list(self.mentions),
            "time": {"as_of": iso(self.time.as_of), "start": iso(self.time.start),
                     "end": iso(self.time.end), "phrases": list(self.time.phrases)},
            "depth": self.depth, "top_n": self.top_n, "pr_numbers": list(self.pr_numbers),
            "scores": {str(i): s for i, s in self.scores},
        }


def _to_int(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word.lower()]


def depth_hint(question: str) -> int | None:
    """Traversal depth asked for: "2 hops" -> 2, "transitively" -> 3, "directly" -> 1; a
    blast-radius question ("what breaks if X goes down") reaches as deep as "transitively"."""
    if m := _DEPTH_N.search(question):
        return max(1, min(MAX_DEPTH, _to_int(m.group(1))))
    if _DEPTH_DEEP.search(question):
        return MAX_DEPTH
    if _DEPTH_DIRECT.search(question):
        return 1
    return MAX_DEPTH if _BLAST_RE.search(question) else None


_RISKS = re.compile(r"\brisk(?:s|y|iest)?\b|\bsingle\s+points?\s+of\s+failure\b|\bspofs?\b"
                    r"|\bhot\s?spots?\b|\bbottlenecks?\b|\btech(?:nical)?\s+debt\b"
                    r"|\bfragile\b|\bweak(?:est)?\s+(?:points?|spots?|links?)\b", re.I)


def asks_whether(question: str) -> bool:
    """Does the question ask whether its subject uses, calls or depends on something?"""
    return bool(_WHETHER_RE.search(question))


def asks_where_stored(question: str) -> bool:
    """Does the question ask where a service keeps its data (its datastores)?"""
    return bool(_WHERE_STORED_RE.search(question))


def asks_for_risks(question: str) -> bool:
    """A strategic question asking for risks (RSN-UC-04), answered from the stored GDS ranking;
    the other strategic questions ("summarise the architecture") want the corpus-wide summary."""
    return _RISKS.search(question) is not None


def _match_cues(question: str, time: TimeScope) -> list[Cue]:
    """Matched cues; where two cues of one family overlap in the text, only the heavier counts."""
    hits = sorted(((intent, w, m) for intent, w, rx in _COMPILED if (m := rx.search(question))),
                  key=lambda h: (_ORDER[h[0]], -h[1], h[2].start()))
    kept: list[tuple[Intent, float, re.Match[str]]] = []
    for intent, w, m in hits:
        if not any(k[0] == intent and k[2].start() < m.end() and m.start() < k[2].end()
                   for k in kept):
            kept.append((intent, w, m))
    # a dependency cue matching the whole question ("what does the payment service call?")
    # reads it whole: a caller cue inside it ("service call") is no reversal
    whole = [k[2] for k in kept if k[0] is Intent.DEPENDENCY and k[2].start() == 0
             and k[2].end() == len(question)]
    kept = [k for k in kept if k[0] is not Intent.CALLERS or not whole]
    reverse = [k[2] for k in kept if k[0] is Intent.CALLERS]
    kept = [k for k in kept if k[0] is not Intent.DEPENDENCY  # the callee is named: reversed
            or not any(r.start() < k[2].end() and k[2].start() < r.end() for r in reverse)]
    cues = [Cue(intent, w, m.group(0)) for intent, w, m in kept]
    if not time.is_empty:
        cues.append(Cue(Intent.TEMPORAL, _DATE_CUE_WEIGHT, ", ".join(time.phrases)))
    return cues


def _scores(cues: list[Cue]) -> list[tuple[Intent, float]]:
    miss: dict[Intent, float] = {}
    for cue in cues:
        miss[cue.intent] = miss.get(cue.intent, 1.0) * (1.0 - cue.weight)
    ranked = [(intent, round(1.0 - m, 4)) for intent, m in miss.items()]
    return sorted(ranked, key=lambda s: (-s[1], _ORDER[s[0]]))


def classify(question: str, now: datetime | None = None) -> Route:
    """Route ``question``; relative dates ("last Friday") are resolved against ``now``."""
    time = parse_time_scope(question, now or datetime.now(UTC))
    cues = _match_cues(question, time)
    ranked = _scores(cues)
    best = ranked[0][1] if ranked else 0.0
    if best < MIN_SCORE:
        intent, confidence, chosen = Intent.FREE_TEXT, round(1.0 - best, 3), tuple[Cue, ...]()
    else:
        intent = ranked[0][0]
        rivals = [sc for i, sc in ranked[1:] if i is not Intent.TEMPORAL]
        runner_up = rivals[0] if rivals else 0.0
        confidence = round(max(0.0, min(1.0, best - 0.5 * runner_up)), 3)
        chosen = tuple(c for c in cues if c.intent == intent)
    top = _TOP_N.search(question)
    return Route(
        intent=intent, confidence=confidence, cues=chosen,
        secondary=tuple(i for i, s in ranked if i != intent and s >= MIN_SCORE),
        mentions=tuple(extract_mentions(question)), time=time, depth=depth_hint(question),
        top_n=_to_int(top.group(1)) if top else None,
        pr_numbers=tuple(int(a or b) for a, b in _PR.findall(question)), scores=tuple(ranked),
    )

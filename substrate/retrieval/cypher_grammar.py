"""Neo4j's own Cypher 5 grammar, run by the ANTLR runtime: the one lexer and parser of /cypher.

The grammar is not a copy: it is the ATN that Neo4j 5.26.30 itself parses with, read from the
``.interp`` files in Maven Central's ``org.neo4j:cypher-v5-antlr-parser:5.26.30`` sources jar
(the same version as the server jars in ``plugins/artifacts.lock``; sha256-pinned here). No
generated code is committed or generated: ANTLR's interpreter runs the serialized ATN directly
(the grammar has no semantic predicates or actions), so what this module accepts is what the
server's parser accepts. The jar (1.5 MB) is fetched once with ``mvn dependency:get`` into the
state directory's Maven cache (``up`` does it while installing Neo4j).

``parse(text)`` returns a ``Tree`` (rule name, children, tokens with offsets) or raises
``BadRequest`` — text the grammar does not accept is refused, never passed through.

The Python runtime's ``ParserInterpreter`` has bugs (it indexes a set, matches an interval set
as a token type, takes ``len`` of a context); ``_Interpreter`` is a corrected port of the Java
one, limited to what this grammar uses (no left-recursive rules, predicates or actions).
"""

from __future__ import annotations

import functools
import subprocess
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from antlr4 import CommonTokenStream, InputStream, Lexer, Token
from antlr4.atn.ATN import ATN
from antlr4.atn.ATNDeserializer import ATNDeserializer
from antlr4.atn.ATNState import ATNState
from antlr4.atn.LexerATNSimulator import LexerATNSimulator
from antlr4.atn.ParserATNSimulator import ParserATNSimulator
from antlr4.atn.Transition import Transition
from antlr4.dfa.DFA import DFA
from antlr4.error.ErrorListener import ErrorListener
from antlr4.error.Errors import ParseCancellationException, RecognitionException
from antlr4.error.ErrorStrategy import BailErrorStrategy
from antlr4.Parser import Parser
from antlr4.ParserRuleContext import ParserRuleContext
from antlr4.PredictionContext import PredictionContextCache
from antlr4.tree.Tree import TerminalNodeImpl

from substrate.errors import BadRequest, StackError
from substrate.stack import maven

GROUP, ARTIFACT, VERSION = "org.neo4j", "cypher-v5-antlr-parser", "5.26.30"
SOURCES_SHA256 = "5ca84cf8cb9febbc8ef926591dc28af43fd6cf33dd6a433f7b81ce1be11dfa29"
_INTERP_DIR = "org/neo4j/cypher/internal/parser/v5/"
HIDDEN = 1  # the lexer puts spaces and comments on this channel
MAX_QUERY_CHARS = 20_000


def names(text: str, *, lower: bool) -> frozenset[str]:
    """A set of the blank-separated names in ``text`` (allow-lists kept as plain text)."""
    return frozenset(n.lower() if lower else n for n in text.split())


def sources_jar(m2: Path) -> Path:
    return (m2 / GROUP.replace(".", "/") / ARTIFACT / VERSION
            / f"{ARTIFACT}-{VERSION}-sources.jar")


def ensure_grammar(m2: Path) -> Path:
    """The pinned sources jar in ``m2``, downloaded with Maven if missing; sha256 checked."""
    jar = sources_jar(m2)
    if not jar.exists():
        m2.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            [maven.mvn_binary(), "-B", "-q", f"-Dmaven.repo.local={m2}", "dependency:get",
             f"-Dartifact={GROUP}:{ARTIFACT}:{VERSION}:jar:sources", "-Dtransitive=false"],
            capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        if result.returncode != 0 or not jar.exists():
            raise StackError(f"could not download the Cypher grammar {ARTIFACT}:{VERSION}: "
                             f"{(result.stdout + result.stderr).strip()[-500:]}")
    digest = maven.sha256_file(jar)
    if digest != SOURCES_SHA256:
        raise StackError(f"{jar} has sha256 {digest}, expected {SOURCES_SHA256}")
    return jar


_SECTIONS = ("token literal names", "token symbolic names", "rule names", "channel names",
             "mode names", "atn")


def _sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.split("\n"):
        if line[:-1] in _SECTIONS and line.endswith(":"):
            current = out.setdefault(line[:-1], [])
            continue
        if current is not None and line:
            current.append(line)
    return out


def _atn(section: dict[str, list[str]]) -> ATN:
    numbers = [int(x) for x in section["atn"][0].strip("[]").split(",")]
    return ATNDeserializer().deserialize(numbers)


@dataclass(frozen=True)
class Grammar:
    lexer_atn: ATN
    parser_atn: ATN
    rule_names: tuple[str, ...]
    symbolic_names: tuple[str, ...]
    lexer_rules: tuple[str, ...]
    lexer_dfa: list[DFA] = field(repr=False)
    parser_dfa: list[DFA] = field(repr=False)
    lexer_cache: PredictionContextCache = field(repr=False)
    parser_cache: PredictionContextCache = field(repr=False)

    def token_type(self, name: str) -> int:
        return self.symbolic_names.index(name)


def load_grammar(jar: Path) -> Grammar:
    with zipfile.ZipFile(jar) as z:
        lexer = _sections(z.read(_INTERP_DIR + "Cypher5Lexer.interp").decode())
        parser = _sections(z.read(_INTERP_DIR + "Cypher5Parser.interp").decode())
    latn, patn = _atn(lexer), _atn(parser)
    return Grammar(
        latn, patn, tuple(parser["rule names"]),
        tuple(n if n != "null" else "" for n in parser["token symbolic names"]),
        tuple(lexer["rule names"]),
        [DFA(s, i) for i, s in enumerate(latn.decisionToState)],
        [DFA(s, i) for i, s in enumerate(patn.decisionToState)],
        PredictionContextCache(), PredictionContextCache())


_LOCK = threading.Lock()
_GRAMMAR: list[Grammar] = []


def grammar(m2: Path | None = None) -> Grammar:
    """The process-wide grammar (DFA caches are shared, so later parses are fast)."""
    with _LOCK:
        if not _GRAMMAR:
            if m2 is None:
                from substrate.settings import Settings
                m2 = Settings.from_env().cache_dir / "m2"
            _GRAMMAR.append(load_grammar(ensure_grammar(m2)))
        return _GRAMMAR[0]


class _Errors(ErrorListener):  # type: ignore[misc]
    def syntaxError(self, recognizer: Any, offending: Any, line: int, column: int, msg: str,
                    e: Any) -> None:
        raise BadRequest("invalid Cypher: the Cypher 5 grammar does not accept the query",
                         {"line": line, "column": column, "construct": "syntax"})


class _Lexer(Lexer):  # type: ignore[misc]
    def __init__(self, text: str, g: Grammar) -> None:
        super().__init__(InputStream(text))
        self.ruleNames = g.lexer_rules
        self.symbolicNames = g.symbolic_names
        self._interp = LexerATNSimulator(self, g.lexer_atn, g.lexer_dfa, g.lexer_cache)
        self.removeErrorListeners()
        self.addErrorListener(_Errors())


class _Context(ParserRuleContext):  # type: ignore[misc]
    def __init__(self, parent: Any, invoking_state: int, rule_index: int) -> None:
        super().__init__(parent, invoking_state)
        self.rule_index = rule_index

    def getRuleIndex(self) -> int:
        return self.rule_index


class _Interpreter(Parser):  # type: ignore[misc]
    """Walks the parser ATN like generated code would (no left recursion in this grammar)."""

    def __init__(self, tokens: CommonTokenStream, g: Grammar) -> None:
        super().__init__(tokens)
        self.atn = g.parser_atn
        self.ruleNames = g.rule_names
        self._interp = ParserATNSimulator(self, g.parser_atn, g.parser_dfa, g.parser_cache)
        self._errHandler = BailErrorStrategy()
        self.removeErrorListeners()
        self.addErrorListener(_Errors())

    def _state(self) -> int:
        return int(self.state)

    def run(self, start_rule: int) -> _Context:
        start = self.atn.ruleToStartState[start_rule]
        root = _Context(None, ATNState.INVALID_STATE_NUMBER, start_rule)
        self.enterRule(root, start.stateNumber, start_rule)
        while True:
            state = self.atn.states[self._state()]
            if state.stateType == ATNState.RULE_STOP:
                if self._ctx.invokingState == -1:
                    self.exitRule()
                    return root
                self.exitRule()
                follow = self.atn.states[self._state()].transitions[0].followState
                self.state = follow.stateNumber
            else:
                self._visit(state)

    def _visit(self, p: ATNState) -> None:
        edge = 1
        if len(p.transitions) > 1:
            self._errHandler.sync(self)
            edge = self._interp.adaptivePredict(self._input, p.decision, self._ctx)
        t = p.transitions[edge - 1]
        kind = t.serializationType
        if kind == Transition.ATOM:
            self.match(t.label_)
        elif kind in (Transition.RANGE, Transition.SET, Transition.NOT_SET):
            if not t.matches(self._input.LA(1), Token.MIN_USER_TOKEN_TYPE, 0x10FFFF):
                self._errHandler.recoverInline(self)
            self.matchWildcard()
        elif kind == Transition.WILDCARD:
            self.matchWildcard()
        elif kind == Transition.RULE:
            target = t.target
            if target.isPrecedenceRule:
                raise BadRequest("invalid Cypher: unsupported grammar construct")
            ctx = _Context(self._ctx, p.stateNumber, target.ruleIndex)
            self.enterRule(ctx, target.stateNumber, target.ruleIndex)
        elif kind != Transition.EPSILON:
            raise BadRequest("invalid Cypher: unsupported grammar construct")
        self.state = t.target.stateNumber


@dataclass(frozen=True)
class Tok:
    """A token: grammar symbol (``MATCH``, ``IDENTIFIER``...), text, character span."""

    type: str
    text: str
    start: int
    stop: int  # exclusive


@dataclass
class Tree:
    """A parse-tree node: ``rule`` is the grammar rule, ``tok`` set for leaves."""

    rule: str
    children: list[Tree]
    tok: Tok | None = None
    parent: Tree | None = field(default=None, repr=False)

    @property
    def start(self) -> int:
        return self.tok.start if self.tok else self.children[0].start

    @property
    def stop(self) -> int:
        return self.tok.stop if self.tok else self.children[-1].stop

    def walk(self) -> list[Tree]:
        out, stack = [], [self]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(reversed(node.children))
        return out

    def rules(self, name: str) -> list[Tree]:
        """Direct children with rule ``name``."""
        return [c for c in self.children if c.rule == name]

    def first(self, name: str) -> Tree | None:
        return next(iter(self.rules(name)), None)

    def tokens(self) -> list[Tok]:
        return [n.tok for n in self.walk() if n.tok is not None]

    def has_token(self, kind: str) -> bool:
        return any(c.tok is not None and c.tok.type == kind for c in self.children)

    def inside(self, *rules: str) -> Tree | None:
        """The nearest ancestor with one of ``rules``."""
        node = self.parent
        while node is not None and node.rule not in rules:
            node = node.parent
        return node


def _convert(ctx: Any, g: Grammar, parent: Tree | None) -> Tree:
    if isinstance(ctx, TerminalNodeImpl):
        s = ctx.symbol
        tok = Tok(g.symbolic_names[s.type] if s.type > 0 else "EOF", s.text or "", s.start,
                  s.stop + 1)
        return Tree("", [], tok, parent)
    node = Tree(g.rule_names[ctx.getRuleIndex()], [], None, parent)
    children = (_convert(c, g, node) for c in (ctx.children or [])
                if not (isinstance(c, TerminalNodeImpl) and c.symbol.type == Token.EOF))
    node.children = [c for c in children if c.tok is not None or c.children]  # no empty rules
    return node


def lex(text: str, g: Grammar | None = None) -> list[Tok]:
    """All tokens (comments and spaces included) — the only lexer of /cypher."""
    g = g or grammar()
    lexer = _Lexer(text, g)
    out = []
    for t in lexer.getAllTokens():
        out.append(Tok(g.symbolic_names[t.type] if t.type > 0 else "EOF", t.text or "",
                       t.start, t.stop + 1))
    return out


PARSED_KEPT = 256  # parse trees remembered (queries up to PARSED_MAX_CHARS)
PARSED_MAX_CHARS = 4000


def parse(text: str, g: Grammar | None = None) -> Tree:
    """The parse tree of ``text`` from rule ``statements``; ``BadRequest`` if not Cypher 5.
    The tree is read-only to its users, so the trees of recent short queries are kept: a
    client repeating a query (with any parameter values) is not parsed again."""
    if len(text) > MAX_QUERY_CHARS:
        raise BadRequest(f"query longer than {MAX_QUERY_CHARS} characters")
    if g is None and len(text) <= PARSED_MAX_CHARS:
        return _parse_kept(text)
    return _parse(text, g or grammar())


@functools.lru_cache(maxsize=PARSED_KEPT)
def _parse_kept(text: str) -> Tree:
    return _parse(text, grammar())


def _parse(text: str, g: Grammar) -> Tree:
    tokens = CommonTokenStream(_Lexer(text, g))
    parser = _Interpreter(tokens, g)
    try:
        root = parser.run(g.rule_names.index("statements"))
    except (ParseCancellationException, RecognitionException) as exc:
        raise BadRequest("invalid Cypher: the Cypher 5 grammar does not accept the query",
                         {"construct": "syntax"}) from exc
    except RecursionError as exc:
        raise BadRequest("invalid Cypher: nested too deeply", {"construct": "nesting"}) from exc
    return _convert(root, g, None)


"""PII and secret redaction of text before it enters a context or a response.

Kinds (the names a response lists under ``policy.redacted``):

- ``email`` — addresses (``local@domain.tld``);
- ``phone`` — numbers that Google's libphonenumber (``phonenumbers``) parses as *valid*,
  international (``+44 20 7946 0958``) or national in :data:`PHONE_REGION`;
- ``ssn`` (US social security), ``nino`` (UK national insurance), ``iban`` — national ids,
  validated: SSN area/group/serial rules and IBAN mod-97 by ``python-stdnum``, the NINO
  prefix rules of HMRC (no D, F, I, Q, U, V; no O second; not BG, GB, KN, NK, NT, TN, ZZ);
- ``card`` — payment card numbers of 13..19 digits (spaces or dashes allowed) that pass the
  Luhn check;
- ``private_key`` (a PEM ``-----BEGIN ... PRIVATE KEY-----`` block), ``jwt`` (three base64url
  segments, the first a JSON header), ``aws_key``, ``api_key`` (vendor tokens recognised by
  Yelp's ``detect-secrets`` plugins: GitHub, GitLab, Slack, Stripe, OpenAI, PyPI, npm,
  SendGrid, Twilio, ...), ``password`` (the value of ``password=``/``secret:``/``token=``
  style assignments) and ``token`` (an unbroken run of >= 32 characters mixing upper case,
  lower case and digits with a Shannon entropy of at least 4 bits per character; hex digests,
  ids, and paths or slugs made of words are not tokens).

Everything here is pure: :func:`find` lists the spans, :func:`redact` replaces them with
``[REDACTED:<kind>]`` and counts them, :class:`Redactor` walks JSON-like values.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import phonenumbers
from stdnum import iban, luhn
from stdnum.us import ssn

KINDS = ("email", "phone", "ssn", "nino", "iban", "card", "private_key", "jwt", "aws_key",
         "api_key", "password", "token")
PHONE_REGION = "US"  # numbers written without a country code are read as this region's
PLACEHOLDER = "[REDACTED:{kind}]"
MIN_LENGTH = 6  # shorter strings cannot hold any kind

_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
                    r"\.[A-Za-z]{2,24}\b")
_SSN = re.compile(r"(?<![\d-])\d{3}[- ]\d{2}[- ]\d{4}(?![\d-])")
_NINO = re.compile(r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")
_NINO_BAD_PREFIXES = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.DOTALL)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
_ASSIGNMENT = re.compile(
    r"(?i)\b(?:password|passwd|pwd|passphrase|secret|client[_-]?secret|api[_-]?key|"
    r"access[_-]?key|secret[_-]?key|auth[_-]?token|access[_-]?token|token)"
    r"[\"']?\s*(?:=|:|=>)\s*[\"']?(?P<value>[^\s\"',;]{4,})")
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_=-]{32,}(?![A-Za-z0-9+/_=-])")
# where a phone number could be: 7+ digits with separators, not an ISO date or time
_PHONE_CANDIDATE = re.compile(r"(?<![\w+])\+?\(?\d[\d ().-]{5,}\d(?![\w])")
_DATE_LIKE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}")
# a time of day with seconds (an ISO 8601 timestamp's): its fraction is no phone number
# ("…T21:56:19.407123456+00:00" held "19.407123456", which libphonenumber took for one)
_TIME_OF_DAY = re.compile(r"\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
TOKEN_ENTROPY = 4.0
# detect-secrets plugins used (regex-based, cheap); the others are either not secrets (IPs),
# found here on their whole span (JWT, private keys, keyword assignments, high-entropy
# strings: their plugins match a prefix or quoted strings only) or slow vendor patterns
_PLUGINS = ("AWS Access Key", "Azure Storage Account access key", "Basic Auth Credentials",
            "GitHub Token", "GitLab Token", "Mailchimp Access Key", "NPM tokens", "OpenAI Token",
            "PyPI Token", "SendGrid API Key", "Slack Token", "Square OAuth Secret",
            "Stripe Access Key", "Twilio API Key")


@dataclass(frozen=True, order=True)
class Finding:
    start: int
    end: int
    kind: str


@functools.lru_cache(maxsize=1)
def _vendor_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(kind, regex) from the chosen detect-secrets plugins (imported once)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    plugins: dict[str, Any] = get_mapping_from_secret_type_to_class()
    out: list[tuple[str, re.Pattern[str]]] = []
    for name in _PLUGINS:
        plugin = plugins[name]
        assert issubclass(plugin, RegexBasedDetector), name
        kind = ("aws_key" if name.startswith("AWS")
                else "password" if name.startswith("Basic Auth") else "api_key")
        patterns: Iterable[re.Pattern[str]] = plugin.denylist  # a class attribute
        out += [(kind, pattern) for pattern in patterns]
    return tuple(out)


def warm_up() -> None:
    """Import the detect-secrets plugins now (about a second) rather than on a first request."""
    _vendor_patterns()


def entropy(text: str) -> float:
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_SEPARATORS = re.compile(r"[/_.=+-]+")
# a word, a number, or a word numbered ("ADR003", "RFC0042", "k8s")
_WORDLIKE = re.compile(r"^(?:[A-Za-z]{1,32}|\d{1,12}|[A-Za-z]{1,8}\d{1,6}[A-Za-z]{0,3})$")
_A_WORD = re.compile(r"^[A-Za-z]{4,}$")


def _is_words(text: str) -> bool:
    """A path or a slug of words: three or more parts, each letters only, digits only or a
    word and its number, one a word of four letters at least
    ("docs/architecture/decisions/0021-give-fastly-CNAME-records-a-TTL-of-300", a branch
    "cisagov/za/1154-create-ADR-gconnpool", alphagov/gsp's
    "docs/architecture/adr/ADR003-container-orchestration"); a random token's parts mix
    letters and digits at random."""
    parts = [p for p in _SEPARATORS.split(text) if p]
    return len(parts) >= 3 and all(_WORDLIKE.match(p) for p in parts) \
        and any(_A_WORD.match(p) for p in parts)


def _is_token(text: str) -> bool:
    return (any(c.isupper() for c in text) and any(c.islower() for c in text)
            and any(c.isdigit() for c in text) and entropy(text) >= TOKEN_ENTROPY
            and not _is_words(text))


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def _numbers(text: str) -> Iterable[Finding]:
    for m in _SSN.finditer(text):
        if ssn.is_valid(_digits(m.group())):
            yield Finding(*m.span(), "ssn")
    for m in _NINO.finditer(text):
        if m.group()[:2] not in _NINO_BAD_PREFIXES:
            yield Finding(*m.span(), "nino")
    for m in _IBAN.finditer(text):
        if iban.is_valid(m.group()):
            yield Finding(*m.span(), "iban")
    for m in _CARD.finditer(text):
        digits = _digits(m.group())
        if 13 <= len(digits) <= 19 and luhn.is_valid(digits):
            yield Finding(*m.span(), "card")


def _phones(text: str) -> Iterable[Finding]:
    """libphonenumber on each candidate span only (it is the slow part of :func:`find`)."""
    times = [m.span() for m in _TIME_OF_DAY.finditer(text)] if ":" in text else []
    for candidate in _PHONE_CANDIDATE.finditer(text):
        span = candidate.group()
        if sum(c.isdigit() for c in span) < 7 or _DATE_LIKE.search(span):
            continue
        if any(a < candidate.end() and candidate.start() < b for a, b in times):
            continue
        matcher = phonenumbers.PhoneNumberMatcher(span, PHONE_REGION,
                                                  leniency=phonenumbers.Leniency.VALID)
        for match in matcher:
            yield Finding(candidate.start() + match.start, candidate.start() + match.end,
                          "phone")


def _secrets(text: str) -> Iterable[Finding]:
    for m in _PRIVATE_KEY.finditer(text):
        yield Finding(*m.span(), "private_key")
    for m in _JWT.finditer(text):
        yield Finding(*m.span(), "jwt")
    for m in _ASSIGNMENT.finditer(text):
        yield Finding(*m.span("value"), "password")
    for kind, pattern in _vendor_patterns():
        for m in pattern.finditer(text):
            yield Finding(*m.span(), kind)
    for m in _TOKEN.finditer(text):
        if _is_token(m.group()):
            yield Finding(*m.span(), "token")


_PRIORITY = {kind: i for i, kind in enumerate(
    ("private_key", "jwt", "aws_key", "api_key", "password", "email", "iban", "card", "ssn",
     "nino", "phone", "token"))}


def find(text: str, kinds: Iterable[str] = KINDS) -> list[Finding]:
    """Non-overlapping findings of ``kinds`` in ``text``, in text order. Where two overlap,
    the longer wins (then the more specific kind)."""
    if len(text) < MIN_LENGTH:
        return []
    wanted = frozenset(kinds)
    if len(text) <= MEMO_MAX_LENGTH:  # names, ids, labels repeat across answers
        return list(_find_memo(text, wanted))
    return _find(text, wanted)


MEMO_MAX_LENGTH = 256


@functools.lru_cache(maxsize=8192)
def _find_memo(text: str, wanted: frozenset[str]) -> tuple[Finding, ...]:
    return tuple(_find(text, wanted))


def _find(text: str, wanted: frozenset[str]) -> list[Finding]:
    found = [f for f in (*_secrets(text), *_numbers(text), *_phones(text),
                         *(Finding(*m.span(), "email") for m in _EMAIL.finditer(text)))
             if f.kind in wanted and f.end > f.start]
    found.sort(key=lambda f: (-(f.end - f.start), _PRIORITY[f.kind], f.start))
    kept: list[Finding] = []
    for f in found:
        if all(f.end <= k.start or f.start >= k.end for k in kept):
            kept.append(f)
    return sorted(kept)


def redact(text: str, kinds: Iterable[str] = KINDS) -> tuple[str, Counter[str]]:
    """``text`` with every finding replaced by ``[REDACTED:<kind>]``, and the counts."""
    findings = find(text, kinds)
    if not findings:
        return text, Counter()
    parts, last = [], 0
    for f in findings:
        parts += [text[last:f.start], PLACEHOLDER.format(kind=f.kind)]
        last = f.end
    parts.append(text[last:])
    return "".join(parts), Counter(f.kind for f in findings)


@functools.lru_cache(maxsize=8192)
def _redact_memo(text: str, kinds: frozenset[str]) -> tuple[str, tuple[tuple[str, int], ...]]:
    out, counts = redact(text, kinds)
    return out, tuple(sorted(counts.items()))


_SCALARS = frozenset({int, float, bool, type(None)})  # nothing to redact in them
# per set of kinds: strings (up to MEMO_MAX_LENGTH) known to hold none of them — most of an
# answer (ids, names, refs), so those cost one set lookup; forgotten all at once when full
_CLEAN: dict[frozenset[str], set[str]] = {}
MAX_CLEAN = 65_536
# keys whose values are structural (hashes, cache keys, the policy block itself), not text
NOT_TEXT_KEYS = frozenset({"bundle_hash", "cache", "policy", "request_id", "next_cursor",
                           "content_hash"})


# the same for longer texts (summaries, decisions) up to LONG_MAX_LENGTH, fewer of them
_CLEAN_LONG: dict[frozenset[str], set[str]] = {}
LONG_MAX_LENGTH = 8_192
MAX_CLEAN_LONG = 2_048  # at most ~16 MB of text per set of kinds


def _remember_clean_long(kinds: frozenset[str], value: str) -> None:
    clean = _CLEAN_LONG.setdefault(kinds, set())
    if len(clean) >= MAX_CLEAN_LONG:
        clean.clear()
    clean.add(value)


def _remember_clean(kinds: frozenset[str], value: str) -> None:
    clean = _CLEAN.setdefault(kinds, set())
    if len(clean) >= MAX_CLEAN:
        clean.clear()
    clean.add(value)


_NOTHING_CLEAN: frozenset[str] = frozenset()


@dataclass
class Redactor:
    """Redacts every string of a JSON-like value (dict keys are left alone) and keeps the
    counts per kind across calls."""

    kinds: frozenset[str] = frozenset(KINDS)
    counts: Counter[str] = field(default_factory=Counter)

    def text(self, value: str) -> str:
        if len(value) < MIN_LENGTH:
            return value
        clean = _CLEAN.get(self.kinds)
        if clean is not None and value in clean:
            return value
        if len(value) > MEMO_MAX_LENGTH:
            long_clean = _CLEAN_LONG.get(self.kinds)
            if long_clean is not None and value in long_clean:
                return value
            out, counts = redact(value, self.kinds)
            self.counts.update(counts)
            if not counts and len(value) <= LONG_MAX_LENGTH:  # summaries, ADR text: they
                _remember_clean_long(self.kinds, value)  # come back with every answer
            return out
        # names, ids and refs repeat across answers: remembered with their counts
        out, found = _redact_memo(value, frozenset(self.kinds))
        if found:
            self.counts.update(dict(found))
        else:
            _remember_clean(self.kinds, value)
        return out

    def walk(self, value: Any) -> Any:
        """``value`` with its strings redacted, copied only along the paths to the strings
        that changed: ``value`` itself when none did (most answers), and every dict or list
        that holds no changed string shared with it. The caller's value is never changed."""
        clean = _CLEAN.get(self.kinds) or _NOTHING_CLEAN
        long_clean = _CLEAN_LONG.get(self.kinds) or _NOTHING_CLEAN
        return _walk(self, value, clean, long_clean)

    def _rebuild(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: v if k in NOT_TEXT_KEYS else self._rebuild(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._rebuild(v) for v in value]
        return value

    def summary(self) -> dict[str, int]:
        return dict(sorted(self.counts.items()))


def _walk(r: Redactor, value: Any, clean: AbstractSet[str], long_clean: AbstractSet[str]
          ) -> Any:
    """``Redactor.walk``: ``value``, or a copy along the paths to the strings that changed."""
    kind = type(value)  # exact types first: every string of every answer comes here
    if kind is str:
        if len(value) < MIN_LENGTH or value in clean or value in long_clean:
            return value
        out = r.text(value)
        return value if out == value else out
    if kind in _SCALARS:
        return value
    if kind is dict or kind is list or kind is tuple:
        pairs = value.items() if kind is dict else enumerate(value)  # a list's keys: ints
        copy: Any = None
        for k, v in pairs:
            vk = type(v)
            if vk is str:  # known clean, or not text: decided here, without a call
                if len(v) < MIN_LENGTH or v in clean or v in long_clean or k in NOT_TEXT_KEYS:
                    continue
            elif vk in _SCALARS or k in NOT_TEXT_KEYS:
                continue
            new = _walk(r, v, clean, long_clean)
            if new is not v:
                if copy is None:
                    copy = dict(value) if kind is dict else list(value)
                copy[k] = new
        return value if copy is None else copy
    return r._rebuild(value)  # subclasses and other types: a copy, every string seen

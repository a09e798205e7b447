"""PII and secret redaction: each kind found (positive), look-alikes left alone (negative)."""

from __future__ import annotations

import pytest

from substrate.security.pii import KINDS, Redactor, entropy, find, redact

JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc\n-----END RSA PRIVATE KEY-----"

POSITIVE = [
    ("email", "write to alice.smith@example.co.uk today", "alice.smith@example.co.uk"),
    ("phone", "on-call: +44 20 7946 0958", "+44 20 7946 0958"),
    ("phone", "call (415) 555-2671 after hours", "(415) 555-2671"),
    ("ssn", "employee ssn 123-45-6789 on file", "123-45-6789"),
    ("nino", "NI number AB 12 34 56 C", "AB 12 34 56 C"),
    ("iban", "pay to GB82 WEST 1234 5698 7654 32 by Friday", "GB82 WEST 1234 5698 7654 32"),
    ("iban", "DE89370400440532013000", "DE89370400440532013000"),
    ("card", "card 4111 1111 1111 1111 expired", "4111 1111 1111 1111"),
    ("card", "amex 3782-822463-10005", "3782-822463-10005"),
    ("private_key", f"key:\n{PEM}\nend", PEM),
    ("jwt", f"Authorization: Bearer {JWT}", JWT),
    ("aws_key", "aws id AKIAIOSFODNN7EXAMPLE in config", "AKIAIOSFODNN7EXAMPLE"),
    ("api_key", "slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
     "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("api_key", "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("api_key", "gh 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",
     "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"),
    ("password", "db password=hunter2xyz;", "hunter2xyz"),
    ("password", 'client_secret: "Sup3r-Secret!"', "Sup3r-Secret!"),
    ("token", "session Zx9Qm2Lk8Pw3Rt7Yu1Io5Ap6Sd4Fg0HjKl end",
     "Zx9Qm2Lk8Pw3Rt7Yu1Io5Ap6Sd4Fg0HjKl"),
    # short letter-and-digit parts are no path of words (a numbered word reads as one only
    # beside a word of four letters at least)
    ("token", "key Zx9-Qm2Lk-Pw3R-Yu1Io-Ap6Sd-Fg0Hj-Kl7Mn end",
     "Zx9-Qm2Lk-Pw3R-Yu1Io-Ap6Sd-Fg0Hj-Kl7Mn"),
]

NEGATIVE = [
    ("email", "the service:checkout owner is @payments-team"),
    ("phone", "snapshot 2026-09-01T00:00:00Z, version 12345, 1,234,567 requests"),
    ("phone", "valid_from_ts 2026-11-23T21:56:19.407123456+00:00 (nanoseconds of a write)"),
    ("phone", "at 21:56:19.407123456Z and 09:15:02,2125550172"),
    ("ssn", "area 000-12-3456 and 666-12-3456 are never issued"),
    ("nino", "prefixes GB 12 34 56 A and QQ 12 34 56 C are not issued"),
    ("iban", "GB82 WEST 1234 5698 7654 33 fails mod-97"),
    ("card", "order 4111 1111 1111 1112 fails the Luhn check"),
    ("private_key", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----"),
    ("jwt", "eyJ is how base64 of '{\"' starts"),
    ("aws_key", "AKIA is the prefix of an access key id"),
    ("password", "the password policy says rotate every 90 days"),
    ("token", "sha256 3f786850e387550fdab836ed7e6dc881de23001b3f786850e387550fdab836ed"),
    ("token", "evidence git:5926e092:docs/adr/0001-use-grpc-between-services.md#L3-L9"),
    # a path or slug of words with capitals and digits (alphagov's ADR file, a branch name)
    ("token", "docs/architecture/decisions/0021-give-fastly-CNAME-records-a-TTL-of-300.md#L7"),
    ("token", "Merge pull request #1155 from cisagov/za/1154-create-ADR-gconnpool"),
    # a numbered word in a path (alphagov/gsp's ADR files): masked, it hid every ADR citation
    ("token", "docs/architecture/adr/ADR003-container-orchestration.md#L5@392bfc7"),
    ("token", "deploy/k8s/apis/CustomResourceDefinitions-for-Operators-v1.yaml"),
]


@pytest.mark.parametrize(("kind", "text", "secret"), POSITIVE)
def test_each_kind_is_redacted(kind: str, text: str, secret: str) -> None:
    out, counts = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert counts == {kind: 1}


@pytest.mark.parametrize(("kind", "text"), NEGATIVE)
def test_look_alikes_are_left_alone(kind: str, text: str) -> None:
    assert [f for f in find(text) if f.kind == kind] == []
    assert redact(text, [kind])[0] == text


def test_every_kind_has_a_positive_and_a_negative_example() -> None:
    assert {k for k, _, _ in POSITIVE} == set(KINDS)
    assert {k for k, _ in NEGATIVE} <= set(KINDS)


def test_only_the_requested_kinds() -> None:
    text = "mail bob@example.com, card 4111111111111111"
    out, counts = redact(text, ["card"])
    assert "bob@example.com" in out and counts == {"card": 1}


def test_overlaps_keep_the_longer_finding() -> None:
    out, counts = redact(f"token={JWT}")
    assert counts == {"jwt": 1} and JWT not in out


def test_redactor_walks_json_and_counts_across_values() -> None:
    r = Redactor()
    doc = {"answer": "mail a@example.com or b@example.org",
           "items": [{"summary": "ssn 123-45-6789"}, 7, None],
           "evidence_bundle": {"bundle_hash": "Zx9Qm2Lk8Pw3Rt7Yu1Io5Ap6Sd4Fg0HjKl"},
           "cache": {"key": "sr:{acme}:e:Zx9Qm2Lk8Pw3Rt7Yu1Io5Ap6Sd4Fg0HjKl"}}
    out = r.walk(doc)
    assert out["answer"] == "mail [REDACTED:email] or [REDACTED:email]"
    assert out["items"] == [{"summary": "ssn [REDACTED:ssn]"}, 7, None]
    assert out["evidence_bundle"] == doc["evidence_bundle"]  # structural, not text
    assert out["cache"] == doc["cache"]
    assert r.summary() == {"email": 2, "ssn": 1}


def test_entropy() -> None:
    assert entropy("aaaa") == 0
    assert entropy("abcd") == 2


def test_a_phone_number_beside_a_timestamp_is_still_found() -> None:
    out, counts = redact("at 2026-11-23T21:56:19.407123456Z call (415) 555-2671")
    assert counts == {"phone": 1} and "2026-11-23T21:56:19.407123456Z" in out

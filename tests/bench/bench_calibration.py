"""Calibration of the answer confidence (issue 8): does ``confidence.confidence`` of a /search
answer mean the probability that the answer is right?

Data: the devset question set (``tests/data/devset_qa``, 140 questions, gold read from the
repositories), one record per question with the confidence /search reported, the family the
router chose and whether the answer was right. "Right" is the issue's target: the exact answer
*and* correct evidence. The records come from a ``bench_devset_qa`` run
(``$SUBSTRATE_HOME/bench/devset_qa.json``, or ``--qa-json PATH``; ``--run`` replays and asks
anew). Optionally (``BENCH_CAL_NL=demo,boa,...``) the NL->Cypher execution-accuracy set
(``tests/questions``) adds its answers with the confidence the NL->Cypher answer carries.

Reported:

* reliability table: confidence bins (width 0.1) against the observed accuracy in each, with
  the count; expected calibration error (ECE, count-weighted |accuracy - mean confidence|);
  Brier score (mean squared error of confidence against 0/1 correctness); per family the
  mean confidence against the accuracy.
* the fit of the per-family priors of ``substrate/retrieval/calibration.py``: a family's
  accuracy is Laplace-smoothed ((right + 1) / (n + 2)); its factor is that accuracy over the
  family's mean reported confidence (every confidence path of a family is proportional to its
  prior, so ``PRIORS[family] * factor`` is the refit prior). To keep fitting data apart from
  what is reported, the questions are split in two folds by a stable hash of their id; what
  is fitted on one fold scores the other: the reported confidence as it is, the family's
  accuracy alone, and the reported confidence times the family's factor (out-of-fold Brier
  and ECE). The factors fitted on *all* questions are printed as the values to apply
  (in-sample by construction: the out-of-fold figure is the honest estimate).

Run: ``.substrate/venv/bin/python -m tests.bench.bench_calibration [--qa-json PATH | --run]``.
Writes ``$SUBSTRATE_HOME/bench/calibration.json`` and ``calibration.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from substrate.settings import Settings

BINS = 10


@dataclass(frozen=True)
class Record:
    qid: str
    kind: str  # the family the router chose (the calibration's prior key)
    confidence: float
    right: bool
    source: str  # devset_qa | nl_cypher


def fold(qid: str) -> int:
    """0 or 1, stable across runs (a hash of the question id)."""
    return hashlib.sha256(qid.encode()).digest()[0] % 2


def from_qa(figures: dict[str, Any]) -> list[Record]:
    out = []
    for q in figures.get("questions", []):
        if q.get("confidence") is None:
            continue
        out.append(Record(q["qid"], q.get("intent") or q["family"], float(q["confidence"]),
                          bool(q["right"] and q["evidence"]), "devset_qa"))
    return out


def from_nl(datasets: list[str]) -> list[Record]:
    """NL->Cypher answers (abstentions left out: no answer, no confidence to judge)."""
    from tests.bench.bench_nl_cypher import run_dataset

    settings = Settings.from_env()
    out = []
    for name in datasets:
        for o in run_dataset(settings, name):
            if o.status != "abstained" and hasattr(o, "confidence"):
                out.append(Record(f"{name}:{o.qid}", "nl_cypher", float(o.confidence),
                                  o.status == "right", "nl_cypher"))
    return out


def brier(pairs: list[tuple[float, bool]]) -> float:
    return round(sum((c - float(r)) ** 2 for c, r in pairs) / max(1, len(pairs)), 4)


def reliability(pairs: list[tuple[float, bool]]) -> tuple[list[dict[str, Any]], float]:
    """Rows per confidence bin and the expected calibration error."""
    rows, ece = [], 0.0
    for b in range(BINS):
        lo, hi = b / BINS, (b + 1) / BINS
        inside = [(c, r) for c, r in pairs if lo <= c < hi or (b == BINS - 1 and c == 1.0)]
        if not inside:
            continue
        conf = sum(c for c, _ in inside) / len(inside)
        acc = sum(r for _, r in inside) / len(inside)
        ece += len(inside) * abs(acc - conf)
        rows.append({"bin": f"{lo:.1f}-{hi:.1f}", "n": len(inside),
                     "mean_confidence": round(conf, 3), "accuracy": round(acc, 3)})
    return rows, round(ece / max(1, len(pairs)), 4)


def fit(records: list[Record]) -> dict[str, float]:
    """Per-family prior: the Laplace-smoothed share of right answers."""
    kinds: dict[str, list[bool]] = {}
    for r in records:
        kinds.setdefault(r.kind, []).append(r.right)
    return {k: round((sum(v) + 1) / (len(v) + 2), 3) for k, v in sorted(kinds.items())}


def fit_scale(records: list[Record]) -> dict[str, float]:
    """Per family, the factor that brings the mean reported confidence to the (smoothed)
    accuracy: the family's prior in ``calibration.PRIORS`` times this factor is the refit
    prior (the confidence of every path of a family is proportional to its prior)."""
    priors, out = fit(records), {}
    for kind, prior in priors.items():
        rows = [r.confidence for r in records if r.kind == kind]
        mean = sum(rows) / len(rows)
        out[kind] = round(prior / mean, 3) if mean > 0 else 1.0
    return out


def _clip(x: float) -> float:
    return max(0.0, min(1.0, x))


def out_of_fold(records: list[Record]) -> dict[str, Any]:
    """Fits on one fold scored on the other, both ways: the reported confidence as it is,
    the family's accuracy alone, and the reported confidence rescaled per family."""
    pairs: dict[str, list[tuple[float, bool]]] = {"reported": [], "family_prior": [],
                                                  "rescaled": []}
    for k in (0, 1):
        train = [r for r in records if fold(r.qid) != k]
        test = [r for r in records if fold(r.qid) == k]
        priors, overall = fit(train), (sum(r.right for r in train) + 1) / (len(train) + 2)
        scale = fit_scale(train)
        pairs["reported"] += [(r.confidence, r.right) for r in test]
        pairs["family_prior"] += [(priors.get(r.kind, overall), r.right) for r in test]
        pairs["rescaled"] += [(_clip(r.confidence * scale.get(r.kind, 1.0)), r.right)
                              for r in test]
    return {name: {"brier": brier(p), "ece": reliability(p)[1]} for name, p in pairs.items()}


def per_kind(records: list[Record]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for kind in sorted({r.kind for r in records}):
        rows = [r for r in records if r.kind == kind]
        out[kind] = {"n": len(rows),
                     "mean_confidence": round(sum(r.confidence for r in rows) / len(rows), 3),
                     "accuracy": round(sum(r.right for r in rows) / len(rows), 3),
                     "brier": brier([(r.confidence, r.right) for r in rows])}
    return out


def report(records: list[Record]) -> dict[str, Any]:
    pairs = [(r.confidence, r.right) for r in records]
    table, ece = reliability(pairs)
    return {"benchmark": "calibration", "answers": len(records),
            "sources": sorted({r.source for r in records}),
            "accuracy": round(sum(r.right for r in records) / max(1, len(records)), 3),
            "brier": brier(pairs), "ece": ece, "reliability": table,
            "per_kind": per_kind(records), "out_of_fold": out_of_fold(records),
            "fitted_priors_all_questions": fit(records),
            "fitted_scale_all_questions": fit_scale(records),
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds")}


def markdown(r: dict[str, Any]) -> str:
    text = (f"# Answer confidence calibration ({r['measured_at']})\n\n"
            f"{r['answers']} answers ({', '.join(r['sources'])}); right (exact + evidence) "
            f"{r['accuracy']:.0%}; Brier {r['brier']}; ECE {r['ece']}.\n\n"
            "| confidence | answers | mean confidence | accuracy |\n|---|---|---|---|\n")
    text += "".join(f"| {b['bin']} | {b['n']} | {b['mean_confidence']} | {b['accuracy']} |\n"
                    for b in r["reliability"])
    text += "\n| family | answers | mean confidence | accuracy | Brier |\n|---|---|---|---|---|\n"
    text += "".join(f"| {k} | {v['n']} | {v['mean_confidence']} | {v['accuracy']} | "
                    f"{v['brier']} |\n" for k, v in r["per_kind"].items())
    o = r["out_of_fold"]
    text += ("\nOut of fold (two folds by question id; fitted on one, scored on the other): "
             + "; ".join(f"{k} Brier {v['brier']} / ECE {v['ece']}" for k, v in o.items())
             + f".\n\nFitted on all questions (in-sample): accuracy per family "
             f"{r['fitted_priors_all_questions']}; factor per family "
             f"{r['fitted_scale_all_questions']}\n")
    return text


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--qa-json", type=Path, default=None)
    p.add_argument("--run", action="store_true", help="replay and ask the devset set anew")
    args = p.parse_args(argv if argv is not None else sys.argv[1:])
    settings = Settings.from_env()
    bench = settings.home / "bench"
    path = args.qa_json or bench / "devset_qa.json"
    if args.run or not path.exists():
        from tests.bench.bench_devset_qa import main as qa_main

        qa_main([])
        path = bench / "devset_qa.json"
    records = from_qa(json.loads(path.read_text()))
    nl = [d for d in os.environ.get("BENCH_CAL_NL", "").split(",") if d]
    records += from_nl(nl) if nl else []
    figures = report(records) | {"qa_json": str(path)}
    bench.mkdir(parents=True, exist_ok=True)
    (bench / "calibration.json").write_text(json.dumps(figures, indent=2) + "\n")
    (bench / "calibration.md").write_text(markdown(figures))
    print(markdown(figures))
    print(f"-> {bench / 'calibration.json'}")


if __name__ == "__main__":
    main()

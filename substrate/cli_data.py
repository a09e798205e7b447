"""Data commands of the ``substrate`` CLI: ingest, verification queue, merge, browser, ask."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from substrate.settings import Settings


def _writer(settings: Settings) -> Any:
    from substrate.db import neo4j_driver
    from substrate.embeddings import make_embedder
    from substrate.graph.writer import GraphWriter

    return GraphWriter(settings, neo4j_driver(settings), make_embedder(settings))


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (argparse exits 2 with one line)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def cmd_ingest(settings: Settings, args: argparse.Namespace) -> int:
    from substrate.observability.metrics import write_batch_metrics
    from substrate.observability.progress import Bar

    paths = [Path(p) for p in args.path]
    if args.kind == "git" and len(paths) != 1:
        print("error: ingest git takes one repository path")
        return 2
    writer = _writer(settings)
    unit = "line" if args.kind == "jsonl" else "commit"
    label = paths[0].name if len(paths) == 1 else f"{len(paths)} files"
    try:
        with Bar(f"ingest {label}", unit) as bar:
            if args.kind == "jsonl":
                from substrate.connectors.jsonl_ingest import (
                    BATCH_RECORDS,
                    JsonlFile,
                    ingest_jsonl_files,
                )

                results = ingest_jsonl_files(writer, [JsonlFile(p) for p in paths],
                                             batch_size=args.batch_size or BATCH_RECORDS,
                                             resume=not args.restart, progress=bar)
            else:
                from substrate.connectors.git_ingest import ingest_git

                results = ingest_git(writer, paths[0], history=args.history,
                                     since=args.since, until=args.until, every=args.every,
                                     progress=bar)
    finally:
        writer.driver.close()
        write_batch_metrics(settings.home, f"ingest-{args.kind}")
    made = [r.snapshot_version for r in results if r.snapshot_version]
    print(json.dumps({"batches": len(results), "snapshots": made,
                      "queued_for_verification": sum(r.queued for r in results)}))
    return 0


def cmd_queue(settings: Settings, args: argparse.Namespace) -> int:
    import psycopg

    from substrate.graph import review
    from substrate.graph import verification as vq

    if args.action == "list":
        with psycopg.connect(settings.postgres_dsn) as conn:
            items = vq.list_items(conn, settings.tenant, args.status)
        print(json.dumps(items, indent=2, default=str))
        return 0
    if args.id is None:
        print("error: approve/reject need an item id")
        return 2
    if args.action == "approve":
        writer = _writer(settings)
        try:
            out = review.approve(writer, settings.tenant, args.id, args.actor)
        finally:
            writer.driver.close()
    else:
        out = review.reject(settings.postgres_dsn, settings.tenant, args.id, args.actor)
    print(json.dumps(out))
    return 0


def cmd_merge(settings: Settings, args: argparse.Namespace) -> int:
    from substrate.graph.merge import merge_entities

    writer = _writer(settings)
    try:
        result = merge_entities(writer, settings.tenant, args.keep, args.merge, args.evidence,
                                args.actor)
    finally:
        writer.driver.close()
    print(json.dumps({"kept": args.keep, "merged": args.merge,
                      "snapshot_version": result.snapshot_version, "counts": result.counts}))
    return 0


def cmd_ask(settings: Settings, args: argparse.Namespace) -> int:
    from substrate.retrieval.ask import ask_and_print

    code: int = ask_and_print(settings, args.question, as_json=args.json, local=args.local)
    return code


def cmd_reembed(settings: Settings, args: argparse.Namespace) -> int:
    from substrate.graph.reembed import reembed
    from substrate.observability.progress import Bar

    writer = _writer(settings)
    try:
        with Bar("reembed", "vector") as bar:
            n = reembed(writer.driver, settings.postgres_dsn, settings.tenant, writer.embedder,
                        writer.embedder.model_id, progress=bar)
    finally:
        writer.driver.close()
    print(json.dumps({"reembedded": n, "model": writer.embedder.model_id}))
    return 0


def cmd_enrich(settings: Settings, args: argparse.Namespace) -> int:
    from substrate.connectors.enrich import enrich

    writer = _writer(settings)
    try:
        result = enrich(writer)
    finally:
        writer.driver.close()
    print(json.dumps({"snapshot": result.snapshot_version if result else None,
                      "queued_for_verification": result.queued if result else 0}))
    return 0


def cmd_browser(settings: Settings, args: argparse.Namespace) -> int:
    from substrate import browser

    if args.action == "export":
        print(browser.favorites_zip(Path(args.out) if args.out else browser.FAVORITES_ZIP))
        return 0
    if args.action == "guide":
        from substrate.browser_guide import guide_html, guide_url

        html = guide_html(guide_url(settings))
        if args.out:
            Path(args.out).write_text(html)
        print(args.out or html)
        return 0
    from substrate.cypher import CypherLibrary
    from substrate.db import neo4j_driver

    driver = neo4j_driver(settings)
    try:
        print(json.dumps(browser.install(driver, CypherLibrary.load()), indent=2))
    finally:
        driver.close()
    return 0


def add_data_commands(sub: Any) -> None:
    p = sub.add_parser("ingest", help="load a source into the graph")
    p.add_argument("kind", choices=["jsonl", "git"])
    p.add_argument("path", nargs="+",
                   help="jsonl: one or more files, imported in order under one hold of the "
                   "writers' lock; git: one repository")
    p.add_argument("--history", action="store_true", help="git: replay first-parent history")
    p.add_argument("--since", help="git: first commit date (ISO)")
    p.add_argument("--until", help="git: last commit date (ISO)")
    p.add_argument("--every", type=positive_int, default=1, help="git: every Nth commit")
    p.add_argument("--batch-size", type=positive_int, default=None,
                   help="jsonl: records per snapshot, 20000 by default (a batch too large "
                   "for one Neo4j transaction is committed in parts)")
    p.add_argument("--restart", action="store_true", help="jsonl: ignore the resume position")
    p.set_defaults(handler=cmd_ingest)
    p = sub.add_parser("queue", help="the verification queue: list | approve ID | reject ID")
    p.add_argument("action", choices=["list", "approve", "reject"])
    p.add_argument("id", nargs="?", type=int)
    p.add_argument("--status", default="pending")
    p.add_argument("--actor", default="cli")
    p.set_defaults(handler=cmd_queue)
    sub.add_parser("enrich", help="cross-document (and, with CHAT_URL, LLM) chunk edges"
                   ).set_defaults(handler=cmd_enrich)
    sub.add_parser("reembed", help="recompute every vector with the configured embedder"
                   ).set_defaults(handler=cmd_reembed)
    p = sub.add_parser("merge", help="merge entity MERGE into KEEP (needs --evidence)")
    p.add_argument("keep", help="ceid of the entity that stays, e.g. service:checkout")
    p.add_argument("merge", help="ceid of the entity merged into it (closed, becomes an alias)")
    p.add_argument("--evidence", default="", help="what proves they are one (required)")
    p.add_argument("--actor", default="cli")
    p.set_defaults(handler=cmd_merge)
    p = sub.add_parser("browser", help="Neo4j Browser: install the custom.substrate_* "
                       "procedures | export the saved-scripts archive | print the :play guide")
    p.add_argument("action", choices=["install", "export", "guide"])
    p.add_argument("--out", help="export: where to write the .zip (default: the shipped one); "
                                 "guide: where to write the HTML (default: print it)")
    p.set_defaults(handler=cmd_browser)
    p = sub.add_parser("ask", help="ask a question; prints answer, evidence and confidence")
    p.add_argument("question")
    p.add_argument("--json", action="store_true")
    p.add_argument("--local", action="store_true",
                   help="run the pipeline in-process even when the gateway is up")
    p.set_defaults(handler=cmd_ask)

"""Print the doctor's findings: one line each, problems with their fix; exit code 3 on any."""

from __future__ import annotations

import json
from collections.abc import Callable

from substrate.doctor.checks import Finding

NOT_HEALTHY = 3


def render(findings: list[Finding], as_json: bool, out: Callable[[str], None] = print) -> int:
    problems = [f for f in findings if not f.ok]
    if as_json:
        out(json.dumps({"ok": not problems, "findings": [f.to_dict() for f in findings]},
                       indent=2))
        return NOT_HEALTHY if problems else 0
    for f in findings:
        mark = "ok " if f.ok else "BAD"
        out(f"{mark} {f.area:11} {f.subject:22} {f.detail}")
        if not f.ok and f.fix:
            out(f"    fix: {f.fix}")
    out(f"{len(problems)} problem(s)" if problems else "no problems found")
    return NOT_HEALTHY if problems else 0

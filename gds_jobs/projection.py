"""The tenant's structural graph as of a snapshot version, projected into the GDS catalog.

The projection is a Cypher projection (``cypher/gds/project.cypher.j2``) run through
``gds.graph.project.cypher``: only nodes and relationships live at ``$v`` for the tenant and
visible at the clearance take part. HOSTS is turned round (host <- hosted service) so that
every projected relationship points from the dependent to what it depends on. Each projection
gets a unique name and is dropped when the ``with`` block ends, whatever happens inside.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from graphdatascience import Graph

from gds_jobs.runtime import JobContext
from substrate.errors import BadRequest, NotFound
from substrate.graph.ontology import load_ontology
from substrate.graph.records import slug
from substrate.retrieval.scope import ReadScope

STRUCTURAL_TYPES = ("CALLS", "DEPENDS_ON", "IMPORTS", "HOSTS", "OWNS")
DEPENDENCY_TYPES = ("CALLS", "DEPENDS_ON", "IMPORTS", "HOSTS")
STRUCTURAL_LABELS = ("Service", "Infrastructure", "Module", "Repository", "Team", "Developer")
GRAPH_PREFIX = "substrate-job"


def graph_name(job: str, scope: ReadScope) -> str:
    return f"{GRAPH_PREFIX}-{job}-{slug(scope.tenant)}-v{scope.version}-{uuid.uuid4().hex[:12]}"


def present(wanted: Sequence[str], available: Sequence[str]) -> list[str]:
    """``wanted`` in order, keeping those the projected graph has (GDS rejects unknown ones)."""
    return [x for x in wanted if x in available]


def _check_identifiers(labels: Sequence[str], types: Sequence[str]) -> None:
    ontology = load_ontology()
    bad = [x for x in labels if not ontology.has_label(x)]
    bad += [x for x in types if x not in STRUCTURAL_TYPES]
    if bad or not labels or not types:
        raise BadRequest("projection needs known labels and structural types", {"bad": bad})


@contextmanager
def projected(
    ctx: JobContext, scope: ReadScope, *, job: str, undirected: bool,
    labels: Sequence[str] = STRUCTURAL_LABELS, types: Sequence[str] = STRUCTURAL_TYPES,
    ceids: Sequence[str] | None = None, runs_on_only: bool = False,
) -> Iterator[Graph]:
    """Project the graph live at ``scope.version`` (only the nodes ``ceids`` when given;
    ``runs_on_only``: no HOSTS out of a Kubernetes namespace, which groups services but is not
    something they fail with); drop it on exit."""
    _check_identifiers(labels, types)
    name = graph_name(job, scope)
    subset = ceids is not None
    query = ctx.cypher.text("gds/project", labels=list(labels), types=list(types),
                            subset=subset, runs_on_only=runs_on_only)
    extra = {"ceids": list(ceids or [])} if subset else {}
    try:
        graph, _ = ctx.gds.graph.project.cypher(
            query, name=name, undirected=undirected, **scope.params(), **extra
        )
    except ValueError as exc:  # the client's answer to a projection of zero rows
        ctx.gds.graph.drop(name, fail_if_missing=False)
        raise NotFound(
            f"nothing to project for tenant {scope.tenant!r} at snapshot {scope.version}",
            {"tenant": scope.tenant, "snapshot_version": scope.version},
        ) from exc
    except BaseException:  # a failed or interrupted projection leaves no graph behind
        ctx.gds.graph.drop(name, fail_if_missing=False)
        raise
    try:
        yield graph
    finally:
        ctx.gds.graph.drop(name, fail_if_missing=False)

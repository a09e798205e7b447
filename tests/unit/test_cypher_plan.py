"""The plan check of /cypher (cypher_plan) on plans shaped like Neo4j 5.26's EXPLAIN output."""

from __future__ import annotations

from typing import Any

import pytest

from substrate.errors import BadRequest, Forbidden
from substrate.retrieval.cypher_plan import check_plan

NODE_N = ("n.tenant_id = $__tenant AND coalesce(n.classification, $autostring_0) = "
          "$__clearance[0] AND any(__i IN range($autoint_1, size(coalesce(cache[n.iv_from], "
          "$autolist_2)) - $autoint_3) WHERE cache[n.iv_from][__i] <= $__v < (n.iv_to)[__i])")


def op(kind: str, ids: list[str], details: str = "", *children: dict[str, Any],
       rows: float = 1.0) -> dict[str, Any]:
    return {"operatorType": f"{kind}@neo4j", "identifiers": ids,
            "args": {"Details": details, "EstimatedRows": rows}, "children": list(children)}


def test_a_scan_under_the_scope_filter_passes() -> None:
    plan = op("ProduceResults", ["n"], "n", op("Filter", ["n"], NODE_N,
                                               op("AllNodesScan", ["n"], "n")))
    check_plan(plan, "r")


def test_an_unfiltered_scan_is_refused() -> None:
    plan = op("ProduceResults", ["n"], "n", op("NodeByLabelScan", ["n"], "n:Service"))
    with pytest.raises(BadRequest) as info:
        check_plan(plan, "r")
    assert info.value.detail["variable"] == "n"


def test_a_filter_on_another_variable_does_not_cover() -> None:
    plan = op("ProduceResults", ["m"], "m",
              op("Filter", ["m"], NODE_N, op("AllNodesScan", ["m"], "m")))
    with pytest.raises(BadRequest):
        check_plan(plan, "r")


def test_an_unscoped_relationship_is_refused() -> None:
    expand = op("Expand(All)", ["n", "r", "m"], "(n)-[r]->(m)",
                op("Filter", ["n"], NODE_N, op("AllNodesScan", ["n"], "n")))
    plan = op("ProduceResults", ["m"], "m", op("Filter", ["n", "r", "m"],
                                               NODE_N.replace("n.", "m."), expand))
    with pytest.raises(BadRequest) as info:
        check_plan(plan, "r")
    assert info.value.detail["variable"] == "r"


def test_unknown_operators_introducing_variables_are_refused() -> None:
    plan = op("ProduceResults", ["x"], "x", op("NewFancyScan", ["x"], "x"))
    with pytest.raises(BadRequest):
        check_plan(plan, "r")


def test_count_store_procedures_and_big_cartesian_products_are_refused() -> None:
    with pytest.raises(BadRequest):
        check_plan(op("NodeCountFromCountStore", ["c"], "count( (:Service) )"), "r")
    with pytest.raises(BadRequest):
        check_plan(op("ProcedureCall", ["node"], "db.index.fulltext.queryNodes($q, $t)"), "r")
    check_plan(op("ProcedureCall", ["target"], "custom.substrate_retrieval_dependencies("
                  "$__tenant, $__v, $__clearance, $autostring_0) :: (target)"), "r")
    with pytest.raises(BadRequest):
        check_plan(op("CartesianProduct", [], "", rows=1e6), "r")


def test_a_write_plan_is_forbidden() -> None:
    with pytest.raises(Forbidden):
        check_plan(op("ProduceResults", [], ""), "rw")


def test_a_composite_unique_seek_on_the_tenant_covers_the_tenant_part() -> None:
    rest = NODE_N.split(" AND ", 1)[1].replace("n.", "s.").replace("[n", "[s").replace("(n", "(s")
    seek = op("NodeUniqueIndexSeek", ["s"], "UNIQUE s:Service(tenant_id, ceid) WHERE tenant_id "
              "= $__tenant AND ceid = $id, cache[s.tenant_id], cache[s.ceid]")
    check_plan(op("ProduceResults", ["s"], "s", op("Filter", ["s"], rest, seek)), "r")
    other = op("NodeUniqueIndexSeek", ["s"], "UNIQUE s:Service(ceid) WHERE ceid = $id")
    with pytest.raises(BadRequest):
        check_plan(op("ProduceResults", ["s"], "s", op("Filter", ["s"], rest, other)), "r")


def test_arguments_of_an_apply_are_not_introduced_by_the_inner_seek() -> None:
    rest = NODE_N
    lhs = op("Projection", ["ids"], "$ids AS ids")
    rhs = op("Filter", ["ids", "n"], rest, op("NodeIndexSeek", ["ids", "n"],
                                              "RANGE INDEX n:Entity(tenant_id) WHERE tenant_id "
                                              "= $__tenant"))
    check_plan(op("ProduceResults", ["n"], "n", op("Apply", ["ids", "n"], "", lhs, rhs)), "r")

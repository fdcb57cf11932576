"""Ranking rules of an index (spec 4.7, CONTRACT §6)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from fastapi import Response
from fastapi.concurrency import run_in_threadpool

from control_plane.access import IndexRead, IndexWrite
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.epochs import bump_after_commit
from control_plane.index.service import get_index
from control_plane.rule import repository, service
from control_plane.rule.matching import RuleSet, compile_rule, effects_of
from control_plane.rule.schemas import RuleIn, RuleList, RuleOrder, RuleOut, RuleTest, RuleTestOut
from control_plane.runtime import Runtime
from control_plane.search.profile_query import SearchRequest
from control_plane.search.service import Resolved, compute_answer, resolve_for_index
from control_plane.wire import Cursor, Limit, api_router, decode_int_cursor, encode_cursor

router = api_router(tags=["rules"])

BASE = "/projects/{project_id}/indices/{index_id}/rules"
ONE = BASE + "/{rule_id}"


@router.get(BASE, summary="List rules in position order", response_model=RuleList)
def list_rules(access: IndexRead, db: SessionDep, limit: Limit = 20, cursor: Cursor = None) -> Any:
    get_index(db, access, access.index_id)
    after = decode_int_cursor(cursor) if cursor else 0
    rows = repository.list_for_index(db, access.project_id, access.index_id, after, limit + 1)
    next_cursor = encode_cursor(str(rows[limit - 1].position)) if len(rows) > limit else None
    return {"items": [service.to_out(r) for r in rows[:limit]], "nextCursor": next_cursor}


@router.post(BASE, status_code=201, summary="Create a rule (at `position`, else last)", response_model=RuleOut)
def create_rule(body: RuleIn, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id, lock=True)
    rule = service.create(db, index, body)
    bump_after_commit(db, runtime.state, index.id)
    return service.to_out(rule)


@router.put(BASE + "/order", summary="Set the order of every rule (each listed once)", response_model=RuleList)
def order_rules(body: RuleOrder, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id, lock=True)
    rules = service.reorder(db, index, body.ids)
    bump_after_commit(db, runtime.state, index.id)
    return {"items": [service.to_out(r) for r in rules], "nextCursor": None}


def _test_setup(runtime: Runtime, access: Any, body: RuleTest) -> tuple[Resolved, RuleSet, SearchRequest]:
    request = SearchRequest(q=body.q, filters=body.filters, page=body.page, per_page=body.per_page,
                            profile_key=body.profile_key)
    with runtime.sessions() as db:
        index = get_index(db, access, access.index_id)
        saved = repository.all_for_index(db, index.id)
        draft = service.checked(body.rule, index) if body.rule is not None else None
        resolved = resolve_for_index(runtime, db, index, request)
    compiled = [compile_rule(r.id, r.name, r.enabled, r.position, r.body) for r in saved]
    if body.rule is not None and draft is not None:
        at = min(body.rule.position or len(compiled) + 1, len(compiled) + 1) - 1
        compiled.insert(at, compile_rule("draft", body.rule.name, body.rule.enabled, 0, draft))
    rules = RuleSet(replace(r, position=i) for i, r in enumerate(compiled, start=1))
    return resolved, rules, request


@router.post(BASE + "/test", summary="Which rules a query triggers and the hits they give (a draft `rule` too)",
             response_model=RuleTestOut, response_model_exclude_none=True)
async def test_rules(body: RuleTest, access: IndexRead, runtime: RuntimeDep) -> Any:
    resolved, rules, request = await run_in_threadpool(_test_setup, runtime, access, body)
    now = datetime.now(UTC)
    matched = rules.matching(body.q, body.filters)
    effects = effects_of([r for r in matched if r.active(now)])
    answer = await compute_answer(runtime, resolved, request, effects)
    return {
        "matchedRules": [{"id": r.id, "name": r.name, "enabled": r.enabled, "active": r.active(now)} for r in matched],
        "appliedRules": effects.applied,
        "hits": answer["hits"],
        "total": answer["total"],
        "redirect": answer.get("redirect"),
        "userData": answer.get("userData"),
    }


@router.get(ONE, summary="Get a rule", response_model=RuleOut)
def get_rule(rule_id: str, access: IndexRead, db: SessionDep) -> Any:
    index = get_index(db, access, access.index_id)
    return service.to_out(service.get(db, index.project_id, index.id, rule_id))


@router.put(ONE, summary="Replace a rule (`position` moves it)", response_model=RuleOut)
def update_rule(rule_id: str, body: RuleIn, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id, lock=True)
    rule = service.update(db, index, rule_id, body)
    bump_after_commit(db, runtime.state, index.id)
    return service.to_out(rule)


@router.delete(ONE, status_code=204, response_class=Response, summary="Delete a rule")
def delete_rule(rule_id: str, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Response:
    index = get_index(db, access, access.index_id, lock=True)
    service.delete(db, index, rule_id)
    bump_after_commit(db, runtime.state, index.id)
    return Response(status_code=204)

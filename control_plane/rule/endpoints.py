"""Ranking rules of an index (spec 4.7, CONTRACT §6). ``rules/test`` runs a search: it lives with the
search routes (``door.endpoints``), behind the one search door."""

from __future__ import annotations

from typing import Any

from fastapi import Response

from control_plane.access.labels import IndexRead, IndexWrite
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.index.service import get_index
from control_plane.rule import service
from control_plane.rule.schemas import RuleIn, RuleList, RuleOrder, RuleOut
from control_plane.wire import Cursor, Limit, api_router

router = api_router(tags=["rules"])

BASE = "/projects/{project_id}/indices/{index_id}/rules"
ONE = BASE + "/{rule_id}"


@router.get(BASE, summary="List rules in position order", response_model=RuleList)
def list_rules(access: IndexRead, db: SessionDep, limit: Limit = 20, cursor: Cursor = None) -> Any:
    get_index(db, access, access.index_id)
    rows, next_cursor = service.list_page(db, access.project_id, access.index_id, limit, cursor)
    return {"items": [service.to_out(r) for r in rows], "nextCursor": next_cursor}


@router.post(BASE, status_code=201, summary="Create a rule (at `position`, else last)", response_model=RuleOut)
def create_rule(body: RuleIn, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id, lock=True)
    rule = service.create(db, index, body)
    runtime.epochs.bump_after_commit(db, index.id)
    return service.to_out(rule)


@router.put(BASE + "/order", summary="Set the order of every rule (each listed once)", response_model=RuleList)
def order_rules(body: RuleOrder, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id, lock=True)
    rules = service.reorder(db, index, body.ids)
    runtime.epochs.bump_after_commit(db, index.id)
    return {"items": [service.to_out(r) for r in rules], "nextCursor": None}


@router.get(ONE, summary="Get a rule", response_model=RuleOut)
def get_rule(rule_id: str, access: IndexRead, db: SessionDep) -> Any:
    index = get_index(db, access, access.index_id)
    return service.to_out(service.get(db, index.project_id, index.id, rule_id))


@router.put(ONE, summary="Replace a rule (`position` moves it)", response_model=RuleOut)
def update_rule(rule_id: str, body: RuleIn, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id, lock=True)
    rule = service.update(db, index, rule_id, body)
    runtime.epochs.bump_after_commit(db, index.id)
    return service.to_out(rule)


@router.delete(ONE, status_code=204, response_class=Response, summary="Delete a rule")
def delete_rule(rule_id: str, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Response:
    index = get_index(db, access, access.index_id, lock=True)
    service.delete(db, index, rule_id)
    runtime.epochs.bump_after_commit(db, index.id)
    return Response(status_code=204)

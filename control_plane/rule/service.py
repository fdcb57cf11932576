"""Ranking rules of an index: validated, kept in a gap-free 1..n order, registered as field uses.

Like synonyms, every write locks the index row and moves ``indices.merch_version``; the endpoint
bumps the index epoch after the commit.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from control_plane.db import isoformat, utcnow
from control_plane.index import repository as indices
from control_plane.index.models import Index
from control_plane.index.service import plan_limits_for_project, quota_exceeded
from control_plane.rule import repository
from control_plane.rule.models import Rule
from control_plane.rule.schemas import RuleIn
from control_plane.rule.validation import rule_filter_uses, validate_rule
from control_plane.usage import register_usage_provider
from control_plane.wire import decode_int_cursor, encode_cursor
from shared.errors import not_found, validation
from shared.ids import new_id


def stored_body(body: RuleIn) -> dict[str, Any]:
    """What a rule keeps besides its name, switch and position (API field names)."""
    return body.model_dump(by_alias=True, mode="json", exclude={"name", "enabled", "position"}, exclude_none=False)


def to_out(rule: Rule) -> dict[str, Any]:
    body = rule.body
    out = {"id": rule.id, "name": rule.name, "enabled": rule.enabled, "position": rule.position,
           "conditions": body.get("conditions") or [], "validity": body.get("validity") or [],
           "consequence": body.get("consequence") or {},
           "createdAt": isoformat(rule.created_at), "updatedAt": isoformat(rule.updated_at)}
    if body.get("filters") is not None:
        out["filters"] = body["filters"]
    return out


def checked(body: RuleIn, index: Index) -> dict[str, Any]:
    stored = stored_body(body)
    validate_rule(body, stored, index.mapping or {})
    return stored


def get(db: Session, project_id: str, index_id: str, rule_id: str) -> Rule:
    rule = repository.get(db, project_id, index_id, rule_id)
    if rule is None:
        raise not_found("Rule")
    return rule


def create(db: Session, index: Index, body: RuleIn) -> Rule:
    stored = checked(body, index)
    count = repository.count(db, index.id)
    limit = plan_limits_for_project(db, index.project_id).max_rules_per_index
    if count >= limit:
        raise quota_exceeded(f"An index holds at most {limit} rules on this plan")
    position = min(body.position or count + 1, count + 1)
    repository.shift(db, index.id, position, None, +1)
    rule = Rule(id=new_id("rul"), project_id=index.project_id, index_id=index.id, name=body.name,
                enabled=body.enabled, position=position, body=stored)
    db.add(rule)
    indices.touch_merch(db, index.id)
    db.flush()
    return rule


def update(db: Session, index: Index, rule_id: str, body: RuleIn) -> Rule:
    rule = get(db, index.project_id, index.id, rule_id)
    stored = checked(body, index)
    if body.position is not None and body.position != rule.position:
        last = repository.count(db, index.id)
        target = min(body.position, last)
        if target < rule.position:
            repository.shift(db, index.id, target, rule.position - 1, +1)
        else:
            repository.shift(db, index.id, rule.position + 1, target, -1)
        rule.position = target
    rule.name, rule.enabled, rule.body = body.name, body.enabled, stored
    rule.updated_at = utcnow()
    indices.touch_merch(db, index.id)
    db.flush()
    return rule


def delete(db: Session, index: Index, rule_id: str) -> None:
    rule = get(db, index.project_id, index.id, rule_id)
    position = rule.position
    db.delete(rule)
    db.flush()
    repository.shift(db, index.id, position + 1, None, -1)
    indices.touch_merch(db, index.id)
    db.flush()


def reorder(db: Session, index: Index, ids: list[str]) -> list[Rule]:
    """``ids`` must name every rule of the index exactly once; positions become 1..n in that order."""
    rules = repository.all_for_index(db, index.id)
    known = {r.id: r for r in rules}
    faults: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, rule_id in enumerate(ids):
        if rule_id not in known:
            faults.append({"path": f"ids.{i}", "message": f"{rule_id!r} is not a rule of this index"})
        elif rule_id in seen:
            faults.append({"path": f"ids.{i}", "message": f"{rule_id!r} is listed twice"})
        seen.add(rule_id)
    missing = [r.id for r in rules if r.id not in seen]
    if missing:
        faults.append({"path": "ids", "message": f"every rule must be listed once; missing: {', '.join(missing[:20])}"})
    if faults:
        raise validation("The order must list every rule of the index exactly once", faults[:100])
    for position, rule_id in enumerate(ids, start=1):
        known[rule_id].position = position
    indices.touch_merch(db, index.id)
    db.flush()
    return sorted(rules, key=lambda r: r.position)


@register_usage_provider
def rule_uses(db: Session, index: Any) -> list[dict[str, Any]]:
    """Fields the index's rules filter on, for the usage registry (kind ``rule``)."""
    uses: list[dict[str, Any]] = []
    for rule in repository.all_for_index(db, index.id):
        for field, path in rule_filter_uses(rule.body):
            uses.append({"field": field, "kind": "rule", "id": rule.id, "name": rule.name, "path": path,
                         "needs": "filterable"})
    return uses


def list_page(db: Session, project_id: str, index_id: str, limit: int, cursor: str | None) -> tuple[list[Rule], str | None]:
    """One page of the index's Rule rows, and the cursor of the next page."""
    after = decode_int_cursor(cursor) if cursor else 0
    rows = repository.list_for_index(db, project_id, index_id, after, limit + 1)
    next_cursor = encode_cursor(str(rows[limit - 1].position)) if len(rows) > limit else None
    return rows[:limit], next_cursor

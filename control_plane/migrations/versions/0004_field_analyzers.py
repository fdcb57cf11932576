"""field analyzers: drop the analyzer settings that never had an effect

Until now a field's ``analyzer`` was accepted and ignored (every field used the index language).
It is now applied, and refused where it would do nothing: values other than a language or
``plain``, and on fields that are not searchable text/keyword fields. Stored mappings drop those
settings (they never changed anything), so every stored mapping still opens.

Revision ID: 0004
Revises: 0003
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

_APPLIED = {"en", "de", "fr", "es", "it", "nl", "pt", "ru", "sv", "plain"}
_SEARCHABLE_TYPES = {"text", "keyword", "keyword[]"}


def _cleaned(mapping: Any) -> Any:
    """The mapping without inert analyzers, or None when it has none."""
    if not isinstance(mapping, dict) or not isinstance(mapping.get("fields"), dict):
        return None
    fields = {}
    changed = False
    for name, spec in mapping["fields"].items():
        if isinstance(spec, dict) and "analyzer" in spec and not (
            spec["analyzer"] in _APPLIED and spec.get("type") in _SEARCHABLE_TYPES and spec.get("searchable") is True
        ):
            spec = {k: v for k, v in spec.items() if k != "analyzer"}
            changed = True
        fields[name] = spec
    return {**mapping, "fields": fields} if changed else None


def _fix(table: sa.TableClause, key: str, columns: tuple[str, ...], nested: str | None = None,
         where: Any = None) -> None:
    bind = op.get_bind()
    query = sa.select(table.c[key], *[table.c[c] for c in columns])
    if where is not None:
        query = query.where(where)
    for row in bind.execute(query).all():
        values = {}
        for column in columns:
            value = row._mapping[column]
            if nested is not None:
                inner = _cleaned(value.get(nested)) if isinstance(value, dict) else None
                if inner is not None:
                    values[column] = {**value, nested: inner}
            else:
                cleaned = _cleaned(value)
                if cleaned is not None:
                    values[column] = cleaned
        if values:
            bind.execute(sa.update(table).where(table.c[key] == row._mapping[key]).values(**values))


def upgrade() -> None:
    indices = sa.table("indices", sa.column("id", sa.String), sa.column("mapping", sa.JSON),
                       sa.column("serving_mapping", sa.JSON))
    sessions = sa.table("replace_sessions", sa.column("id", sa.String), sa.column("mapping", sa.JSON))
    tasks = sa.table("tasks", sa.column("pk", sa.BigInteger), sa.column("payload", sa.JSON),
                     sa.column("type", sa.String), sa.column("status", sa.String))
    _fix(indices, "id", ("mapping", "serving_mapping"))
    _fix(sessions, "id", ("mapping",))
    # only a mapping change yet to run carries a mapping to build
    _fix(tasks, "pk", ("payload",), nested="mapping",
         where=sa.and_(tasks.c.type == "mapping.update", tasks.c.status.in_(("enqueued", "processing"))))


def downgrade() -> None:
    pass  # the dropped settings had no effect

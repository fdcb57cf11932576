"""What a search asks of a vector field (CONTRACT §10): the profile's ``semantic`` setting with the
request's ``vector``, or ``similarTo`` (a document's own vector, read from the database here so that
every shard ranks by the same one), as the engine's :class:`~shared.contract.Semantic`."""

from __future__ import annotations

from typing import Any

from anyio import to_thread

from control_plane.document.service import get_document
from control_plane.runtime import Runtime
from control_plane.search.profile_query import SearchRequest
from control_plane.search.state import Resolved
from shared.contract import Semantic
from shared.errors import validation
from shared.semantic import dimensions_of, embed_text, is_builtin, is_vector, vector_value_fault


def _field_for_similar(resolved: Resolved, fields: dict[str, Any]) -> str:
    if resolved.settings.semantic is not None:
        return resolved.settings.semantic.field
    names = [name for name, spec in fields.items() if is_vector(spec)]
    if len(names) == 1:
        return names[0]
    why = "this index has no vector field" if not names else (
        f"the index has several vector fields ({', '.join(sorted(names))}): set the profile's semantic.field")
    raise validation("similarTo needs a vector field", [{"path": "similarTo", "message": why}])


async def _similar(runtime: Runtime, resolved: Resolved, body: SearchRequest, fields: dict[str, Any]) -> Semantic:
    doc_id = str(body.similar_to)
    if body.q.strip():
        raise validation("similarTo ranks by a document: leave q empty",
                         [{"path": "q", "message": "must be empty with similarTo"}])
    name = _field_for_similar(resolved, fields)
    spec = fields.get(name)
    if not is_vector(spec):
        raise validation("similarTo needs a vector field", [{"path": "similarTo", "message": f"{name} is not a vector field"}])
    assert spec is not None

    def read() -> dict[str, Any]:
        with runtime.sessions() as db:
            return get_document(db, resolved.index, doc_id)  # 404 when the index has no such document

    doc = await to_thread.run_sync(read)
    if is_builtin(spec):
        text = embed_text(doc, spec["embed"].get("from") or [])
        if text:
            return Semantic(name, 1.0, text=text)
    elif vector_value_fault(doc.get(name), dimensions_of(spec)) is None:
        return Semantic(name, 1.0, vector=tuple(float(x) for x in doc[name]))
    raise validation("The document has no vector to compare with",
                     [{"path": "similarTo", "message": f"document {doc_id!r} has no {name}"}])


async def semantic_of(runtime: Runtime, resolved: Resolved, body: SearchRequest, q: str) -> Semantic | None:
    """The vector side of a search, or None (the keyword search alone: no semantic setting, a
    ratio of 0, or nothing to compare with)."""
    mapping = resolved.index.serving_mapping or resolved.index.mapping
    fields: dict[str, Any] = dict(mapping.get("fields") or {})
    if body.similar_to is not None:
        return await _similar(runtime, resolved, body, fields)
    setting = resolved.settings.semantic
    spec = fields.get(setting.field) if setting is not None else None
    if setting is None or not is_vector(spec):
        if body.vector is not None:
            raise validation("This search has no vector field to compare a vector with",
                             [{"path": "vector", "message": "the profile has no semantic setting"}])
        return None
    assert spec is not None
    if body.vector is not None:
        dims = dimensions_of(spec)
        if len(body.vector) != dims:
            raise validation(f"{setting.field} holds vectors of {dims} numbers",
                             [{"path": "vector", "message": f"expected {dims} numbers, got {len(body.vector)}"}])
        return None if setting.ratio == 0 else Semantic(setting.field, setting.ratio, vector=tuple(body.vector))
    if setting.ratio == 0 or not is_builtin(spec) or not q.strip():
        return None
    return Semantic(setting.field, setting.ratio, text=q)

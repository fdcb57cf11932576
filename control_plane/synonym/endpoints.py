"""Synonyms of an index (spec 4.6, CONTRACT §6): changes apply to the next search, no reindex."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Query, Response

from control_plane.access import IndexRead, IndexWrite
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.epochs import bump_after_commit
from control_plane.index.service import get_index
from control_plane.synonym import repository, service
from control_plane.synonym.schemas import (
    ImportResult,
    SolrExport,
    SynonymImport,
    SynonymIn,
    SynonymList,
    SynonymOut,
)
from control_plane.wire import Cursor, Limit, api_router, decode_cursor, encode_cursor

router = api_router(tags=["synonyms"])

BASE = "/projects/{project_id}/indices/{index_id}/synonyms"
ONE = BASE + "/{synonym_id}"


@router.get(BASE, summary="List synonyms", response_model=SynonymList, response_model_exclude_none=True)
def list_synonyms(access: IndexRead, db: SessionDep, limit: Limit = 20, cursor: Cursor = None) -> Any:
    get_index(db, access, access.index_id)
    after = decode_cursor(cursor)[0] if cursor else None
    rows = repository.list_for_index(db, access.project_id, access.index_id, after, limit + 1)
    next_cursor = encode_cursor(rows[limit - 1].id) if len(rows) > limit else None
    return {"items": [service.to_out(r) for r in rows[:limit]], "nextCursor": next_cursor}


@router.post(BASE, status_code=201, summary="Create a synonym", response_model=SynonymOut,
             response_model_exclude_none=True)
def create_synonym(body: SynonymIn, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id, lock=True)
    row = service.create(db, index, body)
    bump_after_commit(db, runtime.state, index.id)
    return service.to_out(row)


@router.post(BASE + "/import", summary="Import synonyms (JSON items or Solr text; all or nothing)",
             response_model=ImportResult)
def import_synonyms(body: SynonymImport, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id, lock=True)
    imported, total = service.import_entries(db, index, items=body.items, text=body.solr, mode=body.mode)
    bump_after_commit(db, runtime.state, index.id)
    return {"imported": imported, "total": total, "mode": body.mode}


@router.get(BASE + "/export", summary="Export every synonym (?format=solr for Solr text)",
            response_model=SynonymList | SolrExport, response_model_exclude_none=True)
def export_synonyms(access: IndexRead, db: SessionDep,
                    format: Annotated[Literal["json", "solr"], Query()] = "json") -> Any:  # noqa: A002
    return service.export(db, get_index(db, access, access.index_id), format)


@router.get(ONE, summary="Get a synonym", response_model=SynonymOut, response_model_exclude_none=True)
def get_synonym(synonym_id: str, access: IndexRead, db: SessionDep) -> Any:
    index = get_index(db, access, access.index_id)
    return service.to_out(service.get(db, index.project_id, index.id, synonym_id))


@router.put(ONE, summary="Replace a synonym", response_model=SynonymOut, response_model_exclude_none=True)
def update_synonym(synonym_id: str, body: SynonymIn, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id, lock=True)
    row = service.update(db, index, synonym_id, body)
    bump_after_commit(db, runtime.state, index.id)
    return service.to_out(row)


@router.delete(ONE, status_code=204, response_class=Response, summary="Delete a synonym")
def delete_synonym(synonym_id: str, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Response:
    index = get_index(db, access, access.index_id, lock=True)
    service.delete(db, index, synonym_id)
    bump_after_commit(db, runtime.state, index.id)
    return Response(status_code=204)

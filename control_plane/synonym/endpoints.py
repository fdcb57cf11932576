"""Synonyms of an index (spec 4.6, CONTRACT §6): changes apply to the next search, no reindex."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Query, Response

from control_plane.access.labels import IndexRead, IndexWrite
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.index.service import get_index
from control_plane.synonym import service
from control_plane.synonym.schemas import (
    ImportResult,
    SolrExport,
    SynonymImport,
    SynonymIn,
    SynonymList,
    SynonymOut,
)
from control_plane.wire import Cursor, Limit, api_router

router = api_router(tags=["synonyms"])

BASE = "/projects/{project_id}/indices/{index_id}/synonyms"
ONE = BASE + "/{synonym_id}"


@router.get(BASE, summary="List synonyms", response_model=SynonymList)
def list_synonyms(access: IndexRead, db: SessionDep, limit: Limit = 20, cursor: Cursor = None) -> Any:
    get_index(db, access, access.index_id)
    rows, next_cursor = service.list_page(db, access.project_id, access.index_id, limit, cursor)
    return {"items": [service.to_out(r) for r in rows], "nextCursor": next_cursor}


@router.post(BASE, status_code=201, summary="Create a synonym", response_model=SynonymOut)
def create_synonym(body: SynonymIn, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id, lock=True)
    row = service.create(db, index, body)
    runtime.epochs.bump_after_commit(db, index.id)
    return service.to_out(row)


@router.post(BASE + "/import", summary="Import synonyms (JSON items or Solr text; all or nothing)",
             response_model=ImportResult)
def import_synonyms(body: SynonymImport, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id, lock=True)
    imported, total = service.import_entries(db, index, items=body.items, text=body.solr, mode=body.mode)
    runtime.epochs.bump_after_commit(db, index.id)
    return {"imported": imported, "total": total, "mode": body.mode}


@router.get(BASE + "/export", summary="Export every synonym (?format=solr for Solr text)",
            response_model=SynonymList | SolrExport)
def export_synonyms(access: IndexRead, db: SessionDep,
                    format: Annotated[Literal["json", "solr"], Query()] = "json") -> Any:  # noqa: A002
    return service.export(db, get_index(db, access, access.index_id), format)


@router.get(ONE, summary="Get a synonym", response_model=SynonymOut)
def get_synonym(synonym_id: str, access: IndexRead, db: SessionDep) -> Any:
    index = get_index(db, access, access.index_id)
    return service.to_out(service.get(db, index.project_id, index.id, synonym_id))


@router.put(ONE, summary="Replace a synonym", response_model=SynonymOut)
def update_synonym(synonym_id: str, body: SynonymIn, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id, lock=True)
    row = service.update(db, index, synonym_id, body)
    runtime.epochs.bump_after_commit(db, index.id)
    return service.to_out(row)


@router.delete(ONE, status_code=204, response_class=Response, summary="Delete a synonym")
def delete_synonym(synonym_id: str, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Response:
    index = get_index(db, access, access.index_id, lock=True)
    service.delete(db, index, synonym_id)
    runtime.epochs.bump_after_commit(db, index.id)
    return Response(status_code=204)

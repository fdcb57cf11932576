"""Document and replace-session routes (spec 4.3, CONTRACT §4)."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Body, Header, Response
from pydantic import BaseModel, ConfigDict, Field

from control_plane.access import IndexRead, IndexWrite
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.document import service
from control_plane.index.schemas import TaskAccepted
from control_plane.index.service import get_index
from control_plane.wire import Cursor, JSONBody, Limit

router = APIRouter(tags=["documents"])

INDEX = "/projects/{project_id}/indices/{index_id}"
IdempotencyKey = Annotated[
    str | None,
    Header(alias="Idempotency-Key", max_length=200, description="Same key and body within 24 h answer the first answer again"),
]
Documents = Annotated[
    list[Any],
    Body(description="A bare JSON array of at most 1000 documents, each with its id field"),
]
Ids = Annotated[list[Any], Body(description="A bare JSON array of document ids")]


class FlushOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(alias="taskId")
    previous_doc_count: int = Field(alias="previousDocCount")


class DocumentList(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    items: list[dict[str, Any]]
    next_cursor: str | None = Field(alias="nextCursor")


class SessionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mapping: dict[str, Any] | None = None


class SessionOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    id: str
    index_id: str = Field(alias="indexId")
    status: str
    document_count: int = Field(alias="documentCount")
    mapping: dict[str, Any] | None = None
    created_at: str = Field(alias="createdAt")
    expires_at: str = Field(alias="expiresAt")
    task_id: str | None = Field(alias="taskId")


class SessionUploadOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    received: int
    document_count: int = Field(alias="documentCount")


def _idempotent(db: Any, index_id: str, route: str, key: str | None, body: Any, run: Any) -> JSONBody:
    service.refuse_malformed_json(body)  # before the body is hashed: orjson refuses what it can't encode
    if not key:
        status, answer = run()
        return JSONBody(answer, status_code=status)
    digest = service.body_hash(orjson.dumps(body, option=orjson.OPT_SORT_KEYS))
    prior = service.idempotent_answer(db, index_id, route, key, digest)
    if prior is not None:
        return JSONBody(prior[1], status_code=prior[0])
    status, answer = run()
    service.remember_answer(db, index_id, route, key, digest, status, answer)
    return JSONBody(answer, status_code=status)


@router.post(INDEX + "/documents", status_code=202, summary="Add or replace documents", response_model=TaskAccepted)
def upload_documents(access: IndexWrite, db: SessionDep, runtime: RuntimeDep, body: Documents,
                     idempotency_key: IdempotencyKey = None) -> Any:
    index = get_index(db, access, access.index_id)
    max_bytes = runtime.settings.max_document_bytes

    def run() -> tuple[int, Any]:
        return 202, {"taskId": service.upload_documents(db, index, body, max_bytes=max_bytes).id}

    return _idempotent(db, index.id, "documents", idempotency_key, body, run)


@router.post(INDEX + "/documents/delete", status_code=202, summary="Delete documents by id", response_model=TaskAccepted)
def delete_documents(access: IndexWrite, db: SessionDep, body: Ids, idempotency_key: IdempotencyKey = None) -> Any:
    index = get_index(db, access, access.index_id)

    def run() -> tuple[int, Any]:
        return 202, {"taskId": service.delete_documents(db, index, body).id}

    return _idempotent(db, index.id, "documents.delete", idempotency_key, body, run)


@router.post(INDEX + "/documents/flush", status_code=202, summary="Delete every document", response_model=FlushOut)
def flush_documents(access: IndexWrite, db: SessionDep) -> Any:
    index = get_index(db, access, access.index_id)
    task, previous = service.flush_documents(db, index)
    return {"taskId": task.id, "previousDocCount": previous}


@router.get(INDEX + "/documents", summary="Page through stored documents", response_model=DocumentList)
def list_documents(access: IndexRead, db: SessionDep, limit: Limit = 20, cursor: Cursor = None) -> Any:
    index = get_index(db, access, access.index_id)
    items, next_cursor = service.list_documents(db, index, limit, cursor)
    return JSONBody({"items": items, "nextCursor": next_cursor})


@router.get(INDEX + "/documents/{doc_id:path}", summary="Get a stored document")
def get_document(doc_id: str, access: IndexRead, db: SessionDep) -> Any:
    index = get_index(db, access, access.index_id)
    return JSONBody(service.get_document(db, index, doc_id))


# --------------------------------------------------------------------------- replace sessions
@router.post(INDEX + "/replace-sessions", status_code=201, summary="Open a replace session", response_model=SessionOut)
def create_session(access: IndexWrite, db: SessionDep, body: Annotated[SessionCreate | None, Body()] = None) -> Any:
    index = get_index(db, access, access.index_id)
    session = service.create_session(db, index, body.mapping if body is not None else None)
    return service.session_view(session)


@router.get(INDEX + "/replace-sessions/{session_id}", summary="Get a replace session", response_model=SessionOut)
def get_session(session_id: str, access: IndexRead, db: SessionDep) -> Any:
    index = get_index(db, access, access.index_id)
    return service.session_view(service.get_session(db, index, session_id))


@router.post(INDEX + "/replace-sessions/{session_id}/documents", summary="Upload documents into a replace session",
             response_model=SessionUploadOut)
def upload_to_session(session_id: str, access: IndexWrite, db: SessionDep, runtime: RuntimeDep, body: Documents) -> Any:
    index = get_index(db, access, access.index_id)
    session = service.get_session(db, index, session_id, lock=True)
    return service.upload_to_session(db, index, session, body, max_bytes=runtime.settings.max_document_bytes)


@router.post(INDEX + "/replace-sessions/{session_id}/commit", status_code=202,
             summary="Swap the session's catalog in (a task)", response_model=TaskAccepted)
def commit_session(session_id: str, access: IndexWrite, db: SessionDep) -> Any:
    index = get_index(db, access, access.index_id, lock=True)
    session = service.get_session(db, index, session_id, lock=True)
    return {"taskId": service.commit_session(db, index, session).id}


@router.post(INDEX + "/replace-sessions/{session_id}/abort", status_code=204, response_class=Response,
             summary="Abort a replace session (the current catalog stays)")
def abort_session(session_id: str, access: IndexWrite, db: SessionDep) -> Response:
    index = get_index(db, access, access.index_id)
    service.abort_session(db, service.get_session(db, index, session_id, lock=True))
    return Response(status_code=204)

"""Document and replace-session routes (spec 4.3, CONTRACT §4)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, Header, Response
from pydantic import WithJsonSchema

from control_plane.access.labels import IndexRead, IndexWrite
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.document import service
from control_plane.document.schemas import DocumentList, FlushOut, SessionCreate, SessionOut, SessionUploadOut
from control_plane.document.service import MAX_DOCUMENTS, MAX_ID_LENGTH
from control_plane.index.schemas import TaskAccepted
from control_plane.index.service import get_index
from control_plane.wire import Cursor, JSONBody, Limit, api_router

router = api_router(tags=["documents"])

INDEX = "/projects/{project_id}/indices/{index_id}"
IdempotencyKey = Annotated[
    str | None,
    Header(alias="Idempotency-Key", max_length=200, description="Same key and body within 24 h answer the first answer again"),
]
# Bare arrays, checked item by item by the service (every fault named by its path, nothing applied);
# documented item by item here. More than 1000 items answer 413 PAYLOAD_TOO_LARGE.
Documents = Annotated[
    list[Any],
    Body(),
    WithJsonSchema({"description": "A bare JSON array of at most 1000 documents (more: 413), each with its id field",
                    "type": "array", "maxItems": MAX_DOCUMENTS,
                    "items": {"type": "object"}}),
]
Ids = Annotated[
    list[Any],
    Body(),
    WithJsonSchema({"description": "A bare JSON array of at most 1000 document ids (more: 413)",
                    "type": "array", "maxItems": MAX_DOCUMENTS, "items": {"anyOf": [
        {"type": "string", "minLength": 1, "maxLength": MAX_ID_LENGTH, "pattern": r"\S"}, {"type": "integer"}]}}),
]


def _accepted(task_id: str) -> tuple[int, Any]:
    return 202, TaskAccepted(task_id=task_id).model_dump(by_alias=True)


@router.post(INDEX + "/documents", status_code=202, summary="Add or replace documents", response_model=TaskAccepted,
             description="Add or replace by id; the task succeeds when search reflects the upload. Into an index "
             "with a dynamic mapping (one created without a mapping), new top-level fields are added to the mapping "
             "(the task's details.fieldsAdded) and a value of the wrong type for its field is reported in "
             "details.conflicts instead of refused.")
def upload_documents(access: IndexWrite, db: SessionDep, runtime: RuntimeDep, body: Documents,
                     idempotency_key: IdempotencyKey = None) -> JSONBody:
    index = get_index(db, access, access.index_id)
    max_bytes = runtime.settings.max_document_bytes

    def run() -> tuple[int, Any]:
        return _accepted(service.upload_documents(db, index, body, max_bytes=max_bytes).id)

    status, answer = service.idempotent(db, index.id, "documents", idempotency_key, body, run)
    return JSONBody(answer, status_code=status)


@router.post(INDEX + "/documents/delete", status_code=202, summary="Delete documents by id", response_model=TaskAccepted)
def delete_documents(access: IndexWrite, db: SessionDep, body: Ids, idempotency_key: IdempotencyKey = None) -> JSONBody:
    index = get_index(db, access, access.index_id)

    def run() -> tuple[int, Any]:
        return _accepted(service.delete_documents(db, index, body).id)

    status, answer = service.idempotent(db, index.id, "documents.delete", idempotency_key, body, run)
    return JSONBody(answer, status_code=status)


@router.post(INDEX + "/documents/flush", status_code=202, summary="Delete every document")
def flush_documents(access: IndexWrite, db: SessionDep) -> FlushOut:
    index = get_index(db, access, access.index_id)
    task, previous = service.flush_documents(db, index)
    return FlushOut(task_id=task.id, previous_doc_count=previous)


@router.get(INDEX + "/documents", summary="Page through stored documents", response_model=DocumentList)
def list_documents(access: IndexRead, db: SessionDep, limit: Limit = 20, cursor: Cursor = None) -> JSONBody:
    index = get_index(db, access, access.index_id)
    items, next_cursor = service.list_documents(db, index, limit, cursor)
    # The documents go out as stored, encoded by orjson: several times faster on a full page than
    # a DocumentList through pydantic's serializer (which walks every value typed Any).
    return JSONBody({"items": items, "nextCursor": next_cursor})


@router.get(INDEX + "/documents/{doc_id:path}", summary="Get a stored document", response_model=dict[str, Any],
            description="The ids `delete` and `flush` name the routes of those names here (a 405 for GET): "
            "such a document is listed, searched and deleted as any other.")
def get_document(doc_id: str, access: IndexRead, db: SessionDep) -> Any:
    index = get_index(db, access, access.index_id)
    return JSONBody(service.get_document(db, index, doc_id))


# --------------------------------------------------------------------------- replace sessions
@router.post(INDEX + "/replace-sessions", status_code=201, summary="Open a replace session")
def create_session(access: IndexWrite, db: SessionDep, body: Annotated[SessionCreate | None, Body()] = None) -> SessionOut:
    index = get_index(db, access, access.index_id)
    session = service.create_session(db, index, body.mapping if body is not None else None)
    return SessionOut.of(session)


@router.get(INDEX + "/replace-sessions/{session_id}", summary="Get a replace session")
def get_session(session_id: str, access: IndexRead, db: SessionDep) -> SessionOut:
    index = get_index(db, access, access.index_id)
    return SessionOut.of(service.get_session(db, index, session_id))


@router.post(INDEX + "/replace-sessions/{session_id}/documents", summary="Upload documents into a replace session",
             response_model_exclude_none=True)
def upload_to_session(session_id: str, access: IndexWrite, db: SessionDep, runtime: RuntimeDep,
                      body: Documents) -> SessionUploadOut:
    index = get_index(db, access, access.index_id)
    session = service.get_session(db, index, session_id, lock=True)
    report: dict[str, Any] = {}
    session = service.upload_to_session(db, index, session, body, max_bytes=runtime.settings.max_document_bytes,
                                        report=report)
    return SessionUploadOut.model_validate({"received": len(body), "documentCount": session.document_count, **report})


@router.post(INDEX + "/replace-sessions/{session_id}/commit", status_code=202,
             summary="Swap the session's catalog in (a task)")
def commit_session(session_id: str, access: IndexWrite, db: SessionDep) -> TaskAccepted:
    index = get_index(db, access, access.index_id, lock=True)
    session = service.get_session(db, index, session_id, lock=True)
    return TaskAccepted(task_id=service.commit_session(db, index, session).id)


@router.post(INDEX + "/replace-sessions/{session_id}/abort", status_code=204, response_class=Response,
             summary="Abort a replace session (the current catalog stays)")
def abort_session(session_id: str, access: IndexWrite, db: SessionDep) -> Response:
    index = get_index(db, access, access.index_id)
    service.abort_session(db, service.get_session(db, index, session_id, lock=True))
    return Response(status_code=204)

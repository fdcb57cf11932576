"""Request-level dependencies: the runtime and the one-transaction-per-request session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from control_plane.db import session_scope
from control_plane.runtime import Runtime


async def get_runtime(request: Request) -> Runtime:
    """``async`` so FastAPI calls it inline: a plain ``def`` would cost a thread-pool hop per request."""
    return request.app.state.runtime  # type: ignore[no-any-return]


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def get_db(runtime: RuntimeDep) -> Iterator[Session]:
    yield from session_scope(runtime.sessions)


# ``scope="function"``: the transaction commits when the endpoint returns, before the answer is sent,
# so a client acting on an answer always finds its write; a commit that fails answers an error
# instead of the success status. (The default scope would commit after the response had gone out.)
SessionDep = Annotated[Session, Depends(get_db, scope="function")]


def client_ip(request: Request) -> str:
    return request.client.host if request.client else "unknown"

"""Status and probes (spec 4.12): ``GET /v1/status`` and the page at ``/status`` (the four services,
see :mod:`.checks` for the thresholds and :mod:`.service` for the shared 15 s answer), ``/health``
while the process runs, ``/ready`` when it can serve search."""

from __future__ import annotations

from typing import Literal

from fastapi import Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel

from control_plane.db import ping
from control_plane.deps import RuntimeDep, client_ip
from control_plane.status.page import PAGE_HEADERS, render
from control_plane.status.service import current_status
from control_plane.wire import JSONBody, api_router

router = api_router()


class Probe(BaseModel):
    """A probe's body holds ``status`` and nothing else (spec 4.12)."""

    status: str


@router.get("/health", tags=["status"], response_model=Probe)
def health() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/ready",
    tags=["status"],
    response_model=Probe,
    responses={503: {"model": Probe, "description": "This instance cannot serve search"}},
)
def ready(runtime: RuntimeDep) -> JSONBody:
    if runtime_ready(runtime):
        return JSONBody({"status": "ready"})
    return JSONBody({"status": "unavailable"}, status_code=503)


State = Literal["operational", "degraded", "down"]


class ServiceState(BaseModel):
    name: Literal["search", "indexing", "dashboard", "mcp"]
    state: State


class StatusAnswer(BaseModel):
    status: State
    services: list[ServiceState]
    checkedAt: str  # noqa: N815 - the wire name


@router.get(
    "/v1/status",
    tags=["status"],
    response_model=StatusAnswer,
    summary="The state of search, indexing, the dashboard and MCP (anyone; 200 whatever the state)",
    responses={429: {"description": "RATE_LIMITED: too many calls from this address"}},
)
async def status(request: Request, runtime: RuntimeDep) -> JSONBody:
    runtime.limiter.hit(runtime.settings.status_limit_per_ip, "status-ip", client_ip(request))
    return JSONBody(await current_status(runtime))


@router.get("/status", tags=["status"], response_class=HTMLResponse, include_in_schema=False)
async def status_page(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    runtime.limiter.hit(runtime.settings.status_limit_per_ip, "status-ip", client_ip(request))
    return HTMLResponse(render(await current_status(runtime)), headers=PAGE_HEADERS)


def runtime_ready(runtime: RuntimeDep) -> bool:
    try:
        ping(runtime.engine)
    except Exception:  # noqa: BLE001 - any database failure means not ready
        return False
    return all(check() for check in runtime.readiness_checks)

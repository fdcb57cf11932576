"""Infrastructure probes (spec 4.12): ``/health`` while the process runs, ``/ready`` when it can serve search."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel
from sqlalchemy import text

from control_plane.deps import RuntimeDep
from control_plane.wire import JSONBody

router = APIRouter()


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


def runtime_ready(runtime: RuntimeDep) -> bool:
    try:
        with runtime.engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception:  # noqa: BLE001 - any database failure means not ready
        return False
    checks = runtime.extras.get("readiness_checks", [])
    return all(check() for check in checks)

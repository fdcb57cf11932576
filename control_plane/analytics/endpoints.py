"""Search analytics (spec 4.9, CONTRACT §6). — routes."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Annotated, Any, Literal

from fastapi import Query
from pydantic.config import JsonDict

from control_plane.access.labels import IndexRead
from control_plane.analytics import service
from control_plane.analytics.schemas import AnalyticsOut
from control_plane.analytics.store import today
from control_plane.deps import SessionDep
from control_plane.index.service import get_index
from control_plane.wire import JSONBody, api_router
from shared.errors import validation

router = api_router(tags=["analytics"])

DEFAULT_DAYS = 30
MAX_DAYS = 366
#: the days a report may name: nothing is recorded before 2000, and a day past 2099 is a typo (the
#: extremes, 0001-01-01 and 9999-12-31, once overflowed the date arithmetic into a 500)
FIRST_DAY = date(2000, 1, 1)
LAST_DAY = date(2099, 12, 31)
DAY: JsonDict = {"format": "date", "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
                 "description": f"{FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()}"}


def _day(value: str | None, name: str) -> date | None:
    if value is None:
        return None
    try:
        if len(value) != 10:
            raise ValueError(value)
        day = date.fromisoformat(value)
    except ValueError:
        raise validation("Dates are YYYY-MM-DD", [{"path": name, "message": "expected a date YYYY-MM-DD"}]) from None
    if not FIRST_DAY <= day <= LAST_DAY:
        raise validation(f"Dates are from {FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()}",
                         [{"path": name, "message": f"must be from {FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()}"}])
    return day


@router.get(
    "/projects/{project_id}/indices/{index_id}/analytics",
    summary="Search analytics of an index: totals, top and no-result queries, clicks, the daily series",
    response_model=AnalyticsOut,
)
def get_analytics(
    access: IndexRead,
    db: SessionDep,
    from_: Annotated[str | None, Query(alias="from", description="First day, YYYY-MM-DD (UTC)",
                                       json_schema_extra=DAY)] = None,
    to: Annotated[str | None, Query(description="Last day, YYYY-MM-DD (UTC), included; default today",
                                    json_schema_extra=DAY)] = None,
    interval: Annotated[Literal["day"], Query(description="Only `day`")] = "day",
    limit: Annotated[int, Query(ge=1, le=1000, description="Entries in each top list")] = 20,
) -> Any:
    """Dates are inclusive UTC days; with none given, the last 30 days up to today."""
    get_index(db, access, access.index_id)
    end = _day(to, "to") or today()
    start = _day(from_, "from") or end - timedelta(days=DEFAULT_DAYS - 1)
    if start > end:
        raise validation("`from` is after `to`", [{"path": "from", "message": "must not be after to"}])
    if (end - start).days + 1 > MAX_DAYS:
        raise validation(f"At most {MAX_DAYS} days at once", [{"path": "from", "message": f"at most {MAX_DAYS} days before to"}])
    return JSONBody(service.report(db, access.index_id, start, end, limit))

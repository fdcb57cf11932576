"""Reading the analytics store: the ``GET analytics`` report (CONTRACT §6) and popular queries
(autocomplete's source).

Rates: ``clickThroughRate`` is clicks per search and ``conversionRate`` conversions per search,
each capped at 1 — no row is kept per search, so a search clicked twice counts two clicks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from control_plane.analytics.models import DocumentDay, IndexDay, QueryDay
from control_plane.analytics.store import today


@dataclass(frozen=True)
class PopularQuery:
    query: str  # normalized (lower case, single spaces)
    searches: int
    searches_with_results: int
    clicks: int


def popular_queries(db: Session, index_id: str, *, days: int, min_searches: int, limit: int = 1000) -> list[PopularQuery]:
    """Non-empty queries searched at least ``min_searches`` times in the last ``days`` days (today
    included), most popular first: by searches that found results plus clicks, then searches."""
    since = today() - timedelta(days=max(1, days) - 1)
    searches = func.sum(QueryDay.searches)
    with_results = func.sum(QueryDay.searches - QueryDay.no_results)
    clicks = func.sum(QueryDay.clicks)
    rows = db.execute(
        select(func.max(QueryDay.query), searches, with_results, clicks)
        .where(QueryDay.index_id == index_id, QueryDay.day >= since)
        .group_by(QueryDay.query_hash)
        .having(searches >= max(1, min_searches), func.max(QueryDay.query) != "")
        .order_by((with_results + clicks).desc(), searches.desc(), func.max(QueryDay.query))
        .limit(limit)
    ).all()
    return [PopularQuery(query=r[0], searches=int(r[1]), searches_with_results=int(r[2]), clicks=int(r[3]))
            for r in rows]


def _rate(part: int, whole: int) -> float:
    return round(min(1.0, part / whole), 4) if whole else 0.0


def report(db: Session, index_id: str, start: date, end: date, limit: int = 20) -> dict[str, Any]:
    """The analytics of one index between two UTC days (both included)."""
    in_range = (QueryDay.index_id == index_id, QueryDay.day >= start, QueryDay.day <= end)
    totals = db.execute(
        select(func.coalesce(func.sum(QueryDay.searches), 0), func.coalesce(func.sum(QueryDay.no_results), 0),
               func.coalesce(func.sum(QueryDay.clicks), 0), func.coalesce(func.sum(QueryDay.conversions), 0),
               func.coalesce(func.sum(QueryDay.positioned_clicks), 0), func.coalesce(func.sum(QueryDay.position_sum), 0))
        .where(*in_range)
    ).one()
    searches, no_results, clicks, conversions, positioned, position_sum = (int(v) for v in totals)
    suggests = int(db.scalar(
        select(func.coalesce(func.sum(IndexDay.suggests), 0))
        .where(IndexDay.index_id == index_id, IndexDay.day >= start, IndexDay.day <= end)) or 0)

    q_searches = func.sum(QueryDay.searches)
    top = db.execute(
        select(func.max(QueryDay.query), q_searches, func.sum(QueryDay.hits), func.sum(QueryDay.clicks))
        .where(*in_range).group_by(QueryDay.query_hash).having(q_searches > 0)
        .order_by(q_searches.desc(), func.max(QueryDay.query)).limit(limit)
    ).all()
    q_none = func.sum(QueryDay.no_results)
    none = db.execute(
        select(func.max(QueryDay.query), q_none)
        .where(*in_range).group_by(QueryDay.query_hash).having(q_none > 0)
        .order_by(q_none.desc(), func.max(QueryDay.query)).limit(limit)
    ).all()
    d_clicks, d_conversions = func.sum(DocumentDay.clicks), func.sum(DocumentDay.conversions)
    clicked = db.execute(
        select(DocumentDay.document_id, d_clicks, d_conversions)
        .where(DocumentDay.index_id == index_id, DocumentDay.day >= start, DocumentDay.day <= end)
        .group_by(DocumentDay.document_id)
        .order_by(d_clicks.desc(), d_conversions.desc(), DocumentDay.document_id).limit(limit)
    ).all()
    by_day = {
        row[0]: (int(row[1]), int(row[2]))
        for row in db.execute(
            select(QueryDay.day, func.sum(QueryDay.searches), func.sum(QueryDay.no_results))
            .where(*in_range).group_by(QueryDay.day)
        )
    }
    series = []
    day = start
    while day <= end:
        day_searches, day_none = by_day.get(day, (0, 0))
        series.append({"date": day.isoformat(), "searches": day_searches, "noResultSearches": day_none})
        day += timedelta(days=1)
    return {
        "from": start.isoformat(),
        "to": end.isoformat(),
        "interval": "day",
        "totals": {
            "searches": searches,
            "suggests": suggests,
            "noResultSearches": no_results,
            "noResultRate": _rate(no_results, searches),
            "clicks": clicks,
            "conversions": conversions,
            "clickThroughRate": _rate(clicks, searches),
            "conversionRate": _rate(conversions, searches),
            "averageClickPosition": round(position_sum / positioned, 2) if positioned else None,
        },
        "topQueries": [
            {"query": r[0], "count": int(r[1]), "avgHits": round(int(r[2]) / int(r[1]), 2),
             "clickThroughRate": _rate(int(r[3]), int(r[1]))}
            for r in top
        ],
        "noResultQueries": [{"query": r[0], "count": int(r[1])} for r in none],
        "topClicked": [{"documentId": r[0], "clicks": int(r[1]), "conversions": int(r[2])} for r in clicked],
        "series": series,
    }

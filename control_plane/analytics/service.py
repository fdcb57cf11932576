"""Reading the analytics store: the ``GET analytics`` report (CONTRACT §6) and popular queries
(autocomplete's source).

Rates: ``clickThroughRate`` is clicks per search and ``conversionRate`` conversions per search,
each capped at 1 — no row is kept per search, so a search clicked on two hits counts two clicks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from sqlalchemy.orm import Session

from control_plane.analytics import repository
from control_plane.analytics.store import client_count, today
from control_plane.db import read_snapshot


@dataclass(frozen=True)
class PopularQuery:
    query: str  # normalized (lower case, single spaces)
    searches: int
    searches_with_results: int
    clicks: int
    clients: int  # distinct clients seen (a lower bound: two clients may share a bit)


def popular_queries(db: Session, index_id: str, *, days: int, min_searches: int, min_clients: int = 1,
                    limit: int = 1000) -> list[PopularQuery]:
    """Non-empty queries searched at least ``min_searches`` times by at least ``min_clients``
    distinct clients in the last ``days`` days (today included), most popular first: by searches
    that found results plus clicks, then searches."""
    since = today() - timedelta(days=max(1, days) - 1)
    rows = repository.popular_rows(db, index_id, since, min_searches, limit)
    sets = repository.client_sets(db, index_id, since, [r[4] for r in rows]) if rows else {}
    found = [PopularQuery(query=r[0], searches=int(r[1]), searches_with_results=int(r[2]), clicks=int(r[3]),
                          clients=client_count(sets.get(r[4], 0))) for r in rows]
    return [pq for pq in found if pq.clients >= min_clients]


def _rate(part: int, whole: int) -> float:
    return round(min(1.0, part / whole), 4) if whole else 0.0


def report(db: Session, index_id: str, start: date, end: date, limit: int = 20) -> dict[str, Any]:
    """The analytics of one index between two UTC days (both included)."""
    # one snapshot: a recorder's write committing between two reads once gave a report whose totals
    # counted searches its top queries did not show
    read_snapshot(db)
    top = repository.top_queries(db, index_id, start, end, limit)
    none = repository.no_result_queries(db, index_id, start, end, limit)
    clicked = repository.top_clicked(db, index_id, start, end, limit)
    by_day = repository.daily(db, index_id, start, end)
    searches, no_results, clicks, conversions, positioned, position_sum, suggests = \
        repository.totals(db, index_id, start, end)
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

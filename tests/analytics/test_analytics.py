"""GET analytics: every search counted once (secret, storefront, cached), aggregated per
normalized query; suggests; the daily series; retention; tenancy; parameters."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from control_plane.analytics import repository, store
from control_plane.analytics.maintenance import purge_analytics
from control_plane.analytics.models import QueryDay
from control_plane.analytics.service import popular_queries
from tests.analytics.helpers import ORIGIN, Shop
from tests.factories import bearer, make_key


def _record(shop: Shop, index_id: str, days_ago: int, q: str, total: int, times: int = 1) -> None:
    """Dated searches through the store's API (no waiting for days to pass)."""
    aggregate = store.Aggregate()
    for _ in range(times):
        aggregate.add_search(index_id, store.today() - timedelta(days=days_ago), q, total)
    with shop.app.state.runtime.sessions.begin() as db:
        repository.write(db, aggregate)


def test_searches_counted_once_each_with_avg_hits_and_no_results(shop: Shop):
    index_id = shop.new_index("counted")
    phone = shop.search("phone", index_id)
    assert phone["total"] == 15
    shop.search("  PHONE ", index_id)  # same normalized query, answered from the cache
    shop.search("phone", index_id, filters={"brand": ["Zed"]})  # a narrower search of the same query
    shop.search("zanzibar", index_id)
    shop.search("Zanzibar", index_id)
    profile = shop.client.post(shop.tenant.url(index_id, "/profiles"),
                               json={"name": "store", "queryFields": {"name": {"weight": 1}}},
                               headers=shop.tenant.headers).json()
    storefront = shop.client.post(f"/v1/search/{profile['profileKey']}", json={"q": "laptop"},
                                  headers={**bearer(shop.public), "Origin": ORIGIN})
    assert storefront.status_code == 200, storefront.text
    quiet = shop.client.post(shop.tenant.url(index_id, "/search"),
                             json={"q": "laptop", "profile": {"queryFields": {"name": {"weight": 1}}, "analytics": False}},
                             headers=shop.tenant.headers)
    assert quiet.status_code == 200, quiet.text  # analytics off: not counted
    shop.app.state.runtime.search.events.emit(
        {"type": "suggest", "projectId": shop.tenant.project_id, "indexId": index_id, "q": "pho", "total": 3,
         "source": "storefront", "at": store.today().isoformat() + "T10:00:00+00:00"})

    report = shop.analytics(index_id)
    totals = report["totals"]
    assert totals["searches"] == 6 and totals["suggests"] == 1
    assert totals["noResultSearches"] == 2 and totals["noResultRate"] == round(2 / 6, 4)
    assert totals["clicks"] == 0 and totals["clickThroughRate"] == 0.0 and totals["averageClickPosition"] is None
    zed_phones = shop.search("phone", index_id, filters={"brand": ["Zed"]})["total"]
    top = {q["query"]: q for q in report["topQueries"]}
    assert list(top) == ["phone", "zanzibar", "laptop"]  # by count, then text
    assert top["phone"]["count"] == 3 and top["phone"]["avgHits"] == round((15 + 15 + zed_phones) / 3, 2)
    assert top["laptop"] == {"query": "laptop", "count": 1, "avgHits": 15.0, "clickThroughRate": 0.0}
    assert report["noResultQueries"] == [{"query": "zanzibar", "count": 2}]
    today = store.today().isoformat()
    assert report["to"] == today and len(report["series"]) == 30 and report["series"][-1] == {
        "date": today, "searches": 6, "noResultSearches": 2}
    assert report["from"] == (store.today() - timedelta(days=29)).isoformat()

    # what autocomplete reads (the 7th search, above, is counted now)
    shop.analytics(index_id)
    with shop.app.state.runtime.sessions() as db:
        popular = popular_queries(db, index_id, days=7, min_searches=2)
    assert [(p.query, p.searches, p.searches_with_results) for p in popular] == [("phone", 4, 4), ("zanzibar", 2, 0)]


def test_series_over_several_days_and_date_range(shop: Shop):
    index_id = shop.new_index("dated")
    _record(shop, index_id, 3, "tv", 10, times=4)
    _record(shop, index_id, 3, "oled tv", 0, times=1)
    _record(shop, index_id, 1, "tv", 20, times=2)
    _record(shop, index_id, 0, "radio", 5, times=1)
    today = store.today()
    report = shop.analytics(index_id, **{"from": (today - timedelta(days=3)).isoformat(), "to": today.isoformat()})
    assert [(p["searches"], p["noResultSearches"]) for p in report["series"]] == [(5, 1), (0, 0), (2, 0), (1, 0)]
    assert report["totals"]["searches"] == 8
    assert report["topQueries"][0] == {"query": "tv", "count": 6, "avgHits": round((40 + 40) / 6, 2),
                                       "clickThroughRate": 0.0}
    older = shop.analytics(index_id, **{"from": (today - timedelta(days=3)).isoformat(),
                                        "to": (today - timedelta(days=2)).isoformat()})
    assert older["totals"]["searches"] == 5 and [q["query"] for q in older["topQueries"]] == ["tv", "oled tv"]
    assert older["noResultQueries"] == [{"query": "oled tv", "count": 1}]
    limited = shop.analytics(index_id, limit=1)
    assert len(limited["topQueries"]) == 1


def test_retention_purges_older_days(shop: Shop):
    index_id = shop.new_index("retained")
    retention = shop.app.state.runtime.settings.analytics_retention_days
    _record(shop, index_id, retention + 5, "ancient", 1, times=3)
    _record(shop, index_id, retention - 1, "kept", 1, times=2)
    today = store.today()
    span = {"from": (today - timedelta(days=retention + 5)).isoformat(), "to": today.isoformat()}
    assert shop.analytics(index_id, **span)["totals"]["searches"] == 5
    gone = "idx_" + "0" * 20  # an index deleted since (no such index): its rows go too
    _record(shop, gone, 0, "orphan", 1)
    purge_analytics(shop.app.state.runtime.sessions)
    after = shop.analytics(index_id, **span)
    assert after["totals"]["searches"] == 2 and [q["query"] for q in after["topQueries"]] == ["kept"]
    with shop.app.state.runtime.sessions() as db:
        assert db.scalar(select(func.count()).select_from(QueryDay).where(QueryDay.index_id == gone)) == 0


def test_parameters_are_validated(shop: Shop):
    url = shop.tenant.url(shop.index_id, "/analytics")
    for params, path in (({"from": "2026-13-01"}, "from"), ({"to": "yesterday"}, "to"),
                         ({"from": "2026-05-02", "to": "2026-05-01"}, "from"),
                         ({"from": "2020-01-01", "to": "2026-01-01"}, "from"), ({"interval": "week"}, "interval")):
        response = shop.client.get(url, params=params, headers=shop.tenant.headers)
        assert response.status_code == 400, (params, response.text)
        body = response.json()["error"]
        assert body["code"] == "VALIDATION_ERROR" and body["details"][0]["path"] == path, body


def test_dates_outside_the_sane_range_are_400_not_500(shop: Shop):
    """``to=9999-12-31`` overflowed ``to + 1 day`` and ``from=0001-01-05`` (or ``to``, whose default
    ``from`` is 29 days earlier) overflowed below year 1: 500 and a reset connection."""
    url = shop.tenant.url(shop.index_id, "/analytics")
    for params, path in (({"to": "9999-12-31"}, "to"), ({"from": "0001-01-05"}, "from"),
                         ({"to": "0001-01-05"}, "to"), ({"from": "9999-12-01", "to": "9999-12-31"}, "to"),
                         ({"from": "0001-01-01", "to": "0001-01-31"}, "to"), ({"from": "1999-12-31"}, "from"),
                         ({"to": "2100-01-01"}, "to")):
        response = shop.client.get(url, params=params, headers=shop.tenant.headers)
        assert response.status_code == 400, (params, response.text)
        body = response.json()["error"]
        assert body["code"] == "VALIDATION_ERROR" and body["details"][0]["path"] == path, (params, body)
    edge = shop.client.get(url, params={"from": "2099-12-01", "to": "2099-12-31"}, headers=shop.tenant.headers)
    assert edge.status_code == 200 and edge.json()["series"][-1]["date"] == "2099-12-31"
    first = shop.client.get(url, params={"from": "2000-01-01", "to": "2000-01-10"}, headers=shop.tenant.headers)
    assert first.status_code == 200 and first.json()["totals"]["searches"] == 0


def test_access_and_tenancy(shop: Shop):
    url = shop.tenant.url(shop.index_id, "/analytics")
    assert shop.client.get(url, headers=shop.other.headers).status_code == 404
    other_url = shop.other.url(shop.index_id, "/analytics")  # my index under their project
    assert shop.client.get(other_url, headers=shop.other.headers).status_code == 404
    scoped = make_key(shop.app, shop.tenant.project_id, access="read", index_id="idx_elsewhere")
    assert shop.client.get(url, headers=bearer(scoped)).status_code == 404
    public = shop.client.get(url, headers={**bearer(shop.public), "Origin": ORIGIN})
    assert public.status_code == 403 and public.json()["error"]["code"] == "FORBIDDEN"
    assert shop.client.get(url).status_code == 401
    member = shop.client.get(url, headers={"Authorization": f"Bearer {shop.tenant.account.token}"})
    assert member.status_code == 200

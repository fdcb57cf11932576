"""Geo search (issue 35 item 5, CONTRACT §10) through the API, on both backends: a ``geopoint``
field, filters ``around`` / ``within`` (box, polygon) with other filters and facets, a sort option
``FIELD:near`` with ``near`` in the body and ``distanceM`` on each hit (secret and storefront
routes), and every malformed point refused with the path of the fault.

Expected sets come from the test's own arithmetic: distances by the spherical law of cosines (the
engine uses haversine), a box and an L-shaped polygon by their rectangles."""

from __future__ import annotations

import math
import random
import time
from typing import Any

import pytest

from tests.factories import bearer, make_key
from tests.fixtures.app import StartedAppClient
from tests.index.helpers import create_catalog_index, make_tenant, upload

ORIGIN = "https://stores.example"
MAPPING = {
    "fields": {
        "name": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "filterable": True, "facetable": True, "sortable": True},
        "loc": {"type": "geopoint", "filterable": True, "sortable": True},
    }
}
BRANDS = ("north", "south", "east")
PARIS = (48.8566, 2.3522)
STORES = 240


def _stores() -> list[dict[str, Any]]:
    """Stores scattered over about 100 km around Paris, a few on a grid for the polygon, a few across
    the antimeridian (Fiji), and some with no point."""
    rng = random.Random(35)
    out: list[dict[str, Any]] = []
    for i in range(STORES):
        doc: dict[str, Any] = {"id": f"s{i:03d}", "name": f"store {i} lamp", "brand": BRANDS[i % 3]}
        if i % 20 == 7:
            pass  # no point
        elif i < 200:
            doc["loc"] = {"lat": PARIS[0] + rng.uniform(-0.5, 0.5), "lng": PARIS[1] + rng.uniform(-0.7, 0.7)}
        elif i < 225:  # a 5 x 5 grid, 1 degree apart, from (10, 10)
            k = i - 200
            doc["loc"] = {"lat": 10.0 + k // 5, "lng": 10.0 + k % 5}
        else:  # both sides of the antimeridian
            doc["loc"] = {"lat": -17.0 + rng.uniform(-1, 1), "lng": rng.choice((179.0, -179.0)) + rng.uniform(-0.5, 0.5)}
        out.append(doc)
    return out


def _meters(a: tuple[float, float], b: tuple[float, float]) -> float:
    """The spherical law of cosines (not the engine's haversine), on the same mean radius."""
    la1, lo1, la2, lo2 = map(math.radians, (*a, *b))
    c = math.sin(la1) * math.sin(la2) + math.cos(la1) * math.cos(la2) * math.cos(lo2 - lo1)
    return 6_371_008.8 * math.acos(max(-1.0, min(1.0, c)))


def _point(doc: dict[str, Any]) -> tuple[float, float] | None:
    loc = doc.get("loc")
    return None if loc is None else (loc["lat"], loc["lng"])


@pytest.fixture(scope="module")
def shop(app: Any) -> Any:
    stores = _stores()
    with StartedAppClient(app) as client:
        tenant = make_tenant(app)
        index = create_catalog_index(client, tenant, stores, MAPPING, "stores", shards=2)
        url = tenant.url(index["id"], "/profiles")
        profile = {"name": "near", "queryFields": {"name": {"weight": 1}}, "facets": ["brand"],
                   "sortOptions": [{"key": "nearest", "label": "Nearest", "sort": ["loc:near"]},
                                   {"key": "brand_nearest", "label": "Brand, nearest", "sort": ["brand:asc", "loc:near"]}],
                   "perPage": 20}
        response = client.post(url, json=profile, headers=tenant.headers)
        assert response.status_code == 201, response.text
        public = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=[ORIGIN])
    return tenant, index["id"], response.json()["profileKey"], public, stores


def _search(client: Any, shop: Any, **body: Any) -> dict[str, Any]:
    tenant, index_id, *_ = shop
    response = client.post(tenant.url(index_id, "/search"), json={"perPage": 100, **body}, headers=tenant.headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _all_ids(client: Any, shop: Any, **body: Any) -> set[str]:
    ids: set[str] = set()
    for page in range(1, 4):
        found = _search(client, shop, page=page, **body)
        ids |= {h["id"] for h in found["hits"]}
        if page * 100 >= found["total"]:
            assert len(ids) == found["total"]
            return ids
    raise AssertionError("more than 300 hits")


def _refused(client: Any, shop: Any, body: dict[str, Any], path: str) -> None:
    tenant, index_id, profile_key, *_ = shop
    if body.get("profileKey") == "$near":
        body = {**body, "profileKey": profile_key}
    response = client.post(tenant.url(index_id, "/search"), json=body, headers=tenant.headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR", error
    assert path in [d["path"] for d in error.get("details") or []], error


def test_around_finds_exactly_the_points_within_the_radius(client: Any, shop: Any) -> None:
    stores = shop[4]
    for radius in (5_000, 20_000, 45_000):
        expected = {d["id"] for d in stores if (p := _point(d)) and _meters(PARIS, p) <= radius}
        # a store right at the edge could fall either way by the two formulas' rounding: none here
        assert not [d for d in stores if (p := _point(d)) and abs(_meters(PARIS, p) - radius) < 1]
        found = _all_ids(client, shop, filters={"loc": {"around": {"lat": PARIS[0], "lng": PARIS[1], "radiusM": radius}}})
        assert found == expected and 0 < len(expected) < 200


def test_within_a_box_and_across_the_antimeridian(client: Any, shop: Any) -> None:
    stores = shop[4]
    box = [[48.6, 2.0], [49.0, 2.6]]
    expected = {d["id"] for d in stores if (p := _point(d)) and 48.6 <= p[0] <= 49.0 and 2.0 <= p[1] <= 2.6}
    assert expected and _all_ids(client, shop, filters={"loc": {"within": {"box": box}}}) == expected
    # corners in the other order of latitude: the same box
    assert _all_ids(client, shop, filters={"loc": {"within": {"box": [[49.0, 2.0], [48.6, 2.6]]}}}) == expected
    # from 178.5 east to -178.5: three degrees across the antimeridian, not 357 the other way
    wide = {d["id"] for d in stores if (p := _point(d)) and -18.5 <= p[0] <= -15.5 and (p[1] >= 178.5 or p[1] <= -178.5)}
    both_sides = {d["id"] for d in stores if d["id"] in wide and d["loc"]["lng"] < 0}
    assert wide and both_sides and wide - both_sides
    assert _all_ids(client, shop, filters={"loc": {"within": {"box": [[-18.5, 178.5], [-15.5, -178.5]]}}}) == wide


def test_within_a_concave_polygon(client: Any, shop: Any) -> None:
    """An L over the 5 x 5 grid: rows 10-11.5 all columns, plus column 10-11.5 up to row 14.5."""
    stores = shop[4]
    ell = [[9.5, 9.5], [9.5, 14.5], [11.5, 14.5], [11.5, 11.5], [14.5, 11.5], [14.5, 9.5]]

    def inside(p: tuple[float, float]) -> bool:
        return (9.5 <= p[0] <= 11.5 and 9.5 <= p[1] <= 14.5) or (9.5 <= p[0] <= 14.5 and 9.5 <= p[1] <= 11.5)

    expected = {d["id"] for d in stores if (p := _point(d)) and inside(p)}
    assert len(expected) == 2 * 5 + 3 * 2 - 1  # s207 (11, 12) has no point
    assert _all_ids(client, shop, filters={"loc": {"within": {"polygon": ell}}}) == expected
    # the same L listed the other way round
    assert _all_ids(client, shop, filters={"loc": {"within": {"polygon": ell[::-1]}}}) == expected


def test_geo_filters_combine_with_other_filters_facets_and_not(client: Any, shop: Any) -> None:
    stores = shop[4]
    area = {"around": {"lat": PARIS[0], "lng": PARIS[1], "radiusM": 30_000}}
    near = [d for d in stores if (p := _point(d)) and _meters(PARIS, p) <= 30_000]
    found = _search(client, shop, q="lamp", filters={"loc": area, "brand": "north"}, facets=["brand"])
    assert {h["id"] for h in found["hits"]} == {d["id"] for d in near if d["brand"] == "north"}
    # facets of the geo-filtered set (brand's own filter left out of its count, as for every facet)
    counts = {v["value"]: v["count"] for v in found["facets"]["brand"]}
    assert counts == {b: sum(1 for d in near if d["brand"] == b) for b in BRANDS if any(d["brand"] == b for d in near)}
    outside = _all_ids(client, shop, filters={"not": {"loc": area}})
    assert outside == {d["id"] for d in stores} - {d["id"] for d in near}  # stores without a point included
    either = _all_ids(client, shop, filters={"or": [{"loc": area}, {"loc": {"within": {"box": [[9, 9], [15, 15]]}}}]})
    assert either == {d["id"] for d in near} | {d["id"] for d in stores if (p := _point(d)) and 9 <= p[0] <= 15 and 9 <= p[1] <= 15}


def _expected_order(stores: list[dict[str, Any]], at: tuple[float, float]) -> list[tuple[str, float | None]]:
    with_point = sorted(((d["id"], _meters(at, p)) for d in stores if (p := _point(d))), key=lambda x: (x[1], x[0]))
    return with_point + [(d["id"], None) for d in stores if _point(d) is None]


def _check_order(hits: list[dict[str, Any]], expected: list[tuple[str, float | None]]) -> None:
    distances = [h["distanceM"] for h in hits]
    known = [x for x in distances if x is not None]
    assert known == sorted(known)  # nearest first
    assert distances.index(None) if None in distances else True  # no point: last
    assert all(x is None for x in distances[len(known):])
    wanted = dict(expected)
    for hit in hits:
        meters = wanted[hit["id"]]
        if meters is None:
            assert hit["distanceM"] is None
        else:
            assert abs(hit["distanceM"] - meters) <= 1.0, (hit, meters)


def test_sort_by_distance_pages_through_every_store_nearest_first(client: Any, shop: Any) -> None:
    stores = shop[4]
    at = (48.9, 2.2)
    expected = _expected_order(stores, at)
    hits: list[dict[str, Any]] = []
    for page in (1, 2, 3):
        hits += _search(client, shop, profileKey=shop[2], sort="nearest", near={"lat": at[0], "lng": at[1]},
                        page=page)["hits"]
    assert len(hits) == STORES and len({h["id"] for h in hits}) == STORES
    _check_order(hits, expected)
    # the nearest ten are those of the arithmetic (ties would be broken either way: none this close)
    assert [h["id"] for h in hits[:10]] == [i for i, _ in expected[:10]]
    # without the sort option no hit measures anything
    assert all("distanceM" not in h for h in _search(client, shop, q="lamp")["hits"])


def test_distance_after_another_key_and_on_the_storefront(client: Any, shop: Any) -> None:
    _, _, profile_key, public, stores = shop
    at = (48.85, 2.35)
    body = {"q": "lamp", "sort": "brand_nearest", "near": {"lat": at[0], "lng": at[1]}, "perPage": 100,
            "filters": {"loc": {"around": {"lat": at[0], "lng": at[1], "radiusM": 25_000}}}}
    response = client.post(f"/v1/search/{profile_key}", json=body, headers={**bearer(public), "Origin": ORIGIN})
    assert response.status_code == 200, response.text
    hits = response.json()["hits"]
    near = [d for d in stores if (p := _point(d)) and _meters(at, p) <= 25_000]
    assert len(hits) == len(near) > 0
    brands = [h["document"]["brand"] for h in hits]
    assert brands == sorted(brands)
    for brand in set(brands):  # within a brand, nearest first
        _check_order([h for h in hits if h["document"]["brand"] == brand], _expected_order(stores, at))
    # another point: another answer (not one cached for the first)
    other = client.post(f"/v1/search/{profile_key}", json={**body, "near": {"lat": 48.95, "lng": 2.5}},
                        headers={**bearer(public), "Origin": ORIGIN})
    assert other.status_code == 200 and [h["distanceM"] for h in other.json()["hits"]] != [h["distanceM"] for h in hits]


@pytest.mark.parametrize(("body", "path"), [
    ({"filters": {"loc": {"around": {"lat": 48, "lng": 2, "radiusM": -5}}}}, "filters.loc.around.radiusM"),
    ({"filters": {"loc": {"around": {"lat": 95, "lng": 2, "radiusM": 5}}}}, "filters.loc.around"),
    ({"filters": {"loc": {"around": {"lat": 48, "lng": 2}}}}, "filters.loc.around"),
    ({"filters": {"loc": {"within": {"box": [[48, 2], [48, 200]]}}}}, "filters.loc.within.box[1]"),
    ({"filters": {"loc": {"within": {"box": [[48, 2]]}}}}, "filters.loc.within.box"),
    ({"filters": {"loc": {"within": {"polygon": [[1, 1], [2, 2]]}}}}, "filters.loc.within.polygon"),
    ({"filters": {"loc": {"within": {"polygon": [[1, 1], [2, 2], ["x", 3]]}}}}, "filters.loc.within.polygon[2]"),
    ({"filters": {"loc": {"within": {"circle": [1, 1]}}}}, "filters.loc.within"),
    ({"filters": {"loc": {"around": {"lat": 48, "lng": 2, "radiusM": 5}, "within": {"box": [[1, 1], [2, 2]]}}}},
     "filters.loc"),
    ({"filters": {"brand": {"around": {"lat": 48, "lng": 2, "radiusM": 5}}}}, "filters.brand"),
    ({"filters": {"loc": "paris"}}, "filters.loc"),
    ({"filters": {"loc": {"gte": 5}}}, "filters.loc"),
    ({"profileKey": "$near", "sort": "nearest"}, "near"),
    ({"profileKey": "$near", "sort": "nearest", "near": {"lat": 100, "lng": 2}}, "near.lat"),
    ({"profileKey": "$near", "sort": "nearest", "near": {"lat": 48, "lng": "2"}}, "near.lng"),
    ({"profileKey": "$near", "sort": "nearest", "near": {"lat": 48}}, "near.lng"),
])
def test_malformed_areas_and_points_are_refused_with_their_path(client: Any, shop: Any, body: dict[str, Any],
                                                                 path: str) -> None:
    _refused(client, shop, body, path)


def test_documents_mappings_and_profiles_with_bad_geo_are_refused(client: Any, app: Any) -> None:
    tenant = make_tenant(app)
    facetable = {"fields": {"loc": {"type": "geopoint", "facetable": True}}}
    response = client.post(tenant.url(), json={"name": "bad", "mapping": facetable}, headers=tenant.headers)
    assert response.status_code == 400, response.text
    assert any(d["path"].endswith("loc.facetable") for d in response.json()["error"]["details"])
    response = client.post(tenant.url(), json={"name": "geo", "mapping": MAPPING}, headers=tenant.headers)
    assert response.status_code == 201, response.text
    index_id = response.json()["id"]
    for bad in ({"lat": 91, "lng": 0}, {"lat": 10, "lng": -181}, {"lat": "10", "lng": 1}, [10, 1],
                {"lat": 10, "lng": 1, "alt": 3}, {"lat": True, "lng": 1}):
        response = client.post(tenant.url(index_id, "/documents"), json=[{"id": "ok", "loc": {"lat": 1, "lng": 1}},
                                                                         {"id": "bad", "loc": bad}],
                               headers=tenant.headers)
        assert response.status_code == 400, (bad, response.text)
        assert [d["path"] for d in response.json()["error"]["details"]] == ["[1].loc"], response.text
    profiles = tenant.url(index_id, "/profiles")
    for sort, path in ((["loc:asc"], "sortOptions.0.sort.0"), (["brand:near"], "sortOptions.0.sort.0")):
        body = {"name": "p", "sortOptions": [{"key": "k", "label": "k", "sort": sort}]}
        response = client.post(profiles, json=body, headers=tenant.headers)
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == "PROFILE_INVALID"
        assert path in [d["path"] for d in response.json()["error"]["details"]]
    for filters, path in (({"brand": {"around": {"lat": 1, "lng": 1, "radiusM": 9}}}, "filters.brand"),
                          ({"and": [{"loc": "here"}]}, "filters.and[0].loc")):
        response = client.post(profiles, json={"name": "p", "filters": filters}, headers=tenant.headers)
        assert response.status_code == 400 and response.json()["error"]["code"] == "PROFILE_INVALID", response.text
        assert path in [d["path"] for d in response.json()["error"]["details"]], response.text
    # nothing was stored by the refused uploads
    assert client.get(tenant.url(index_id, "/documents/ok"), headers=tenant.headers).status_code == 404


def test_a_dynamic_index_maps_lat_lng_objects_as_geopoints(client: Any, app: Any) -> None:
    tenant = make_tenant(app)
    response = client.post(tenant.url(), json={"name": "dyn"}, headers=tenant.headers)
    assert response.status_code == 201, response.text
    index_id = response.json()["id"]
    task = upload(client, tenant, index_id, [
        {"id": "a", "name": "lamp", "loc": {"lat": 48.85, "lng": 2.35}},
        {"id": "b", "name": "lamp", "loc": {"lat": 45.76, "lng": 4.84}},
    ])
    assert {"field": "loc", "type": "geopoint"} in task["details"]["fieldsAdded"]
    mapping = client.get(tenant.url(index_id, "/mapping"), headers=tenant.headers).json()
    assert mapping["fields"]["loc"] == {"type": "geopoint", "filterable": True, "sortable": True}
    area = {"loc": {"around": {"lat": 48.85, "lng": 2.35, "radiusM": 10_000}}}
    deadline = time.monotonic() + 30  # the new field is filterable once the mapping change it queued is in
    while True:
        response = client.post(tenant.url(index_id, "/search"), json={"filters": area}, headers=tenant.headers)
        if response.status_code == 200 and [h["id"] for h in response.json()["hits"]] == ["a"]:
            break
        assert time.monotonic() < deadline, response.text
        time.sleep(0.05)


def test_a_rule_narrows_to_an_area_and_a_bad_geo_rule_is_refused(client: Any, app: Any) -> None:
    tenant = make_tenant(app)
    index = create_catalog_index(client, tenant, [
        {"id": "paris", "name": "lamp", "brand": "north", "loc": {"lat": 48.85, "lng": 2.35}},
        {"id": "lyon", "name": "lamp", "brand": "north", "loc": {"lat": 45.76, "lng": 4.84}},
        {"id": "nowhere", "name": "lamp", "brand": "north"},
    ], MAPPING, "rules", shards=1)
    rules = tenant.url(index["id"], "/rules")
    area = {"around": {"lat": 48.85, "lng": 2.35, "radiusM": 50_000}}
    for field, consequence in (("brand", {"addFilters": {"brand": area}}),
                               ("loc", {"boost": [{"filters": {"loc": "paris"}, "weight": 1}]})):
        response = client.post(rules, json={"name": "bad", "conditions": [{"pattern": "lamp", "anchoring": "contains"}],
                                            "consequence": consequence}, headers=tenant.headers)
        assert response.status_code == 400, response.text
        paths = [d["path"] for d in response.json()["error"]["details"]]
        assert any(p.startswith("consequence.") and p.endswith(field) for p in paths), paths
    response = client.post(rules, json={"name": "paris only", "conditions": [{"pattern": "lamp", "anchoring": "contains"}],
                                        "consequence": {"addFilters": {"loc": area}}}, headers=tenant.headers)
    assert response.status_code == 201, response.text
    deadline = time.monotonic() + 10  # rules reach the search once its index's merchandising version moved
    while True:
        found = client.post(tenant.url(index["id"], "/search"), json={"q": "lamp"}, headers=tenant.headers).json()
        if [h["id"] for h in found["hits"]] == ["paris"]:
            break
        assert time.monotonic() < deadline, found
        time.sleep(0.05)


def test_pins_defaults_and_mapping_changes_around_a_distance_sort(client: Any, app: Any) -> None:
    """A pinned store shows its own distance; a profile whose default sort measures from ``near``
    answers by relevance when a search brings no point (facet value searches, autocomplete's
    products, a shopper who shared no location); a field cannot turn into or out of a geopoint
    under the profiles that filter or sort on it."""
    tenant = make_tenant(app)
    index = create_catalog_index(client, tenant, [
        {"id": "paris", "name": "lamp", "brand": "north", "loc": {"lat": 48.8566, "lng": 2.3522}},
        {"id": "lyon", "name": "lamp", "brand": "south", "loc": {"lat": 45.764, "lng": 4.8357}},
        {"id": "lille", "name": "lamp", "brand": "east", "loc": {"lat": 50.6292, "lng": 3.0573}},
    ], MAPPING, "pins", shards=2)
    url = tenant.url(index["id"])
    profile = client.post(url + "/profiles", headers=tenant.headers, json={
        "name": "nearest", "queryFields": {"name": {"weight": 1}}, "facets": ["brand"],
        "sortOptions": [{"key": "nearest", "label": "Nearest", "sort": ["loc:near"]}], "defaultSort": "nearest"})
    assert profile.status_code == 201, profile.text
    key = profile.json()["profileKey"]
    at = (48.85, 2.35)
    near = {"lat": at[0], "lng": at[1]}

    # the default sort without a point: relevance, and the facet value search works
    plain = client.post(url + "/search", json={"q": "lamp", "profileKey": key}, headers=tenant.headers)
    assert plain.status_code == 200 and plain.json()["sort"] is None, plain.text
    assert all("distanceM" not in h for h in plain.json()["hits"]) and plain.json()["total"] == 3
    values = client.post(url + "/facet-values", json={"field": "brand", "q": "no", "profileKey": key},
                         headers=tenant.headers)
    assert values.status_code == 200, values.text
    measured = client.post(url + "/search", json={"q": "lamp", "profileKey": key, "near": near}, headers=tenant.headers)
    assert measured.status_code == 200 and measured.json()["sort"] == "nearest", measured.text
    assert [h["id"] for h in measured.json()["hits"]] == ["paris", "lille", "lyon"]

    # a pin keeps its own distance (not its score)
    rule = client.post(url + "/rules", headers=tenant.headers, json={
        "name": "lyon first", "conditions": [{"pattern": "lamp", "anchoring": "contains"}],
        "consequence": {"pin": [{"id": "lyon", "position": 1}]}})
    assert rule.status_code == 201, rule.text
    deadline = time.monotonic() + 10
    while True:
        hits = client.post(url + "/search", json={"q": "lamp", "profileKey": key, "near": near},
                           headers=tenant.headers).json()["hits"]
        if hits[0]["id"] == "lyon":
            break
        assert time.monotonic() < deadline, hits
        time.sleep(0.05)
    assert hits[0].get("pinned") is True
    assert abs(hits[0]["distanceM"] - _meters(at, (45.764, 4.8357))) <= 1.0, hits[0]
    assert [h["id"] for h in hits[1:]] == ["paris", "lille"]

    # loc stops being a geopoint (still sortable): the profile measuring from near would break
    changed = {"fields": {**MAPPING["fields"], "loc": {"type": "float", "filterable": True, "sortable": True}}}
    response = client.put(url + "/mapping", json=changed, headers=tenant.headers)
    assert response.status_code == 409 and response.json()["error"]["code"] == "MAPPING_BREAKS_CONFIG", response.text
    assert any(d["path"].endswith("sortOptions.0.sort.0") for d in response.json()["error"]["details"])


def test_a_csv_cell_becomes_a_point() -> None:
    from control_plane.document.feed_sync import _coerce_csv_value

    for cell in ("48.85 2.35", "48.85;2.35", "48.85, 2.35", " 48.85,2.35 "):
        assert _coerce_csv_value(cell, "geopoint") == {"lat": 48.85, "lng": 2.35}
    for cell in ("48.85", "paris", "1 2 3"):
        assert _coerce_csv_value(cell, "geopoint") == cell  # left for the upload's check to refuse

"""Hybrid semantic search and similar products (issue 35 items 1-3, CONTRACT §10) through the API,
on both backends.

The Best Buy catalog with a built-in vector (``embed`` from name, categories and description):
paraphrases that share no word with their products find them with hybrid and not with keywords
alone, known items rank first with ``ratio: 0.3`` as without semantic, ``ratio: 0`` is the keyword
answer exactly, filters and facets hold with every ratio, ``similarTo`` leaves its document out.
A small catalog of shop-supplied vectors checks the faults: wrong lengths, non-numbers, a missing
vector, a query vector of the wrong length, and a replace session that swaps every vector."""

from __future__ import annotations

import re
from typing import Any

import pytest

from benchmarks.common import FIELDS, MAPPING, load_products
from tests.factories import bearer, make_key
from tests.fixtures.app import StartedAppClient
from tests.index.helpers import create_catalog_index, create_index, make_tenant, upload, wait_task

SEMANTIC_MAPPING = {**MAPPING, "fields": {**MAPPING["fields"], "meaning": {
    "type": "vector", "embed": {"from": ["name", "categories", "description"]}}}}
PROFILE = {"name": "hybrid", "queryFields": FIELDS, "facets": ["brand"], "perPage": 10,
           "semantic": {"field": "meaning", "ratio": 0.5}}
# a shopper's words for a kind of product, none of them in the products' names (what tells the kind)
PARAPHRASES = [
    ("take photos of myself", r"selfie"),
    ("pictures of myself with friends", r"selfie"),
    ("talk hands free while driving", r"bluetooth|headset|speakerphone|car kit"),
    ("protect my tablet", r"case|cover|protector|folio"),
    ("hear calls in the car", r"bluetooth|speakerphone|car kit|fm"),
]
KNOWN_ITEMS = ["apple iphone 7 128gb jet black verizon", "samsung galaxy s7 edge blue coral sprint",
               "otterbox defender iphone 7", "mophie juice pack air iphone 6", "zagg invisibleshield glass galaxy s7",
               "tile mate", "lifeproof fre iphone 7", "insignia car charger", "samsung galaxy s7 edge blue corl sprint", "apple iphone 7 128gb jet blak verizon"]


@pytest.fixture(scope="module")
def catalog() -> list[dict[str, Any]]:
    return load_products()


@pytest.fixture(scope="module")
def shop(app: Any, catalog: list[dict[str, Any]]) -> Any:
    with StartedAppClient(app) as client:
        tenant = make_tenant(app)
        index = create_catalog_index(client, tenant, catalog, SEMANTIC_MAPPING, "semantic")
        response = client.post(tenant.url(index["id"], "/profiles"), json=PROFILE, headers=tenant.headers)
        assert response.status_code == 201, response.text
        key = make_key(app, tenant.project_id, access="read")
    return tenant, index["id"], response.json()["profileKey"], key


def _search(client: Any, shop: Any, ratio: float | None, **body: Any) -> dict[str, Any]:
    tenant, index_id, *_ = shop
    profile = {k: v for k, v in PROFILE.items() if k != "name"}
    if ratio is None:
        profile.pop("semantic")
    else:
        profile["semantic"] = {"field": "meaning", "ratio": ratio}
    response = client.post(tenant.url(index_id, "/search"), json={"profile": profile, **body}, headers=tenant.headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _kinds(answer: dict[str, Any], pattern: str) -> int:
    rx = re.compile(pattern, re.I)
    return sum(1 for h in answer["hits"] if rx.search(h["document"]["name"]))


@pytest.mark.parametrize("q, kind", PARAPHRASES)
def test_a_paraphrase_finds_its_products_with_hybrid_and_not_with_keywords(client: Any, shop: Any, q: str,
                                                                          kind: str) -> None:
    assert _kinds(_search(client, shop, None, q=q), kind) == 0
    assert _kinds(_search(client, shop, 0.5, q=q), kind) >= 1


def _model(name: str) -> str:
    """A product's name without its colour ("... for iPhone 6 - Gold"): the query cannot tell those apart."""
    return name.rsplit(" - ", 1)[0] if name.count(" - ") >= 2 else name


def test_known_items_rank_first_as_without_semantic(client: Any, shop: Any) -> None:
    for q in KNOWN_ITEMS:
        plain = _search(client, shop, None, q=q)["hits"]
        hybrid = _search(client, shop, 0.3, q=q)["hits"]
        assert plain and hybrid, q
        assert _model(hybrid[0]["document"]["name"]) == _model(plain[0]["document"]["name"]), q


def test_ratio_zero_is_the_keyword_answer_exactly(client: Any, shop: Any) -> None:
    for q in ("otterbox case", "find my lost keys", ""):
        plain, zero = _search(client, shop, None, q=q, perPage=30), _search(client, shop, 0, q=q, perPage=30)
        for answer in (plain, zero):
            answer.pop("tookMs"), answer.pop("queryId")
        assert zero == plain, q


@pytest.mark.parametrize("ratio", [0.5, 1])
def test_filters_and_facets_hold_with_any_ratio(client: Any, shop: Any, ratio: float) -> None:
    answer = _search(client, shop, ratio, q="phone holder for the car", filters={"brand": "iOttie"}, perPage=50)
    assert answer["hits"] and all(h["document"]["brand"] == "iOttie" for h in answer["hits"])
    assert answer["total"] == len(answer["hits"])
    brands = {v["value"]: v["count"] for v in answer["facets"]["brand"]}
    assert brands["iOttie"] == answer["total"] and len(brands) > 1  # the facet ignores its own filter
    # vector ranking alone still follows the filter on price
    cheap = _search(client, shop, ratio, q="charger", filters={"price": {"lt": 20}}, perPage=50)
    assert cheap["hits"] and all(h["document"]["price"] < 20 for h in cheap["hits"])


def test_the_storefront_route_searches_hybrid(client: Any, shop: Any, catalog: list[dict[str, Any]]) -> None:
    _, _, profile_key, key = shop
    response = client.post(f"/v1/search/{profile_key}", json={"q": "talk hands free while driving"}, headers=bearer(key))
    assert response.status_code == 200, response.text
    assert _kinds(response.json(), PARAPHRASES[2][1]) >= 1
    # a vector is refused where the field computes its own... only its length is checked: 128 numbers
    wrong = client.post(f"/v1/search/{profile_key}", json={"q": "x", "vector": [0.1, 0.2]}, headers=bearer(key))
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "VALIDATION_ERROR"
    assert "vector" in [d["path"] for d in wrong.json()["error"]["details"]]


def test_similar_products_leave_their_document_out_and_follow_filters(client: Any, shop: Any,
                                                                     catalog: list[dict[str, Any]]) -> None:
    by_id = {str(p["id"]): p for p in catalog}
    tracker = next(p for p in catalog if p["name"].startswith("Tile - Tile Mate"))
    answer = _search(client, shop, None, similarTo=str(tracker["id"]), perPage=10)
    ids = [h["id"] for h in answer["hits"]]
    assert str(tracker["id"]) not in ids and len(ids) == 10
    assert sum(1 for i in ids[:5] if re.search(r"track|tile", by_id[i]["name"], re.I)) >= 3, [by_id[i]["name"] for i in ids]
    scores = [h["score"] for h in answer["hits"]]
    assert scores == sorted(scores, reverse=True)
    filtered = _search(client, shop, None, similarTo=str(tracker["id"]), filters={"brand": "Apple"}, perPage=20)
    assert filtered["hits"] and all(h["document"]["brand"] == "Apple" for h in filtered["hits"])
    missing = _refused(client, shop, {"similarTo": "no-such-product"}, status=404)
    assert missing["code"] == "NOT_FOUND"
    with_words = _refused(client, shop, {"similarTo": str(tracker["id"]), "q": "tile"})
    assert "q" in [d["path"] for d in with_words["details"]]


def _refused(client: Any, shop: Any, body: dict[str, Any], status: int = 400) -> dict[str, Any]:
    tenant, index_id, *_ = shop
    response = client.post(tenant.url(index_id, "/search"), json=body, headers=tenant.headers)
    assert response.status_code == status, response.text
    return response.json()["error"]  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- shop-supplied vectors
VECTOR_MAPPING = {"fields": {"name": {"type": "text", "searchable": True},
                             "kind": {"type": "keyword", "filterable": True, "facetable": True},
                             "vec": {"type": "vector", "dimensions": 3}}}
AXES = {"x": [1.0, 0.0, 0.0], "y": [0.0, 1.0, 0.0], "z": [0.0, 0.0, 1.0]}


def _docs() -> list[dict[str, Any]]:
    out = []
    for i in range(30):
        axis = "xyz"[i % 3]
        vec = [v + 0.01 * (i // 3) for v in AXES[axis]]
        out.append({"id": f"d{i:02d}", "name": f"lamp {axis}", "kind": axis, "vec": vec})
    out.append({"id": "plain", "name": "lamp without vector", "kind": "x"})
    return out


@pytest.fixture
def vectors(app: Any, client: Any) -> Any:
    tenant = make_tenant(app)
    index = create_index(client, tenant, "vectors", mapping=VECTOR_MAPPING, shards=2)
    upload(client, tenant, index["id"], _docs())
    profile = {"name": "v", "queryFields": {"name": {}}, "facets": ["kind"], "perPage": 50,
               "semantic": {"field": "vec", "ratio": 1}}
    response = client.post(tenant.url(index["id"], "/profiles"), json=profile, headers=tenant.headers)
    assert response.status_code == 201, response.text
    return tenant, index["id"], response.json()["profileKey"]


def _vsearch(client: Any, vectors: Any, **body: Any) -> Any:
    tenant, index_id, profile_key = vectors
    return client.post(tenant.url(index_id, "/search"), json={"profileKey": profile_key, **body}, headers=tenant.headers)


def test_shop_vectors_rank_by_the_query_vector(client: Any, vectors: Any) -> None:
    answer = _vsearch(client, vectors, q="lamp", vector=[0.0, 0.0, 2.0]).json()
    kinds = [h["document"]["kind"] for h in answer["hits"]]
    assert kinds[:10] == ["z"] * 10 and "plain" not in [h["id"] for h in answer["hits"]]
    assert "vec" not in answer["hits"][0]["document"]  # hundreds of numbers stay out of hits
    # without a vector, the words alone: the document without a vector is found by them
    words = _vsearch(client, vectors, q="without").json()
    assert [h["id"] for h in words["hits"]] == ["plain"]
    similar = _vsearch(client, vectors, similarTo="d01").json()  # a y
    assert [h["document"]["kind"] for h in similar["hits"]][:9] == ["y"] * 9
    assert "d01" not in [h["id"] for h in similar["hits"]]
    no_vector = _vsearch(client, vectors, similarTo="plain")
    assert no_vector.status_code == 400 and no_vector.json()["error"]["code"] == "VALIDATION_ERROR"


@pytest.mark.parametrize("value, message", [
    ([1.0, 2.0], "expected 3 numbers"), ([1, "2", 3], "finite numbers"), ([1, True, 3], "finite numbers"),
    ("1,2,3", "a list of 3 numbers"), ([1e400, 0, 0], None),
])
def test_a_wrong_vector_is_refused_with_its_path(client: Any, vectors: Any, value: Any, message: str | None) -> None:
    tenant, index_id, _ = vectors
    raw = b'[{"id": "bad", "name": "x", "vec": ' + (b"[1e400, 0, 0]" if message is None else
                                                    __import__("orjson").dumps(value)) + b"}]"
    response = client.post(tenant.url(index_id, "/documents"), content=raw,
                           headers={**tenant.headers, "content-type": "application/json"})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    if message is not None:
        assert error["details"][0]["path"] == "[0].vec" and message in error["details"][0]["message"]
    assert client.get(tenant.url(index_id, "/documents/bad"), headers=tenant.headers).status_code == 404


def test_a_query_vector_of_the_wrong_length_is_refused(client: Any, vectors: Any) -> None:
    for body in ({"vector": [1, 0]}, {"vector": [1, 0, 0, 0]}, {"vector": ["a", 0, 0]}, {"vector": []}):
        response = _vsearch(client, vectors, q="lamp", **body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["error"]["code"] == "VALIDATION_ERROR"
        assert any(d["path"].startswith("vector") for d in response.json()["error"]["details"]), body


def test_a_replace_session_swaps_every_vector(client: Any, vectors: Any) -> None:
    tenant, index_id, _ = vectors
    url = tenant.url(index_id, "/replace-sessions")
    session = client.post(url, json={}, headers=tenant.headers).json()
    flipped = [{**d, "vec": list(reversed(d["vec"]))} for d in _docs() if "vec" in d]  # x <-> z
    staged = client.post(f"{url}/{session['id']}/documents", json=flipped, headers=tenant.headers)
    assert staged.status_code == 200, staged.text
    assert _vsearch(client, vectors, vector=[1, 0, 0]).json()["hits"][0]["document"]["kind"] == "x"  # not yet
    commit = client.post(f"{url}/{session['id']}/commit", headers=tenant.headers)
    assert wait_task(client, tenant.headers, tenant.project_id, commit.json()["taskId"])["status"] == "succeeded"
    answer = _vsearch(client, vectors, vector=[1, 0, 0]).json()
    assert [h["document"]["kind"] for h in answer["hits"]][:10] == ["z"] * 10
    assert answer["total"] == 30 and "plain" not in [h["id"] for h in answer["hits"]]


def test_mapping_and_profile_faults(app: Any, client: Any, vectors: Any) -> None:
    tenant, index_id, _ = vectors
    for field, path in [({"type": "vector"}, "mapping.fields.v"),
                        ({"type": "vector", "dimensions": 3, "embed": {"from": ["name"]}}, "mapping.fields.v"),
                        ({"type": "vector", "dimensions": 0}, "mapping.fields.v.dimensions"),
                        ({"type": "vector", "dimensions": 3, "filterable": True}, "mapping.fields.v.filterable"),
                        ({"type": "vector", "embed": {"from": ["name"], "model": "gpt"}}, "mapping.fields.v.embed.model"),
                        ({"type": "vector", "embed": {"from": []}}, "mapping.fields.v.embed.from"),
                        ({"type": "text", "dimensions": 3}, "mapping.fields.v")]:
        response = client.post(tenant.url(), json={"name": "bad", "mapping": {"fields": {"v": field}}},
                               headers=tenant.headers)
        assert response.status_code == 400, (field, response.text)
        assert path in [d["path"] for d in response.json()["error"]["details"]], (field, response.text)
    profile = {"name": "p", "semantic": {"field": "name", "ratio": 0.5}}
    response = client.post(tenant.url(index_id, "/profiles"), json=profile, headers=tenant.headers)
    assert response.status_code == 400 and response.json()["error"]["code"] == "PROFILE_INVALID"
    assert [d["path"] for d in response.json()["error"]["details"]] == ["semantic.field"]
    for ratio in (-0.1, 1.5):
        response = client.post(tenant.url(index_id, "/profiles"), json={"name": "r", "semantic": {"field": "vec", "ratio": ratio}},
                               headers=tenant.headers)
        assert response.status_code == 400, response.text
    # the profile searches vec: a mapping without it breaks the profile
    fields = {k: v for k, v in VECTOR_MAPPING["fields"].items() if k != "vec"}
    response = client.put(tenant.url(index_id, "/mapping"), json={"fields": fields}, headers=tenant.headers)
    assert response.status_code == 409 and response.json()["error"]["code"] == "MAPPING_BREAKS_CONFIG", response.text
    assert any(d["path"].endswith("semantic.field") for d in response.json()["error"]["details"])

"""What a merchant tunes every day, in the cabinet (issue 32), in Debian's Chromium against a real
``shopsearch serve`` loaded with the Best Buy catalog: a synonym changes the preview; a pin for
"iphone" shows first in the preview and on the storefront route; a malformed Solr file names its
line; suggestions appear while typing; storefront searches and clicks are counted in analytics; a
read-only member walks every page; stored markup is shown as text; no console noise on load.

Each journey keeps a screenshot under test-artifacts/cabinet/ (or CABINET_SCREENSHOTS).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from benchmarks.common import load_products
from tests.e2e.test_cabinet import PASSWORD, TIMEOUT_MS, _error_code, _shot
from tests.e2e.test_cabinet_pages import Site, _axe, _make_tenant, _new_page, _sign_in
from tests.fixtures.server import running_server
from tests.fixtures.tasks import wait_task

pytestmark = pytest.mark.long  # tens of seconds: collected first (tests/parallel.py)

CATALOG_MAPPING = {
    "idField": "id",
    "fields": {
        "name": {"type": "text", "searchable": True, "suggest": True},
        "description": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "filterable": True, "facetable": True},
        "categories": {"type": "keyword[]", "filterable": True, "facetable": True},
        "price": {"type": "float", "filterable": True, "sortable": True, "facetable": True},
        "popularity": {"type": "integer", "sortable": True},
    },
}
PROFILE = {
    "name": "storefront",
    "queryFields": {"name": {"weight": 10}, "brand": {"weight": 3}, "description": {"weight": 1}},
    "facets": ["brand", "categories"],
    "highlight": ["name"],
    "sortOptions": [{"key": "price-asc", "label": "Price: low to high", "sort": ["price:asc"]}],
}
PAYLOAD = "<img src=x onerror=xss()>"  # runs xss() if it ever becomes markup


class Shop(Site):
    """The tenant of these journeys, with helpers that fill indices through the API."""

    def catalog_index(self, name: str, products: list[dict[str, Any]] | None = None) -> tuple[str, dict[str, Any]]:
        """A new index holding the Best Buy catalog (or `products`) and a saved storefront profile."""
        docs = load_products() if products is None else products
        with self.api() as http:
            url = f"/v1/projects/{self.project_id}/indices"
            created = http.post(url, json={"name": name, "mapping": CATALOG_MAPPING})
            assert created.status_code == 201, created.text
            index_id = created.json()["id"]
            tasks = [http.post(f"{url}/{index_id}/documents", json=docs[i:i + 1000]).json()["taskId"]
                     for i in range(0, len(docs), 1000)]
            for task in tasks:
                assert wait_task(http, self.project_id, task, timeout=120)["status"] == "succeeded"
            profile = http.post(f"{url}/{index_id}/profiles", json=PROFILE)
            assert profile.status_code == 201, profile.text
            return index_id, profile.json()

    def url(self, index_id: str, suffix: str = "") -> str:
        return f"/v1/projects/{self.project_id}/indices/{index_id}{suffix}"

    def page_url(self, index_id: str, section: str = "") -> str:
        return f"{self.base}/#/p/{self.project_id}/i/{index_id}" + (f"/{section}" if section else "")

    def storefront(self, profile_key: str, q: str) -> dict[str, Any]:
        with self.api() as http:
            answer = http.post(f"/v1/search/{profile_key}", json={"q": q})
            assert answer.status_code == 200, answer.text
            return answer.json()  # type: ignore[no-any-return]

    def session_token(self, email: str) -> str:
        answer = httpx.post(self.base + "/v1/auth/login", json={"email": email, "password": PASSWORD}, timeout=30)
        assert answer.status_code == 200, answer.text
        return str(answer.json()["accessToken"])


@pytest.fixture(scope="module")
def shop() -> Iterator[Shop]:
    with running_server() as server:
        tenant = _make_tenant(server.database_url)
        yield Shop(server.base, server.database_url, tenant["email"], tenant["orgId"], tenant["projectId"], tenant["key"])


@pytest.fixture
def cabinet_page(browser, shop):  # type: ignore[no-untyped-def]  # noqa: F811
    """A signed-in page; after the test, no uncaught JavaScript error happened on it (the journeys
    meet API errors on purpose: the console's quiet load is checked on its own)."""
    context, page, errors = _new_page(browser, {"width": 1280, "height": 900})
    _sign_in(page, shop)
    yield page
    context.close()
    assert not errors, errors


def _total(locator) -> int:  # type: ignore[no-untyped-def]
    """The total a summary line carries (data-total), once it is shown."""
    locator.wait_for()
    return int(locator.get_attribute("data-total"))


def _wait_total(locator, check, timeout: float = TIMEOUT_MS / 1000) -> int:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        value = _total(locator)
        if check(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


# ---------------------------------------------------------------------------------------- synonyms


def test_a_synonym_changes_the_preview(cabinet_page, shop, tmp_path):  # type: ignore[no-untyped-def]
    page = cabinet_page
    index_id, _ = shop.catalog_index("synonyms")
    page.goto(shop.page_url(index_id, "synonyms"))
    page.get_by_role("heading", level=1, name="Synonyms — synonyms").wait_for()
    mini = page.locator(".mini-preview .summary")
    page.get_by_label("Query", exact=True).fill("kwazo")
    assert _wait_total(mini, lambda n: n == 0) == 0  # nothing is called kwazo

    # keyboard only: the terms field, type, Enter submits the form
    page.get_by_label("Terms (comma-separated)").focus()
    page.keyboard.type("kwazo, iphone")
    page.keyboard.press("Enter")
    page.get_by_text("Synonym “kwazo ⇄ iphone” added").wait_for()
    assert _wait_total(mini, lambda n: n > 0) > 0
    assert "iphone" in page.locator(".mini-preview .hit-title").first.inner_text().lower()
    _shot(page, "synonym-added")

    # disabling it takes the effect away, enabling brings it back
    row = page.locator("li.synonym", has_text="kwazo")
    row.get_by_role("checkbox").uncheck()
    assert _wait_total(mini, lambda n: n == 0) == 0
    expect(row.locator(".badge.warn")).to_have_text("disabled")
    row.get_by_role("checkbox").check()
    assert _wait_total(mini, lambda n: n > 0) > 0

    # the full search preview, reached with the query at hand
    page.get_by_role("link", name="Open in search preview").click()
    page.get_by_role("heading", level=1, name="Search preview — synonyms").wait_for()
    expect(page.get_by_label("Search", exact=True)).to_have_value("kwazo")
    found = _wait_total(page.locator(".column .summary").first, lambda n: n > 0)
    assert found > 0
    # click a facet value (by keyboard): the answer is filtered, the filter shows as a removable chip
    facet = page.locator(".facet", has=page.get_by_role("heading", name="brand")).get_by_role("button").first
    brand = facet.locator("span").first.inner_text()
    facet.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name=f"Remove filter brand: {brand}")).to_be_visible()
    filtered = _wait_total(page.locator(".column .summary").first, lambda n: n < found)
    assert 0 < filtered < found
    assert all(doc["brand"] == brand for doc in _hits_of(shop, index_id, "kwazo", {"brand": [brand]}))
    _shot(page, "synonym-preview")

    # edit it into a one-way synonym
    page.goto(shop.page_url(index_id, "synonyms"))
    row = page.locator("li.synonym", has_text="kwazo")
    row.get_by_role("button", name=re.compile("^Edit")).click()
    edit = page.get_by_role("form", name="Edit synonym kwazo ⇄ iphone")
    edit.get_by_label("One way: the input also finds the synonyms").check()
    edit.get_by_label("Input", exact=True).fill("kwazo")
    edit.get_by_label("Also finds (comma-separated)").fill("iphone, galaxy")
    edit.get_by_role("button", name="Save", exact=True).click()
    page.locator("li.synonym", has_text="kwazo → iphone, galaxy").wait_for()

    # paging and searching: 25 more imported through the API
    with shop.api() as http:
        items = [{"type": "multiway", "terms": [f"term{i:02d}", f"word{i:02d}"]} for i in range(25)]
        assert http.post(shop.url(index_id, "/synonyms/import"), json={"items": items, "mode": "append"}).status_code == 200
    page.reload()
    expect(page.locator("li.synonym")).to_have_count(20)
    page.get_by_role("button", name="Next page").click()
    expect(page.locator("li.synonym")).to_have_count(6)
    page.get_by_label("Search the synonyms").fill("term1")
    expect(page.locator("li.synonym")).to_have_count(10)  # term10 … term19
    page.get_by_label("Search the synonyms").fill("kwa")
    expect(page.locator("li.synonym")).to_have_count(1)

    # export as a download, then delete
    with page.expect_download() as download:
        page.get_by_role("button", name="Download JSON").click()
    download.value.save_as(tmp_path / "synonyms.json")
    exported = json.loads((tmp_path / "synonyms.json").read_text())
    assert len(exported) == 26 and any(s.get("input") == "kwazo" for s in exported)
    with page.expect_download() as download:
        page.get_by_role("button", name="Download Solr text").click()
    download.value.save_as(tmp_path / "synonyms.txt")
    assert "kwazo => iphone, galaxy" in (tmp_path / "synonyms.txt").read_text()
    page.once("dialog", lambda d: d.accept())
    page.locator("li.synonym", has_text="kwazo").get_by_role("button", name=re.compile("^Delete")).click()
    expect(page.locator("li.synonym")).to_have_count(0)
    page.get_by_label("Search the synonyms").fill("")
    expect(page.locator("li.synonym")).to_have_count(20)
    with shop.api() as http:
        assert len(http.get(shop.url(index_id, "/synonyms/export")).json()["items"]) == 25


def _hits_of(shop: Shop, index_id: str, q: str, filters: dict[str, Any]) -> list[dict[str, Any]]:
    with shop.api() as http:
        answer = http.post(shop.url(index_id, "/search"), json={"q": q, "filters": filters, "profile": {**PROFILE, "analytics": False}})
        assert answer.status_code == 200, answer.text
        return [hit["document"] for hit in answer.json()["hits"]]


def test_the_preview_compares_two_profiles_and_edits_one_inline(cabinet_page, shop):  # type: ignore[no-untyped-def]
    page = cabinet_page
    index_id, _ = shop.catalog_index("compare")
    with shop.api() as http:
        other = http.post(shop.url(index_id, "/profiles"), json={
            **PROFILE, "name": "cheapest first", "sortOptions": [], "defaultSort": None,
            "queryFields": {"name": {"weight": 1}}, "boosts": [{"field": "popularity", "modifier": "log1p", "weight": 5}]})
        assert other.status_code == 201, other.text
    page.goto(shop.page_url(index_id, "preview") + "?q=samsung galaxy")
    page.get_by_label("Profile A", exact=True).select_option(label="storefront")
    expect(page.get_by_role("heading", name="A: storefront", exact=True)).to_be_visible()
    first_a = page.locator(".column").first.locator(".hit").first
    first_a.wait_for()
    # read now: a locator is evaluated when used, and read after the sort it named the sorted first hit
    first_a_id = first_a.get_attribute("data-id") or ""
    page.get_by_label("Compare with").check()
    page.get_by_label("Profile B", exact=True).select_option(label="cheapest first")
    column_b = page.locator("section.column", has=page.get_by_role("heading", name="B: cheapest first"))
    column_b.locator(".hit").first.wait_for()
    assert _total(column_b.locator(".summary")) > 0
    expect(column_b.locator(".move").first).to_be_visible()  # each hit says how it moved against A
    _shot(page, "preview-compare")

    # sort, then the next page
    page.get_by_label("Sort").select_option(label="Price: low to high")
    expect(page.locator(".column").first.locator(".hit").first).not_to_have_attribute("data-id", first_a_id)
    prices = [float(t.split("·")[-1]) for t in page.locator(".column").first.locator(".hit .muted").all_inner_texts()[:5]]
    assert prices == sorted(prices), prices
    page.get_by_role("button", name="Next page").click()
    expect(page.locator(".pager")).to_contain_text("Page 2 of")
    expect(page.locator(".column").first.locator("ol.hits")).to_have_attribute("start", "21")

    # settings edited inline: an unknown field is the API's PROFILE_INVALID, next to the settings
    page.get_by_text("Edit settings inline").click()
    settings = page.get_by_label("Settings of profile A (JSON)")
    edited = json.loads(settings.input_value())
    settings.fill(json.dumps({**edited, "queryFields": {"nosuchfield": {"weight": 1}}}))
    page.get_by_role("button", name="Apply settings").click()
    inline = page.locator(".inline-edit")
    expect(inline.locator(".alert.error")).to_have_attribute("data-code", "PROFILE_INVALID")
    expect(inline.locator(".alert.error")).to_contain_text("queryFields.nosuchfield")
    expect(settings).to_have_attribute("aria-invalid", "true")
    settings.fill(json.dumps({**edited, "perPage": 5}))
    page.get_by_role("button", name="Apply settings").click()
    expect(page.get_by_role("heading", name="A: storefront (edited)")).to_be_visible()
    expect(page.locator(".column").first.locator(".hit")).to_have_count(5)
    page.get_by_role("button", name="Back to the saved settings").click()
    expect(page.get_by_role("heading", name="A: storefront", exact=True)).to_be_visible()


def test_the_preview_sorts_stores_by_distance_from_a_point(cabinet_page, shop):  # type: ignore[no-untyped-def]
    """A geopoint index: the preview offers a point to measure from, a sort option FIELD:near orders
    the hits by it and each shows its distance; the profile editor proposes FIELD:near for it."""
    page = cabinet_page
    mapping = {"fields": {"name": {"type": "text", "searchable": True},
                          "loc": {"type": "geopoint", "filterable": True, "sortable": True}}}
    stores = [{"id": "lyon", "name": "lamp store", "loc": {"lat": 45.764, "lng": 4.8357}},
              {"id": "paris", "name": "lamp store", "loc": {"lat": 48.8566, "lng": 2.3522}},
              {"id": "lille", "name": "lamp store", "loc": {"lat": 50.6292, "lng": 3.0573}}]
    with shop.api() as http:
        created = http.post(f"/v1/projects/{shop.project_id}/indices", json={"name": "stores", "mapping": mapping})
        assert created.status_code == 201, created.text
        index_id = created.json()["id"]
        task = http.post(shop.url(index_id, "/documents"), json=stores).json()["taskId"]
        assert wait_task(http, shop.project_id, task, timeout=60)["status"] == "succeeded"
        profile = http.post(shop.url(index_id, "/profiles"), json={
            "name": "stores", "queryFields": {"name": {"weight": 1}},
            "sortOptions": [{"key": "nearest", "label": "Nearest first", "sort": ["loc:near"]}]})
        assert profile.status_code == 201, profile.text
    page.goto(shop.page_url(index_id, "preview") + "?q=lamp")
    page.get_by_label("Near (lat, lng)").fill("50.85, 4.35")  # Brussels
    page.get_by_label("Near (lat, lng)").dispatch_event("change")
    page.get_by_label("Sort").select_option(label="Nearest first")
    column = page.locator(".column").first
    expect(column.locator(".hit").first).to_have_attribute("data-id", "lille")
    expect(column.locator(".hit").nth(1)).to_have_attribute("data-id", "paris")
    expect(column.locator(".hit").first.locator(".muted")).to_contain_text(" km")
    page.get_by_label("Near (lat, lng)").fill("45.2, 5.7")  # Grenoble
    page.get_by_label("Near (lat, lng)").dispatch_event("change")
    expect(column.locator(".hit").first).to_have_attribute("data-id", "lyon")
    _shot(page, "preview-near")
    page.goto(shop.page_url(index_id, "profiles") + "/new")
    page.get_by_role("button", name="Add sort option").click()
    expect(page.get_by_label("Sort by").last).to_have_value("loc:near")


def test_a_malformed_solr_file_names_its_line(cabinet_page, shop, tmp_path):  # type: ignore[no-untyped-def]
    page = cabinet_page
    index_id, _ = shop.catalog_index("solr", load_products()[:300])
    bad = tmp_path / "bad-synonyms.txt"
    bad.write_text("cellphone, mobile phone\n# a comment\niphone =>\ntv, television\n")
    page.goto(shop.page_url(index_id, "synonyms"))
    form = page.get_by_role("form", name="Import synonyms")
    form.get_by_label("Format").select_option("solr")
    form.get_by_label("File").set_input_files(str(bad))
    form.get_by_role("button", name="Import").click()
    assert _error_code(page, form) == "VALIDATION_ERROR"
    expect(form.locator(".alert.error")).to_contain_text("Line 3 of bad-synonyms.txt")
    # next to the file it came from, in words
    note = form.locator(".field-error")
    expect(note).to_contain_text("line 3")
    expect(form.get_by_label("File")).to_have_attribute("aria-invalid", "true")
    _shot(page, "solr-import-error")
    with shop.api() as http:
        assert http.get(shop.url(index_id, "/synonyms")).json()["items"] == []  # nothing imported

    # pasted text, replacing everything: imported (after a confirmation)
    form.get_by_label("File").set_input_files([])
    form.get_by_label("Mode").select_option("replace")
    form.get_by_label("Text").fill("cellphone, mobile phone\niphone => apple phone\n")
    page.once("dialog", lambda d: d.accept())
    form.get_by_role("button", name="Import").click()
    page.get_by_text("Imported 2 synonym(s)").wait_for()
    expect(form.locator(".field-error")).to_have_count(0)
    expect(page.locator("li.synonym")).to_have_count(2)


# ------------------------------------------------------------------------------------------- rules


def test_a_pin_for_iphone_shows_first_in_the_preview_and_on_the_storefront(cabinet_page, shop):  # type: ignore[no-untyped-def]
    page = cabinet_page
    index_id, profile = shop.catalog_index("rules")
    before = shop.storefront(profile["profileKey"], "iphone")
    otterbox = shop.storefront(profile["profileKey"], "otterbox iphone")["hits"]
    pinned = next(hit for hit in otterbox if hit["id"] != before["hits"][0]["id"])

    page.goto(shop.page_url(index_id, "rules"))
    page.get_by_role("link", name="New rule").click()
    page.get_by_role("heading", level=2, name="New rule").wait_for()
    page.get_by_label("Rule name").fill("OtterBox first for iphone")
    page.get_by_role("button", name="Add condition").click()
    page.get_by_label("Query", exact=True).first.select_option("is")
    page.get_by_label("Query text").fill("iphone")
    page.get_by_label("Find a product").fill("otterbox iphone")
    page.get_by_role("button", name=f"Pin {pinned['document']['name']}").first.click()
    preview_query = page.locator(".preview").get_by_label("Query")
    preview_query.fill("iphone")
    after = page.locator("section.column", has=page.get_by_role("heading", name="After: with this rule"))
    expect(after.locator(".hit").first).to_have_attribute("data-id", pinned["id"])
    expect(page.get_by_text("This rule matches the query.")).to_be_visible()

    # the API's error shows next to the field it names
    page.get_by_label("Redirect to").fill("javascript:alert(1)")
    page.get_by_role("button", name="Create rule").click()
    assert _error_code(page) == "VALIDATION_ERROR"
    note = page.locator(".rule-editor .field-error")
    expect(note).to_contain_text("http")
    expect(page.get_by_label("Redirect to")).to_have_attribute("aria-invalid", "true")
    page.get_by_label("Redirect to").fill("")
    page.get_by_role("button", name="Create rule").click()
    page.get_by_role("button", name="Save rule").wait_for()
    _shot(page, "rule-pin")
    with shop.api() as http:
        rules = http.get(shop.url(index_id, "/rules")).json()["items"]
    assert [r["name"] for r in rules] == ["OtterBox first for iphone"]
    assert rules[0]["consequence"]["pin"] == [{"id": pinned["id"], "position": 1}]

    # first in the search preview, and on the storefront route
    page.goto(shop.page_url(index_id, "preview") + "?q=iphone")
    first = page.locator(".column .hit").first
    expect(first).to_have_attribute("data-id", pinned["id"])
    expect(page.locator(".applied-rules").first).to_contain_text("OtterBox first for iphone")
    _shot(page, "rule-pin-preview")
    answer = shop.storefront(profile["profileKey"], "iphone")
    assert answer["hits"][0]["id"] == pinned["id"] and answer["appliedRules"] == [rules[0]["id"]]

    # reorder: drag, then the keyboard (arrow keys on the handle), each sends PUT rules/order
    with shop.api() as http:
        second = http.post(shop.url(index_id, "/rules"), json={
            "name": "Hide a case", "conditions": [{"pattern": "galaxy", "anchoring": "contains"}],
            "consequence": {"hide": [before["hits"][0]["id"]]}}).json()

    def order() -> list[str]:
        with shop.api() as http:
            return [r["name"] for r in http.get(shop.url(index_id, "/rules")).json()["items"]]

    page.goto(shop.page_url(index_id, "rules"))
    rows = page.locator("li.rule")
    expect(rows).to_have_count(2)
    rows.nth(1).drag_to(rows.nth(0))
    expect(rows.first).to_have_attribute("data-id", second["id"])
    _until(lambda: order() == ["Hide a case", "OtterBox first for iphone"])
    handle = page.get_by_role("button", name=re.compile("^Reorder Hide a case"))
    handle.focus()
    page.keyboard.press("ArrowDown")
    expect(rows.first).to_have_attribute("data-id", rules[0]["id"])
    _until(lambda: order() == ["OtterBox first for iphone", "Hide a case"])
    expect(page.get_by_role("button", name=re.compile("^Reorder Hide a case"))).to_be_focused()  # focus follows
    page.get_by_role("button", name="Move Hide a case up").click()
    _until(lambda: order() == ["Hide a case", "OtterBox first for iphone"])
    _shot(page, "rules-reordered")


def _until(check, timeout: float = 10) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_the_rule_editor_covers_every_consequence(cabinet_page, shop):  # type: ignore[no-untyped-def]
    page = cabinet_page
    index_id, _ = shop.catalog_index("consequences", load_products()[:600])
    page.goto(shop.page_url(index_id, "rules/new") + "?q=galaxy")
    page.get_by_role("heading", level=2, name="New rule").wait_for()
    expect(page.get_by_label("Rule name")).to_have_value("Results for “galaxy”")  # from the query at hand
    page.get_by_label("Rule name").fill("Galaxy week")
    page.get_by_role("button", name="Add condition").click()
    page.get_by_label("Query", exact=True).nth(1).select_option("startsWith")
    page.get_by_label("Query text").nth(1).fill("samsung")
    page.get_by_label("Only when the search filters hold (JSON, optional)").fill('{"brand": ["Samsung"]}')
    page.get_by_role("button", name="Add validity window").click()
    page.get_by_label("From (UTC)").fill("2020-01-01")
    page.get_by_label("Until (UTC)").fill("2020-02-01 12:30")
    page.get_by_label("Find a product").fill("otterbox")
    found = page.locator(".found .hit").first
    hidden_id = found.get_attribute("data-id")
    found.get_by_role("button", name=re.compile("^Hide")).click()
    page.locator(".pin-list li[data-id]").first.wait_for()
    page.get_by_role("button", name="Add boost").click()
    page.get_by_label("Products matching (JSON filter)").first.fill('{"brand": ["Samsung"')  # not JSON yet
    expect(page.locator(".rule-editor .field-error").first).to_contain_text("not valid JSON")  # said at once, next to it
    page.get_by_label("Products matching (JSON filter)").first.fill('{"brand": ["Samsung"]}')
    page.get_by_label("Weight").first.fill("2")
    page.get_by_role("button", name="Add bury").click()
    page.get_by_label("Products matching (JSON filter)").nth(1).fill('{"categories": ["Cell Phone Accessories"]}')
    page.get_by_label("Add filters (JSON)").fill('{"price": {"gte": 10}}')
    page.get_by_label("Search this text instead").fill("galaxy phone")
    page.get_by_label("Redirect to").fill("/sale")
    page.get_by_label("Custom data (JSON object, returned with the answer)").fill('{"banner": "Galaxy week"}')
    expect(page.locator(".rule-editor .field-error")).to_have_count(0)
    page.get_by_role("button", name="Create rule").click()
    page.get_by_role("button", name="Save rule").wait_for()
    with shop.api() as http:
        [rule] = http.get(shop.url(index_id, "/rules")).json()["items"]
    assert rule["name"] == "Galaxy week" and rule["enabled"] is True
    assert rule["conditions"] == [{"pattern": "galaxy", "anchoring": "is"}, {"pattern": "samsung", "anchoring": "startsWith"}]
    assert rule["filters"] == {"brand": ["Samsung"]}
    assert rule["validity"] == [{"from": "2020-01-01T00:00:00Z", "until": "2020-02-01T12:30:00Z"}]
    c = rule["consequence"]
    assert c["hide"] == [hidden_id] and c["pin"] == []
    assert c["boost"] == [{"filters": {"brand": ["Samsung"]}, "weight": 2}]
    assert c["bury"] == [{"filters": {"categories": ["Cell Phone Accessories"]}, "weight": 0.5}]
    assert c["addFilters"] == {"price": {"gte": 10}} and c["replaceQuery"] == "galaxy phone"
    assert c["redirect"] == "/sale" and c["userData"] == {"banner": "Galaxy week"}

    # opened again, the editor holds it all; out of its window it matches but is not active
    page.reload()
    expect(page.get_by_label("Redirect to")).to_have_value("/sale")
    expect(page.get_by_label("From (UTC)")).to_have_value("2020-01-01 00:00")
    preview_query = page.locator(".preview").get_by_label("Query")
    preview_query.fill("galaxy")
    expect(page.get_by_text("This rule does not match the query.")).to_be_visible()  # the search has no brand filter
    page.get_by_label("Only when the search filters hold (JSON, optional)").fill("")
    expect(page.get_by_text("matches the query but is not active now")).to_be_visible()
    page.get_by_role("button", name="Remove validity window").click()
    expect(page.get_by_text("This rule matches the query.")).to_be_visible()
    after = page.locator("section.column", has=page.get_by_role("heading", name="After: with your changes"))
    expect(after).to_contain_text("Redirects to /sale")
    page.get_by_role("button", name="Save rule").click()
    page.get_by_text("Rule “Galaxy week” saved").wait_for()
    with shop.api() as http:
        saved = http.get(shop.url(index_id, f"/rules/{rule['id']}")).json()
    assert saved["validity"] == [] and saved.get("filters") is None and saved["consequence"] == c
    _shot(page, "rule-consequences")


# ------------------------------------------------------------------------------------ autocomplete


def test_suggestions_appear_while_typing(cabinet_page, shop):  # type: ignore[no-untyped-def]
    page = cabinet_page
    index_id, _ = shop.catalog_index("autocomplete")
    page.goto(shop.page_url(index_id, "autocomplete"))
    page.get_by_role("heading", level=1, name="Autocomplete — autocomplete").wait_for()
    expect(page.get_by_label("Suggest from name")).to_be_checked()
    page.get_by_label("Suggestions shown (1–20)").fill("5")
    page.get_by_role("button", name="Save settings").click()
    page.get_by_text("Settings saved").wait_for()
    status = page.locator(".progress [role=status]")
    expect(status).to_contain_text("succeeded", timeout=60_000)

    # a custom suggestion, served after the rebuild it enqueues
    page.get_by_label("Suggestion", exact=True).fill("iphone case")
    page.get_by_label("Weight", exact=True).fill("1000")
    page.get_by_role("button", name="Add suggestion").click()
    page.locator("td", has_text="iphone case").wait_for()
    expect(status).to_contain_text("succeeded", timeout=60_000)

    box = page.get_by_role("combobox", name="Type as a shopper would")
    box.fill("iphone c")
    option = page.get_by_role("listbox", name="Suggestions").get_by_role("option").first
    expect(option).to_contain_text("iphone case")
    expect(option.locator(".badge")).to_have_text("custom")
    box.fill("sams")
    expect(page.get_by_role("listbox", name="Suggestions").get_by_role("option").first).to_contain_text(re.compile("samsung", re.I))
    assert page.get_by_role("listbox", name="Suggestions").get_by_role("option").count() <= 5
    # the keyboard picks a suggestion; the list's refresh after a rebuild keeps what it is on
    box.focus()
    page.keyboard.press("ArrowDown")
    first = page.get_by_role("listbox", name="Suggestions").get_by_role("option").first
    expect(first).to_have_attribute("aria-selected", "true")
    picked = first.locator("span").first.inner_text()
    with page.expect_response(lambda r: r.url.endswith("/suggest") and r.request.method == "POST", timeout=60_000):
        page.get_by_role("button", name="Rebuild now").click()  # succeeded: the list is asked again
    expect(first).to_have_attribute("aria-selected", "true")
    box.focus()
    page.keyboard.press("Enter")
    expect(box).to_have_value(picked)
    _shot(page, "autocomplete")

    # rebuild now, with the task's progress
    page.get_by_role("button", name="Rebuild now").click()
    expect(status).to_contain_text("succeeded", timeout=60_000)
    expect(page.locator(".progress progress")).to_have_attribute("value", "1")
    with shop.api() as http:
        config = http.get(shop.url(index_id, "/suggestions/config")).json()
    assert config["maxSuggestions"] == 5 and config["builtCount"] > 0


# --------------------------------------------------------------------------------------- analytics


def test_storefront_searches_and_clicks_are_counted_in_analytics(cabinet_page, shop):  # type: ignore[no-untyped-def]
    page = cabinet_page
    index_id, profile = shop.catalog_index("analytics")
    answers = [shop.storefront(profile["profileKey"], q) for q in ["iphone"] * 3 + ["galaxy"] * 2 + ["qwxzv"] * 2]
    clicked = answers[0]["hits"][0]
    with shop.api() as http:
        sent = http.post("/v1/events", json={"events": [
            {"type": "click", "queryId": answers[0]["queryId"], "documentId": clicked["id"], "position": 1},
            {"type": "conversion", "queryId": answers[0]["queryId"], "documentId": clicked["id"], "position": 1}]})
        assert sent.status_code == 200, sent.text
        _until(lambda: http.get(shop.url(index_id, "/analytics")).json()["totals"]["clicks"] == 1
               and http.get(shop.url(index_id, "/analytics")).json()["totals"]["searches"] == 7, timeout=30)

    page.goto(shop.page_url(index_id, "analytics"))
    page.get_by_role("heading", level=1, name="Analytics — analytics").wait_for()
    expect(page.locator("#total-searches .stat-value")).to_have_text("7")
    expect(page.locator("#total-no-result-rate .stat-value")).to_have_text("28.6%")
    expect(page.locator("#total-ctr .stat-value")).to_have_text("14.3%")
    expect(page.locator("#total-conversion .stat-value")).to_have_text("14.3%")
    expect(page.locator("#total-click-position .stat-value")).to_have_text("1.0")
    page.locator(".chart canvas").first.wait_for()
    page.get_by_text("Show the numbers").click()
    today = time.strftime("%Y-%m-%d", time.gmtime())
    expect(page.locator("figure tr", has_text=today).locator("td").first).to_have_text("7")
    top = page.locator("section", has=page.get_by_role("heading", name="Top queries"))
    expect(top.locator("tr", has_text="iphone").locator("td").nth(1)).to_have_text("3")
    expect(top.locator("tr", has_text="iphone").locator("td").nth(3)).to_have_text("33.3%")
    clicked_row = page.locator("section", has=page.get_by_role("heading", name="Most clicked products")).locator("tbody tr").first
    expect(clicked_row).to_contain_text(clicked["document"]["name"])
    _shot(page, "analytics")

    # a query without results: a synonym or a rule for it, one click away
    none = page.locator("section", has=page.get_by_role("heading", name="Queries without results"))
    none.get_by_role("link", name="Add a synonym for “qwxzv”").click()
    page.get_by_role("heading", level=1, name="Synonyms — analytics").wait_for()
    expect(page.get_by_label("Input", exact=True)).to_have_value("qwxzv")
    expect(page.get_by_label("One way: the input also finds the synonyms")).to_be_checked()
    expect(page.get_by_label("Query", exact=True)).to_have_value("qwxzv")
    page.go_back()
    page.locator("section", has=page.get_by_role("heading", name="Queries without results")).get_by_role(
        "link", name="Create a rule for “qwxzv”").click()
    page.get_by_role("heading", level=2, name="New rule").wait_for()
    expect(page.get_by_label("Query text")).to_have_value("qwxzv")

    # the overview counts today's searches
    page.get_by_role("link", name="Overview").click()
    expect(page.locator("#stat-searches-today .stat-value")).to_have_text("7")
    expect(page.locator("#stat-no-result-rate .stat-value")).to_have_text("28.6%")
    expect(page.locator("#stat-documents .stat-value")).to_have_text(f"{len(load_products()):,}")
    page.locator("tr[data-status=succeeded]").first.wait_for()
    _shot(page, "overview")

    # a bad range is refused by the API; its words show next to the field
    page.goto(shop.page_url(index_id, "analytics"))
    page.get_by_label("From (YYYY-MM-DD)").fill("2026-13-45")
    page.get_by_role("button", name="Show", exact=True).click()
    expect(page.locator(".field-error")).to_contain_text("YYYY-MM-DD")


# ---------------------------------------------------------------------------- read-only member


WRITE_BUTTONS = ["Create index", "Upload", "Add synonym", "Import", "Save rule", "Create rule", "Delete rule",
                 "Save settings", "Rebuild now", "Add suggestion", "Save facets", "Save mapping", "Save data source",
                 "Delete index", "Create key", "Save profile", "Create profile", "Reindex", "Create project", "Add member"]


def test_a_member_walks_every_page_without_an_error(browser, shop):  # type: ignore[no-untyped-def]  # noqa: F811
    index_id, profile = shop.catalog_index("members", load_products()[:400])
    with shop.api() as http:
        http.post(shop.url(index_id, "/synonyms"), json={"type": "multiway", "terms": ["phone", "mobile"]})
        rule = http.post(shop.url(index_id, "/rules"), json={
            "name": "Pin one", "conditions": [{"pattern": "phone", "anchoring": "contains"}],
            "consequence": {"pin": [{"id": "5", "position": 1}]}}).json()
        http.post(shop.url(index_id, "/suggestions/custom"), json={"text": "phone case", "weight": 5})
    member = _make_tenant(shop.database_url)  # a registered user with an organization of their own
    owner = shop.session_token(shop.email)
    added = httpx.post(f"{shop.base}/v1/orgs/{shop.org_id}/members", json={"email": member["email"], "role": "member"},
                       headers={"Authorization": f"Bearer {owner}"}, timeout=30)
    assert added.status_code == 201, added.text

    context, page, errors = _new_page(browser, {"width": 1280, "height": 900})
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text} @ {page.url}") if m.type == "error" else None)
    try:
        _sign_in(page, shop, member["email"])
        p = f"{shop.base}/#/p/{shop.project_id}"
        pages = [
            (p, "Indices", "tbody tr"),
            (p + "/keys", "API keys", "tbody tr"),
            (f"{shop.base}/#/org/{shop.org_id}", "Lea's Lamps", "tbody tr"),
            (shop.base + "/#/account", "Account", "tbody tr"),
            (shop.page_url(index_id), "members", "tr[data-status]"),
            (shop.page_url(index_id, "preview") + "?q=phone", "Search preview — members", ".hit"),
            (shop.page_url(index_id, "profiles"), "Search profiles — members", ".hit"),
            (shop.page_url(index_id, "catalog"), "Catalog — members", ".doc-list li"),
            (shop.page_url(index_id, "synonyms"), "Synonyms — members", "li.synonym"),
            (shop.page_url(index_id, "rules"), "Ranking rules — members", "li.rule"),
            (shop.page_url(index_id, f"rules/{rule['id']}"), "Ranking rules — members", ".column .hit"),
            (shop.page_url(index_id, "autocomplete"), "Autocomplete — members", "[role=option]"),
            (shop.page_url(index_id, "analytics"), "Analytics — members", ".chart canvas"),
            (shop.page_url(index_id, "settings"), "Settings — members", "#feed-status p"),
        ]
        for n, (url, heading, ready) in enumerate(pages):
            page.goto(url)
            page.get_by_role("heading", level=1, name=heading).wait_for()
            page.locator(ready).first.wait_for()
            page.wait_for_timeout(300)
            assert page.locator(".alert.error").count() == 0, (url, page.locator(".alert.error").all_inner_texts())
            for name in WRITE_BUTTONS:
                buttons = page.get_by_role("button", name=name, exact=True)
                for i in range(buttons.count()):
                    assert not buttons.nth(i).is_visible() or buttons.nth(i).is_disabled(), (url, name)
            _axe(page, heading)
            _shot(page, f"member-{n:02d}-" + re.sub(r"\W+", "-", heading.lower()))
        expect(page.locator(".read-only").first).to_contain_text("read access")
        # the rule editor shows the rule, its fields disabled, and its preview works
        page.goto(shop.page_url(index_id, f"rules/{rule['id']}"))
        expect(page.get_by_label("Rule name")).to_be_disabled()
        expect(page.get_by_label("Rule name")).to_have_value("Pin one")
        page.locator(".column .hit").first.wait_for()
    finally:
        context.close()
    assert not errors, errors
    assert not console, console  # no call a member may not make (a 403 shows as a console error)


# ------------------------------------------------------------------------------ stored content


def test_stored_content_is_rendered_as_text(browser, shop):  # type: ignore[no-untyped-def]  # noqa: F811
    products = load_products()[:200]
    products[0] = {**products[0], "name": f"Evil {PAYLOAD} phone", "description": f"A {PAYLOAD} description", "brand": PAYLOAD}
    index_id, profile = shop.catalog_index("markup", products)
    evil_id = products[0]["id"]
    with shop.api() as http:
        synonym = http.post(shop.url(index_id, "/synonyms"), json={"type": "multiway", "terms": [PAYLOAD, "evil"]})
        assert synonym.status_code == 201, synonym.text
        rule = http.post(shop.url(index_id, "/rules"), json={
            "name": f"{PAYLOAD} rule", "conditions": [{"pattern": "evil", "anchoring": "contains"}],
            "consequence": {"pin": [{"id": evil_id, "position": 1}], "userData": {"banner": PAYLOAD}}})
        assert rule.status_code == 201, rule.text
        for q in (PAYLOAD, "evil", "evil"):
            answer = http.post(f"/v1/search/{profile['profileKey']}", json={"q": q}).json()
        http.post("/v1/events", json={"events": [{"type": "click", "queryId": answer["queryId"], "documentId": evil_id, "position": 1}]})
        _until(lambda: http.get(shop.url(index_id, "/analytics")).json()["totals"]["searches"] == 3, timeout=30)
        task = http.post(shop.url(index_id, "/suggestions/rebuild")).json()["taskId"]
        assert wait_task(http, shop.project_id, task, timeout=60)["status"] == "succeeded"

    # with the page's CSP off, markup that became an element would run xss()
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    context.add_init_script("window.__xss = 0; window.xss = () => { window.__xss += 1; };")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        _sign_in(page, shop)
        visits = [
            (shop.page_url(index_id, "preview") + "?q=evil", ".hit"),
            (shop.page_url(index_id, "catalog"), ".doc-list li"),
            (shop.page_url(index_id, "synonyms"), "li.synonym"),
            (shop.page_url(index_id, "rules"), "li.rule"),
            (shop.page_url(index_id, f"rules/{rule.json()['id']}"), ".pin-list li"),
            (shop.page_url(index_id, "analytics"), "td.query"),
            (shop.page_url(index_id, "autocomplete"), "#built"),
        ]
        for url, ready in visits:
            page.goto(url)
            page.locator(ready).first.wait_for()
            if "autocomplete" in url:
                page.get_by_role("combobox", name="Type as a shopper would").fill("evil")
                expect(page.get_by_role("listbox", name="Suggestions").get_by_role("option").first).to_contain_text(PAYLOAD)
            page.wait_for_timeout(400)
            expect(page.get_by_text(PAYLOAD).first).to_be_visible()  # shown, as text
            assert page.evaluate("document.querySelectorAll('img[src=\"x\"]').length") == 0, url
            assert page.evaluate("window.__xss") == 0, url
        _shot(page, "markup-as-text")
        # the detector works: the same markup made into an element does run
        page.evaluate(f"document.body.insertAdjacentHTML('beforeend', {json.dumps(PAYLOAD)})")
        page.wait_for_function("window.__xss > 0")
    finally:
        context.close()


# ------------------------------------------------------------------------------- console noise


def test_loading_the_cabinet_logs_nothing(browser, shop):  # type: ignore[no-untyped-def]  # noqa: F811
    """No 401 from /v1/auth/refresh when this browser never signed in, no 404 from GET .../feed on an
    index's pages (issue 36): a quiet console on every load."""
    index_id, _ = shop.catalog_index("quiet", load_products()[:100])
    context, page, errors = _new_page(browser, {"width": 1280, "height": 900})
    console: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("request", lambda r: requests.append(f"{r.method} {r.url.split('?')[0]}"))
    responses: dict[str, int] = {}
    page.on("response", lambda r: responses.__setitem__(r.url, r.status) if "/v1/auth/refresh" in r.url else None)
    try:
        page.goto(shop.base + "/")
        page.get_by_role("heading", level=1, name="Sign in").wait_for()
        page.reload()
        page.get_by_role("heading", level=1, name="Sign in").wait_for()
        assert not [r for r in requests if "/v1/auth/refresh" in r], requests
        _sign_in(page, shop)
        for section in ("", "settings", "catalog", "preview"):
            page.goto(shop.page_url(index_id, section))
            page.locator(".section-body h2").first.wait_for()
            page.wait_for_timeout(300)
        page.reload()  # a browser that signed in restores its session with the cookie
        page.locator(".section-body h2").first.wait_for()
        assert list(responses.values()) == [200], responses
        assert not [r for r in requests if r.endswith("/feed")], requests
        page.get_by_role("button", name="Sign out").click()
        page.get_by_role("heading", level=1, name="Sign in").wait_for()
        requests.clear()
        page.reload()
        page.get_by_role("heading", level=1, name="Sign in").wait_for()
        assert not [r for r in requests if "/v1/auth/refresh" in r], requests
    finally:
        context.close()
    assert not errors, errors
    assert not console, console


# ------------------------------------------------------------------------------- semantic search


def test_the_profile_editor_sets_semantic_search_and_the_preview_compares_keyword_and_hybrid(cabinet_page, shop):  # type: ignore[no-untyped-def]
    """A built-in vector field: the mapping editor shows what it embeds; the profile editor sets the
    profile's semantic field and ratio (saved as `semantic`); the preview shows the keyword ranking
    beside the hybrid one, where a query none of whose words is in a product name still finds by meaning."""
    page = cabinet_page
    mapping = {"fields": {"name": {"type": "text", "searchable": True},
                          "meaning": {"type": "vector", "embed": {"from": ["name"]}}}}
    products = [{"id": "bank", "name": "Portable power bank battery"},
                {"id": "cable", "name": "USB-C charging cable"},
                {"id": "mount", "name": "Dashboard vent mount holder"},
                {"id": "glass", "name": "Tempered glass screen protector"},
                {"id": "case", "name": "Rugged armor case"},
                {"id": "fm", "name": "Bluetooth FM transmitter"},
                {"id": "stylus", "name": "Capacitive touch stylus pen"},
                {"id": "ring", "name": "Finger ring grip stand"}]
    with shop.api() as http:
        created = http.post(f"/v1/projects/{shop.project_id}/indices", json={"name": "semantic", "mapping": mapping})
        assert created.status_code == 201, created.text
        index_id = created.json()["id"]
        task = http.post(shop.url(index_id, "/documents"), json=products).json()["taskId"]
        assert wait_task(http, shop.project_id, task, timeout=60)["status"] == "succeeded"
        profile = http.post(shop.url(index_id, "/profiles"), json={"name": "phone shop", "queryFields": {"name": {"weight": 1}}})
        assert profile.status_code == 201, profile.text
        profile_id = profile.json()["id"]

    # the mapping editor shows the vector field as it is
    page.goto(shop.page_url(index_id, "settings"))
    row = page.locator("tr", has=page.locator("input.field-name[value='meaning']"))
    expect(row.locator("select.field-type")).to_have_value("vector")
    expect(row.locator(".vector-note")).to_have_text("embeds name")

    # the profile editor: vector field and ratio, saved as the profile's semantic setting
    page.goto(shop.page_url(index_id, f"profiles/{profile_id}"))
    expect(page.get_by_label("Vector field")).to_have_value("")
    expect(page.get_by_label("Semantic ratio")).to_be_disabled()
    page.get_by_label("Vector field").select_option("meaning")
    page.get_by_label("Semantic ratio").fill("0.7")
    expect(page.locator(".ratio-value")).to_have_text("0.70")
    _axe(page, "profile editor with semantic search")
    _shot(page, "profile-semantic")
    page.get_by_role("button", name="Save profile").click()
    expect(page.get_by_text("Profile “phone shop” saved")).to_be_visible()
    with shop.api() as http:
        saved = http.get(shop.url(index_id, f"/profiles/{profile_id}")).json()
    assert saved["semantic"] == {"field": "meaning", "ratio": 0.7}, saved
    page.reload()
    expect(page.get_by_label("Vector field")).to_have_value("meaning")
    expect(page.get_by_label("Semantic ratio")).to_have_value("0.7")

    # the preview: the keyword ranking finds nothing, the hybrid one finds by meaning
    page.goto(shop.page_url(index_id, "preview") + "?q=keep my phone juiced up away from home")
    page.get_by_label("Compare keyword and hybrid").check()
    keyword = page.locator("section.column", has=page.get_by_role("heading", name="Keyword", exact=True))
    hybrid = page.locator("section.column", has=page.get_by_role("heading", name="Hybrid (ratio 0.7)", exact=True))
    expect(hybrid.locator(".hit").first).to_be_visible()
    assert _total(keyword.locator(".summary")) == 0
    expect(keyword.locator(".empty")).to_be_visible()
    ids = [hybrid.locator(".hit").nth(i).get_attribute("data-id") for i in range(min(3, hybrid.locator(".hit").count()))]
    assert {"bank", "cable"} & set(ids), ids
    _axe(page, "preview comparing keyword and hybrid")
    _shot(page, "preview-semantic")
    # a ratio typed on the page: 0 is the keyword ranking exactly
    page.get_by_label("Hybrid ratio").fill("0")
    page.get_by_label("Hybrid ratio").dispatch_event("change")
    hybrid0 = page.locator("section.column", has=page.get_by_role("heading", name="Hybrid (ratio 0)", exact=True))
    expect(hybrid0.locator(".summary")).to_have_attribute("data-total", "0")
    # profile B's comparison takes the second column back
    page.get_by_label("Compare with").check()
    expect(page.get_by_label("Compare keyword and hybrid")).not_to_be_checked()
    expect(page.get_by_role("heading", name="B: phone shop", exact=True)).to_be_visible()

"""The demo page in headless Chromium: InstantSearch.js (from npm, bundled) on the ``shopsearch`` client
against a real server holding the Best Buy catalog (``shopsearch demo``). A shopper's journey, and
after each step the hits and counts on the page equal what the REST API answers for the same request,
with exactly one search request for each render of a new state (none for one seen before: cached).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from tests.demo.conftest import open_page

pytestmark = pytest.mark.long

FACETS = ["brand", "hierarchicalCategories", "price"]


def _keys(demo: dict[str, Any]) -> dict[str, str]:
    url = demo.get("page") or demo["first"]["pageUrl"]  # a second run of the demo replaces the key
    return {k: v[0] for k, v in parse_qs(urlsplit(url).fragment).items()} | {"url": url}


class Shopper:
    """Drives the page and checks each render against the REST API."""

    def __init__(self, page: Any, demo: dict[str, Any]) -> None:
        self.page = page
        self.base = demo["base"]
        self.keys = _keys(demo)
        self.searches: list[dict[str, Any]] = []  # multi-search bodies of searches (not facet value searches)
        self.facet_searches: list[dict[str, Any]] = []
        self.seen: set[str] = set()
        page.on("request", self._request)

    def _request(self, request: Any) -> None:
        if request.url.endswith("/v1/multi-search"):
            body = json.loads(request.post_data or "{}")
            kind = any("facetValues" in q for q in body.get("queries", []))
            (self.facet_searches if kind else self.searches).append(body)

    def open(self, state: dict[str, Any]) -> None:
        self.page.goto(self.keys["url"])
        # (functions, not expressions: the page's CSP allows no eval, and Playwright evaluates expressions)
        self.page.wait_for_function("() => window.shopsearchDemo && shopsearchDemo.search.status === 'idle' "
                                    "&& !!document.querySelector('.product')")
        self.page.evaluate("""() => { window.__renders = 0;
            shopsearchDemo.search.on('render', () => { if (shopsearchDemo.search.status === 'idle') window.__renders++; }); }""")
        self.seen.add(self._key(state))
        assert len(self.searches) == 1, self.searches  # the first render: one request
        self.check(state)

    def step(self, action: Any, state: dict[str, Any]) -> None:
        renders = self.page.evaluate("window.__renders")
        before = len(self.searches)
        action()
        self.page.wait_for_function(f"() => window.__renders > {renders} && shopsearchDemo.search.status === 'idle'")
        self.page.wait_for_timeout(150)  # a request sent after the render would show here
        key = self._key(state)
        made = self.searches[before:]
        assert len(made) == (0 if key in self.seen else 1), (state, made)
        if made:
            assert len(made[0]["queries"]) == 1, made  # facet-only queries answered from the hits query
        self.seen.add(key)
        self.check(state)

    @staticmethod
    def body(state: dict[str, Any]) -> dict[str, Any]:
        filters: dict[str, Any] = {}
        if state.get("brands"):
            filters["brand"] = sorted(state["brands"])
        if state.get("category"):
            filters["hierarchicalCategories"] = [state["category"]]
        if state.get("price"):
            filters["price"] = state["price"]
        body: dict[str, Any] = {"q": state.get("q", ""), "facets": FACETS, "page": state.get("page", 1),
                                "perPage": state.get("perPage", 20)}
        if filters:
            body["filters"] = filters
        if state.get("sort"):
            body["sort"] = state["sort"]
        return body

    def _key(self, state: dict[str, Any]) -> str:
        return json.dumps(self.body(state), sort_keys=True)

    def rest(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = httpx.post(f"{self.base}{path}", json=body, headers={
            "Authorization": f"Bearer {self.keys['key']}", "Origin": self.base})
        assert response.status_code == 200, response.text
        return response.json()  # type: ignore[no-any-return]

    def check(self, state: dict[str, Any]) -> None:
        answer = self.rest(f"/v1/search/{self.keys['profile']}", self.body(state))
        page = self.page
        q = state.get("q", "")
        assert page.locator("#stats .ais-Stats-text").inner_text() == f"{answer['total']:,} products" + (f" for “{q}”" if q else "")
        ids = page.locator(".product").evaluate_all("els => els.map(e => e.dataset.id)")
        assert ids == [hit["id"] for hit in answer["hits"]], state

        # the brand list: refined brands first, then the most frequent; every count the REST API's
        counts = {b["value"]: b["count"] for b in answer["facets"]["brand"]}
        shown = page.locator(".ais-RefinementList-item").evaluate_all("""els => els.map(e => ({
            label: e.querySelector('.ais-RefinementList-labelText').textContent,
            count: Number(e.querySelector('.ais-RefinementList-count').textContent.replace(/,/g, '')),
            refined: e.classList.contains('ais-RefinementList-item--selected')}))""")
        refined = sorted(state.get("brands", []))
        assert sorted(b["label"] for b in shown if b["refined"]) == refined
        assert all(b["count"] == counts.get(b["label"], 0) for b in shown), (shown, counts)
        others = sorted((c for v, c in counts.items() if v not in refined), reverse=True)
        assert [b["count"] for b in shown if not b["refined"]] == others[: 10 - len(refined)]

        # the category tree: level 0 and the children down the refined path, counts the REST API's
        def walk(nodes: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
            return [t for n in nodes for t in [(n["value"], n["count"], n["level"]), *walk(n["children"])]]

        tree = page.locator(".ais-HierarchicalMenu-item").evaluate_all("""els => els.map(e => [
            e.querySelector('.ais-HierarchicalMenu-label').textContent,
            Number(e.querySelector('.ais-HierarchicalMenu-count').textContent.replace(/,/g, '')),
            (() => { let d = -1; for (let n = e; n; n = n.parentElement) if (n.classList.contains('ais-HierarchicalMenu-list')) d++; return d; })()])""")
        assert sorted(map(tuple, tree)) == sorted(walk(answer["facets"]["hierarchicalCategories"])), state
        if state.get("sort") == "price-asc":
            prices = [hit["document"]["price"] for hit in answer["hits"]]
            assert prices == sorted(prices)
        pages = page.locator(".ais-Pagination-item--selected").all_inner_texts()
        assert pages == [str(state.get("page", 1))]


def test_a_shoppers_journey_equals_the_rest_api_with_one_request_per_render(demo, browser):
    context, page = open_page(browser, 1280, 1000)
    shopper = Shopper(page, demo)
    state: dict[str, Any] = {}
    shopper.open(state)

    state = {"q": "case"}
    shopper.step(lambda: page.locator("#q").fill("case"), state)

    state = {**state, "brands": ["OtterBox"]}
    brands = page.locator("#brands")
    shopper.step(lambda: brands.locator(".ais-RefinementList-item", has_text="OtterBox").locator("input").check(), state)

    # the brand list's search box: the server's facet value search, counted over the current search
    before = len(shopper.facet_searches)
    brands.locator("input[type=search]").fill("spe")
    expect(brands.locator(".ais-RefinementList-item").first).to_contain_text("Speck")
    assert len(shopper.facet_searches) > before
    found = shopper.rest(f"/v1/search/{shopper.keys['profile']}/facet-values",
                         {"field": "brand", "q": "spe", "limit": 10, "query": "case"})
    listed = brands.locator(".ais-RefinementList-item").evaluate_all("""els => els.map(e => [
        e.querySelector('.ais-RefinementList-labelText').textContent,
        Number(e.querySelector('.ais-RefinementList-count').textContent)])""")
    assert listed == [[v["value"], v["count"]] for v in found["values"]]
    expect(brands.locator("mark").first).to_have_text("Spe")
    state = {**state, "brands": ["OtterBox", "Speck"]}
    shopper.step(lambda: brands.locator(".ais-RefinementList-item", has_text="Speck").locator("input").check(), state)

    # two levels down the category tree, and back up
    tree = page.locator("#categories")
    for category in ("Cell Phones", "Cell Phones > Cell Phone Accessories"):
        state = {**state, "category": category}
        label = category.rpartition(" > ")[2]
        shopper.step(lambda label=label: tree.locator(".ais-HierarchicalMenu-link", has_text=label).first.click(), state)
    expect(tree.locator(".ais-HierarchicalMenu-item--selected .ais-HierarchicalMenu-item--selected")).to_contain_text(
        "Cell Phone Accessories")
    state = {**state, "category": "Cell Phones"}
    shopper.step(lambda: tree.locator(".ais-HierarchicalMenu-link", has_text="Cell Phone Accessories").first.click(), state)
    state = {k: v for k, v in state.items() if k != "category"}
    shopper.step(lambda: tree.locator(".ais-HierarchicalMenu-link", has_text="Cell Phones").first.click(), state)

    state = {**state, "price": {"lte": 49.99}}
    shopper.step(lambda: page.locator("#price label", has_text="Under $50").click(), state)
    current = page.locator("#current").inner_text()
    assert "OtterBox" in current and "Speck" in current and "49.99" in current

    state = {**state, "sort": "price-asc"}
    shopper.step(lambda: page.locator("#sort select").select_option(label="Price: low to high"), state)

    state = {**state, "perPage": 40}
    shopper.step(lambda: page.locator("#per-page select").select_option(label="40 per page"), state)

    state = {**state, "page": 3}
    shopper.step(lambda: page.locator(".ais-Pagination-link", has_text="3").first.click(), state)

    # clear all: the filters go, the text, the sort and the page size stay, back to the first page
    state = {"q": "case", "sort": "price-asc", "perPage": 40}
    shopper.step(lambda: page.locator("#clear button").click(), state)
    assert page.locator("#current").inner_text().strip() == ""
    context.close()
    assert not page.problems, page.problems


def test_suggestions_clicks_and_conversions(demo, page):
    shopper = Shopper(page, demo)
    shopper.open({})
    page.locator("#q").press_sequentially("sams", delay=30)
    option = page.locator("#suggestions [role=option]", has_text="Samsung").first
    expect(option).to_be_visible()
    expect(option.locator("mark")).to_have_text("Sams")
    assert page.locator("#q").get_attribute("aria-expanded") == "true"
    page.locator("#q").press("ArrowDown")
    expect(page.locator("#suggestion-0")).to_have_attribute("aria-selected", "true")
    chosen = page.locator("#suggestion-0").get_attribute("data-text")
    with page.expect_response(lambda r: r.url.endswith("/v1/multi-search") and chosen in (r.request.post_data or "")) as seen:
        page.locator("#q").press("Enter")
    expect(page.locator("#stats .ais-Stats-text")).to_contain_text(f"for “{chosen}”")
    expect(page.locator("#suggestions")).to_be_hidden()
    answer = seen.value.json()["results"][0]

    # a click on a product and its "Add to cart": events with the answer's queryId
    product = page.locator(".product").nth(1)
    with page.expect_response(lambda r: r.url.endswith("/v1/events")) as clicked:
        product.locator("h2").click()
    event = json.loads(clicked.value.request.post_data or "{}")["events"][0]
    assert clicked.value.status == 200 and clicked.value.json() == {"accepted": 1}
    assert event["type"] == "click" and event["queryId"] == answer["queryId"]
    assert event["documentId"] == answer["hits"][1]["id"] and event["position"] == 2
    assert event["userToken"].startswith("anonymous-")
    with page.expect_response(lambda r: r.url.endswith("/v1/events")) as bought:
        product.locator("button.add").click()
    assert json.loads(bought.value.request.post_data or "{}")["events"][0]["type"] == "conversion"
    assert bought.value.json() == {"accepted": 1}
    expect(product.locator("button.add")).to_have_text("Added")

    # images from the shop's CDN: refused here (as a CDN that is down), each shows the placeholder
    # (the first few: the rest load lazily, when scrolled to)
    page.wait_for_function("() => [...document.querySelectorAll('.product img')].slice(0, 3)"
                           ".every(i => i.src.startsWith('data:image/svg'))")
    assert page.locator(".product img").first.evaluate("i => i.complete && i.naturalWidth > 0")


def test_a_refused_search_shows_as_an_error_not_as_no_results(demo, browser):
    context, page = open_page(browser)
    page.goto(f"{demo['base']}/demo#key=ss_pk_not-a-key&profile={demo['first']['profileKey']}")
    expect(page.locator("#error")).to_be_visible()
    expect(page.locator("#error")).to_contain_text("401 UNAUTHENTICATED")
    assert page.locator(".product").count() == 0
    assert "No products" not in page.locator("#results").inner_text()
    context.close()
    assert all("401" in p for p in page.problems), page.problems  # the refused call, and nothing else


def test_on_a_phone_results_come_first_and_no_engine_timings(demo, browser):
    context, page = open_page(browser, 390, 844)
    page.goto(_keys(demo)["url"])
    expect(page.locator(".product").first).to_be_visible()
    results = page.locator("#results").bounding_box()
    facets = page.locator("#facets").bounding_box()
    assert results and facets and results["y"] < facets["y"] and results["y"] < 844
    assert page.locator(".product").first.bounding_box()["y"] < 844  # type: ignore[index]
    stats = page.locator("#stats .ais-Stats-text").inner_text()
    assert stats.endswith("products") and "ms" not in stats
    context.close()
    assert not page.problems, page.problems


def test_the_page_and_the_client_file_as_served(demo, page):
    base = demo["base"]
    head = httpx.head(f"{base}/demo")
    assert head.status_code == 200 and head.headers["content-type"].startswith("text/html")
    policy = httpx.get(f"{base}/demo").headers["content-security-policy"]
    assert "script-src 'self'" in policy and "img-src 'self' https: data:" in policy
    client = httpx.get(f"{base}/js/shopsearch.js")
    assert client.status_code == 200 and client.headers["access-control-allow-origin"] == "*"
    assert "window.shopsearch=" in client.text
    assert httpx.get(f"{base}/js/shopsearch.mjs").status_code == 200
    page.goto(f"{base}/demo")
    expect(page.locator("#setup")).to_be_visible()
    expect(page.locator("#setup")).to_contain_text("shopsearch demo")

"""The cabinet on a phone and a tablet, its accessibility (names, headings, focus, keyboard-only
sign-in) and the index settings pages (data source, integration, deleting profiles and indices),
in Debian's Chromium against a real ``shopsearch serve``.

The tenant is made directly in the server's database (``create_tenant``) and filled through the API,
so each check starts on a populated cabinet without replaying the sign-up journey. Every page is also
checked with axe-core (``tests/browser``, installed by ``./dev test``): no serious or critical
violation. Screenshots of each page at each viewport are kept under test-artifacts/cabinet/.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from benchmarks.common import load_products
from tests.e2e.test_cabinet import PASSWORD, TIMEOUT_MS, _error_code, _shot
from tests.fixtures.server import running_server
from tests.fixtures.tasks import wait_task

SECRET = "cabinet-test-secret-" + "x" * 40
AXE = Path(__file__).resolve().parents[1] / "browser" / "node_modules" / "axe-core" / "axe.min.js"
VIEWPORTS = {"phone": {"width": 390, "height": 844}, "tablet": {"width": 768, "height": 1024}}
MAPPING = {
    "idField": "id",
    "fields": {
        "name": {"type": "text", "searchable": True},
        "description": {"type": "text", "searchable": True},
        "manufacturer": {"type": "keyword", "searchable": True, "filterable": True, "facetable": True},
        "price": {"type": "float", "filterable": True, "sortable": True, "facetable": True},
    },
}


@dataclass
class Site:
    base: str
    database_url: str
    email: str
    org_id: str
    project_id: str
    key: str

    def api(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {self.key}"}, timeout=30)

    def index_with_profile(self, name: str, products: int = 40) -> tuple[str, str]:
        """A new index holding a few Best Buy products, and a saved profile on it."""
        with self.api() as http:
            url = f"/v1/projects/{self.project_id}/indices"
            created = http.post(url, json={"name": name, "mapping": MAPPING})
            assert created.status_code == 201, created.text
            index = created.json()
            task = http.post(f"{url}/{index['id']}/documents", json=load_products()[:products]).json()
            assert wait_task(http, self.project_id, task["taskId"], timeout=60)["status"] == "succeeded"
            profile = http.post(f"{url}/{index['id']}/profiles", json={
                "name": "storefront", "queryFields": {"name": {"weight": 10}, "description": {"weight": 1}},
                "facets": ["manufacturer"], "highlight": ["name"]}).json()
            assert "id" in profile, profile
            return index["id"], profile["id"]


def _make_tenant(database_url: str) -> dict[str, Any]:
    from control_plane.db import make_engine, make_sessionmaker
    from control_plane.org.models import Organization
    from control_plane.tenants.service import create_tenant

    engine = make_engine(database_url)
    try:
        with make_sessionmaker(engine).begin() as db:
            created = create_tenant(db, email=f"lea-{uuid.uuid4().hex[:8]}@shop.test", password=PASSWORD,
                                    org_name="Lea's Lamps", project_name="Web shop", verified=True, key_access="full")
            db.get(Organization, created.org_id).plan = "pro"  # type: ignore[union-attr]  # room for an index per test
            return created.as_dict()
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with running_server(extra_env={"SHOPSEARCH_SECRET_KEY": SECRET}) as server:
        tenant = _make_tenant(server.database_url)
        yield Site(server.base, server.database_url, tenant["email"], tenant["orgId"], tenant["projectId"], tenant["key"])


def _new_page(chromium, viewport: dict[str, int]):  # type: ignore[no-untyped-def]
    context = chromium.new_context(viewport=viewport)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return context, page, errors


def _sign_in(page, site: Site, email: str | None = None) -> None:  # type: ignore[no-untyped-def]
    """Signs in; the cabinet lands on the indices of the organization's project."""
    page.goto(site.base + "/#/signin")
    page.get_by_label("Email").fill(email or site.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", level=1, name="Indices").wait_for()


# Names as a screen reader would announce them (aria-labelledby, aria-label, <label>, a button's
# text), heading order, duplicate ids. Elements under aria-hidden are left out.
A11Y_PROBLEMS = """() => {
  const problems = [];
  const text = (el) => (el ? el.textContent : "").replace(/\\s+/g, " ").trim();
  const name = (el) => {
    const by = el.getAttribute("aria-labelledby");
    if (by && by.split(/\\s+/).map((id) => text(document.getElementById(id))).join("").trim()) return true;
    if ((el.getAttribute("aria-label") || "").trim()) return true;
    if (el.labels && [...el.labels].some((l) => text(l))) return true;
    if (el.tagName === "BUTTON" && text(el)) return true;
    return false;
  };
  const short = (el) => el.outerHTML.slice(0, 140);
  for (const el of document.querySelectorAll("input:not([type=hidden]), select, textarea, button")) {
    if (el.closest("[aria-hidden=true]")) continue;
    if (!name(el)) problems.push("no accessible name: " + short(el));
  }
  const headings = [...document.querySelectorAll("h1, h2, h3, h4, h5, h6")].filter((x) => x.getClientRects().length);
  const levels = headings.map((x) => Number(x.tagName[1]));
  if (levels.filter((l) => l === 1).length !== 1) problems.push("h1 count: " + levels.filter((l) => l === 1).length);
  if (levels[0] !== 1) problems.push("the first heading is not h1 but h" + levels[0]);
  levels.forEach((l, i) => { if (i && l > levels[i - 1] + 1) problems.push(`heading h${levels[i - 1]} then h${l}: ${text(headings[i])}`); });
  const seen = new Set();
  for (const el of document.querySelectorAll("[id]")) { if (seen.has(el.id)) problems.push("duplicate id " + el.id); seen.add(el.id); }
  return problems;
}"""

FOCUSED = """() => { const el = document.activeElement; const s = getComputedStyle(el);
  return { tag: el.tagName, text: (el.getAttribute("aria-label") || el.textContent || el.name || "").trim().slice(0, 40),
           visible: el.matches(":focus-visible") && s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2 }; }"""


def _axe(page, label: str) -> None:  # type: ignore[no-untyped-def]
    """axe-core on the page as it is: no serious or critical violation. Injected with evaluate(), which
    the page's CSP (script-src 'self') does not apply to."""
    assert AXE.exists(), "axe-core is missing: ./dev test installs it (scripts/ensure-npm.sh tests/browser)"
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text())
    result = page.evaluate("""async () => {
      const r = await axe.run(document, { resultTypes: ["violations"] });
      return r.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
        .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
    }""")
    assert not result, (label, result)


def _check_page(page, label: str, tabs: int = 12) -> None:  # type: ignore[no-untyped-def]
    """No accessibility problem (ours and axe-core's), and each of the first `tabs` keyboard stops
    shows its focus."""
    problems = page.evaluate(A11Y_PROBLEMS)
    assert not problems, (label, problems)
    _axe(page, label)
    page.locator("h1").first.focus()
    for _ in range(tabs):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED)
        if focused["tag"] == "BODY":
            break
        assert focused["visible"], (label, focused)


# The page's width, the viewport's, and the innermost elements reaching past the viewport's edge.
WIDEST = """() => {
  const scrolls = (el) => { for (let p = el.parentElement; p; p = p.parentElement) {
    if (["auto", "scroll", "hidden"].includes(getComputedStyle(p).overflowX)) return true; } return false; };
  const past = (el) => el.getBoundingClientRect().right > innerWidth + 1 && !scrolls(el);
  const wide = [...document.querySelectorAll("body *")].filter((el) => el.getBoundingClientRect().right > innerWidth + 1 && !(el.parentElement && el.parentElement.getBoundingClientRect().right > innerWidth + 1));
  return [document.documentElement.scrollWidth, innerWidth, wide.slice(0, 5).map((el) => el.outerHTML.slice(0, 100))];
}"""


def _sideways(page, label: str) -> list[tuple[str, int, int, list[str]]]:  # type: ignore[no-untyped-def]
    """[] unless the page itself scrolls sideways (wide tables scroll inside their own container)."""
    width, viewport, wide = page.evaluate(WIDEST)
    return [(label, width, viewport, wide)] if width > viewport else []


# every section of an index's page (after its heading), and what shows it has loaded
SECTION_READY = {
    "preview": ".hit",
    "catalog": ".doc-list li",
    "synonyms": ".mini-preview p",
    "rules": ".rule-list, .empty",
    "rules/new": ".column h3",
    "autocomplete": "#built",
    "analytics": ".chart canvas",
    "settings": "#feed-status p",
}


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_layout_on_phone_and_tablet(browser, site, viewport):  # type: ignore[no-untyped-def]  # noqa: F811
    index_id, profile_id = site.index_with_profile(f"lamps-{viewport}")
    context, page, errors = _new_page(browser, VIEWPORTS[viewport])
    overflow: list[tuple[str, int, int, list[str]]] = []
    try:
        page.goto(site.base + "/#/signin")
        page.get_by_role("heading", level=1, name="Sign in").wait_for()
        overflow += _sideways(page, "sign in")
        _shot(page, f"{viewport}-signin")
        _sign_in(page, site)
        overflow += _sideways(page, "indices")
        _shot(page, f"{viewport}-indices")
        page.goto(f"{site.base}/#/org/{site.org_id}")
        page.get_by_role("link", name="Web shop").first.wait_for()
        overflow += _sideways(page, "organization")
        _shot(page, f"{viewport}-organization")
        page.goto(f"{site.base}/#/p/{site.project_id}/keys")
        page.get_by_role("heading", level=1, name="API keys").wait_for()
        page.locator("td", has_text="operator key").wait_for()
        overflow += _sideways(page, "keys")
        _shot(page, f"{viewport}-keys")
        index_page = f"{site.base}/#/p/{site.project_id}/i/{index_id}"
        page.goto(index_page)
        page.get_by_role("heading", level=1, name=f"lamps-{viewport}").wait_for()
        page.locator("tr[data-status=succeeded]").first.wait_for()
        overflow += _sideways(page, "index")
        _shot(page, f"{viewport}-index")
        for section, ready in SECTION_READY.items():
            page.goto(f"{index_page}/{section}")
            page.locator(ready).first.wait_for()
            overflow += _sideways(page, section)
            _shot(page, f"{viewport}-{section.replace('/', '-')}")
        page.goto(f"{site.base}/#/p/{site.project_id}/i/{index_id}/profiles/{profile_id}")
        page.get_by_role("heading", level=1, name=f"Search profiles — lamps-{viewport}").wait_for()
        expect(page.locator("#preview-total")).to_have_text(re.compile(r"^\d+ results"))
        overflow += _sideways(page, "profile editor")
        settings, preview = (page.get_by_role("heading", level=2, name=n).locator("..") for n in ("Settings", "Live preview"))
        below = settings.bounding_box(), preview.bounding_box()
        assert below[1]["y"] >= below[0]["y"] + below[0]["height"], "the editor and the preview should stack"
        _shot(page, f"{viewport}-profile")
    finally:
        context.close()
    assert not overflow, overflow
    assert not errors, errors


def test_accessibility_of_each_page(browser, site):  # type: ignore[no-untyped-def]  # noqa: F811
    index_id, profile_id = site.index_with_profile("lamps-a11y")
    context, page, errors = _new_page(browser, {"width": 1280, "height": 900})
    try:
        for route, heading in (("signin", "Sign in"), ("signup", "Create your shopsearch account"), ("forgot", "Forgot your password?")):
            page.goto(f"{site.base}/#/{route}")
            page.get_by_role("heading", level=1, name=heading).wait_for()
            _check_page(page, route)

        # keyboard only: the page focuses its heading, Tab reaches the email, then the password; Enter submits
        page.goto(site.base + "/#/signin")
        page.get_by_role("heading", level=1, name="Sign in").wait_for()
        expect(page.get_by_role("heading", level=1)).to_be_focused()
        page.keyboard.press("Tab")
        expect(page.get_by_label("Email")).to_be_focused()
        page.keyboard.type(site.email)
        page.keyboard.press("Tab")
        expect(page.get_by_label("Password")).to_be_focused()
        page.keyboard.type("not the password")
        page.keyboard.press("Enter")
        # the API's error is announced (role=alert) and takes the focus
        alert = page.get_by_role("alert")
        expect(alert).to_be_focused()
        assert alert.get_attribute("data-code") == "UNAUTHENTICATED"
        page.keyboard.press("Shift+Tab")  # back to the password field (the alert precedes the button)
        expect(page.get_by_label("Password")).to_be_focused()
        page.keyboard.press("ControlOrMeta+a")
        page.keyboard.type(PASSWORD)
        page.keyboard.press("Enter")
        page.get_by_role("heading", level=1, name="Indices").wait_for()  # the project's indices
        expect(page.get_by_role("heading", level=1)).to_be_focused()  # a new page moves focus to its heading
        page.locator(".checklist li").first.wait_for()
        _check_page(page, "indices")

        p = f"{site.base}/#/p/{site.project_id}"
        pages = [
            (f"{site.base}/#/org/{site.org_id}", "Lea's Lamps", "td"),
            (site.base + "/#/account", "Account", "tbody tr"),
            (p + "/keys", "API keys", "td"),
            (f"{p}/i/{index_id}", "lamps-a11y", "tr[data-status]"),
            (f"{p}/i/{index_id}/profiles/{profile_id}", "Search profiles — lamps-a11y", ".hit"),
        ]
        pages += [(f"{p}/i/{index_id}/{section}", None, ready) for section, ready in SECTION_READY.items()]
        for url, heading, ready in pages:
            page.goto(url)
            if heading:
                page.get_by_role("heading", level=1, name=heading).wait_for()
            page.locator(ready).first.wait_for()
            page.wait_for_timeout(300)  # debounced previews settle
            _check_page(page, heading or url.rsplit("/", 1)[-1], tabs=25)
    finally:
        context.close()
    assert not errors, errors


def _stored_feed_url(site: Site, index_id: str) -> str:
    """The full feed URL as the server keeps it (encrypted under its secret key)."""
    from control_plane.db import make_engine, make_sessionmaker
    from control_plane.index import feed_url
    from control_plane.index.models import Index

    engine = make_engine(site.database_url)
    try:
        with make_sessionmaker(engine)() as db:
            feed = db.get(Index, index_id).feed  # type: ignore[union-attr]
            return str(feed_url.unseal(feed["sealedUrl"], SECRET))
    finally:
        engine.dispose()


def test_index_settings_feed_integration_and_deletion(browser, site):  # type: ignore[no-untyped-def]  # noqa: F811
    index_id, profile_id = site.index_with_profile("lamps-settings")
    index_url = f"/v1/projects/{site.project_id}/indices/{index_id}"
    context, page, errors = _new_page(browser, {"width": 1280, "height": 900})
    feed_requests: list[str] = []
    page.on("request", lambda r: feed_requests.append(f"{r.method} {r.url}") if "/feed" in r.url else None)
    dialogs: list[str] = []

    def answer(dialog, accept: bool) -> None:  # type: ignore[no-untyped-def]
        dialogs.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    try:
        _sign_in(page, site)
        page.goto(f"{site.base}/#/p/{site.project_id}/i/{index_id}/settings")
        page.get_by_role("heading", level=1, name="Settings — lamps-settings").wait_for()
        page.get_by_text("No data source").wait_for()
        assert not feed_requests, feed_requests  # the index says it has none: no GET .../feed for a 404
        form = page.get_by_role("form", name="Data source")

        # a private address is refused; the alert names the field (details[].path)
        form.get_by_label("Feed URL").fill("http://127.0.0.1:9/feed.json")
        form.get_by_role("button", name="Save data source").click()
        assert _error_code(page, form) == "VALIDATION_ERROR"
        assert form.locator(".alert.error code").inner_text() == "url"

        # credentials are shown redacted; saving the redacted address keeps the real one. The host is
        # a public address literal (no name lookup here) and is never synced, so nothing fetches it.
        secret_url = "https://user:pass@93.184.216.34/x.json?token=abc"
        redacted = "https://***:***@93.184.216.34/x.json?token=***"
        form.get_by_label("Feed URL").fill(secret_url)
        form.get_by_label("Format").select_option("jsonl")
        form.get_by_label("Field names (optional)").fill("title=name")
        form.get_by_role("button", name="Save data source").click()
        page.get_by_text("Data source saved.").wait_for()
        expect(page.locator("#feed-url")).to_have_text(redacted)
        expect(form.get_by_label("Feed URL")).to_have_value(redacted)
        form.get_by_label("Format").select_option("csv")
        form.get_by_role("button", name="Save data source").click()
        expect(page.locator("#feed-status")).to_contain_text("· csv ·")
        with site.api() as http:
            feed = http.get(index_url + "/feed").json()
        assert feed["url"] == redacted and feed["format"] == "csv" and feed["fieldMap"] == {"title": "name"}
        assert _stored_feed_url(site, index_id) == secret_url
        page.reload()  # the form comes back filled from GET .../feed
        expect(page.get_by_role("form", name="Data source").get_by_label("Feed URL")).to_have_value(redacted)
        assert not [r for r in feed_requests if "/feed/sync" in r]

        # a connected integration is shown read-only; the data source is then refused with its code
        with site.api() as http:
            connected = http.put(index_url + "/integration", json={
                "platform": "shopware", "name": "Lea's shop", "url": "https://lamps.example", "version": "6.5"})
            assert connected.status_code == 200, connected.text
        page.reload()
        page.locator("#integration").wait_for()
        assert "shopware" in page.locator("#integration").inner_text()
        form = page.get_by_role("form", name="Data source")
        form.get_by_role("button", name="Save data source").click()
        assert _error_code(page, form) == "INDEX_HAS_INTEGRATION"
        _shot(page, "index-settings")
        page.once("dialog", lambda d: answer(d, True))
        page.get_by_role("button", name="Disconnect").click()
        page.locator("#integration-none").wait_for()
        with site.api() as http:
            assert http.get(index_url).json()["integration"] is None

        # remove the data source (after a confirmation)
        page.once("dialog", lambda d: answer(d, True))
        page.get_by_role("button", name="Remove data source").click()
        page.get_by_text("Data source removed.").wait_for()
        with site.api() as http:
            assert http.get(index_url + "/feed").status_code == 404

        # delete the profile
        page.goto(f"{site.base}/#/p/{site.project_id}/i/{index_id}/profiles/{profile_id}")
        page.get_by_role("button", name="Save profile").wait_for()
        page.once("dialog", lambda d: answer(d, True))
        page.get_by_role("button", name="Delete profile").click()
        page.get_by_role("button", name="Create profile").wait_for()
        with site.api() as http:
            assert http.get(f"{index_url}/profiles/{profile_id}").status_code == 404

        # delete the index: dismissing the confirmation keeps it, accepting deletes it
        page.goto(f"{site.base}/#/p/{site.project_id}/i/{index_id}/settings")
        page.get_by_role("heading", level=1, name="Settings — lamps-settings").wait_for()
        page.once("dialog", lambda d: answer(d, False))
        page.get_by_role("button", name="Delete index").click()
        page.wait_for_timeout(200)
        with site.api() as http:
            assert http.get(index_url).status_code == 200
        page.once("dialog", lambda d: answer(d, True))
        page.get_by_role("button", name="Delete index").click()
        page.get_by_role("heading", level=1, name="Indices").wait_for()
        expect(page.get_by_role("link", name="lamps-settings")).to_have_count(0)
        with site.api() as http:
            assert http.get(index_url).status_code == 404
        assert len(dialogs) == 5 and "lamps-settings" in dialogs[-1]
    finally:
        context.close()
    assert not errors, errors


def test_create_index_with_no_fields_infers_them(browser, site):  # type: ignore[no-untyped-def]  # noqa: F811
    """Issue 36, item 1: the create form says an empty field list is inferred, and creates an index
    without a mapping; the example fields make an explicit one; the settings page says which."""
    context, page, errors = _new_page(browser, {"width": 1280, "height": 900})
    try:
        _sign_in(page, site)
        form = page.get_by_role("form", name="Create index")
        form.get_by_text("the fields are inferred from the documents you upload").wait_for()
        expect(form.get_by_label("Infer new fields from uploaded documents")).to_be_checked()
        form.get_by_label("Index name").fill("lamps-inferred")
        form.get_by_role("button", name="Create index").click()
        page.get_by_role("heading", level=1, name="Catalog — lamps-inferred").wait_for()
        inferred_id = re.search(r"/i/([^/]+)/catalog", page.url).group(1)  # type: ignore[union-attr]
        with site.api() as http:
            url = f"/v1/projects/{site.project_id}/indices/{inferred_id}"
            assert http.get(url + "/mapping").json() == {"idField": "id", "fields": {}, "dynamic": True}
            task = http.post(url + "/documents", json=[{"id": "1", "name": "Brass lamp", "price": 40}]).json()
            assert wait_task(http, site.project_id, task["taskId"], timeout=60)["status"] == "succeeded"
        page.goto(f"{site.base}/#/p/{site.project_id}/i/{inferred_id}/settings")
        page.get_by_role("heading", level=1, name="Settings — lamps-inferred").wait_for()
        expect(page.get_by_role("form", name="Mapping").get_by_label("Infer new fields from uploaded documents")).to_be_checked()

        page.goto(f"{site.base}/#/p/{site.project_id}")
        page.get_by_role("heading", level=1, name="Indices").wait_for()
        form = page.get_by_role("form", name="Create index")
        form.get_by_label("Index name").fill("lamps-explicit")
        form.get_by_role("button", name="Add example product fields").click()
        expect(form.get_by_label("Infer new fields from uploaded documents")).not_to_be_checked()
        form.get_by_role("button", name="Create index").click()
        page.get_by_role("heading", level=1, name="Catalog — lamps-explicit").wait_for()
        explicit_id = re.search(r"/i/([^/]+)/catalog", page.url).group(1)  # type: ignore[union-attr]
        with site.api() as http:
            mapping = http.get(f"/v1/projects/{site.project_id}/indices/{explicit_id}/mapping").json()
        assert "dynamic" not in mapping and "price" in mapping["fields"]
        assert not errors, errors
    finally:
        context.close()

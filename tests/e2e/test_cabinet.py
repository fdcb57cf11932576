"""The merchant cabinet in a real browser (Playwright driving Debian's Chromium) against a real
``shopsearch serve`` whose emails go to a local SMTP mailbox: the first-day journey end to end,
and the error paths a merchant meets on the way.

Screenshots of the main pages are kept as test artifacts under test-artifacts/cabinet/ (ignored by
git), or under CABINET_SCREENSHOTS=/some/dir.
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
import uuid
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import expect

from benchmarks.common import load_products
from tests.fixtures.browser import new_page
from tests.fixtures.server import running_server
from tests.mailbox import Mailbox

PASSWORD = "correct horse battery"
ROOT = Path(__file__).resolve().parents[2]
SHOTS = os.environ.get("CABINET_SCREENSHOTS") or str(ROOT / "test-artifacts" / "cabinet")
TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def cabinet() -> Iterator[tuple[str, Mailbox]]:
    box = Mailbox()
    box.start()
    try:
        env = {"SHOPSEARCH_SMTP_HOST": "127.0.0.1", "SHOPSEARCH_SMTP_PORT": str(box.port)}
        with running_server(extra_env=env) as server:
            yield server.base, box
    finally:
        box.stop()


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    context, page = new_page(browser, timeout_ms=TIMEOUT_MS)
    yield page
    context.close()
    assert not page.errors, page.errors  # no uncaught JavaScript error on any page


def _shot(page, name: str) -> Path:  # type: ignore[no-untyped-def]
    """A full-page screenshot kept as a test artifact."""
    Path(SHOTS).mkdir(parents=True, exist_ok=True)
    path = Path(SHOTS) / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def _static_site(directory: Path) -> tuple[ThreadingHTTPServer, str]:
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _link(box: Mailbox, email: str, subject: str) -> str:
    body = box.body(box.wait_for(email, subject))
    match = re.search(r"https?://\S+token=\S+", body)
    assert match, body
    return match.group(0)


def _sign_up(page, base: str, box: Mailbox, email: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(base + "/#/signup")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Your name").fill("Mia Merchant")
    page.get_by_label("Shop or company name").fill("Mia's Gadgets")
    page.get_by_role("button", name="Create account").click()
    page.get_by_text("Account created").wait_for()
    # the emailed link opens the cabinet's page, which verifies
    link = _link(box, email, "verify")
    assert "/verify-email?token=" in link and "/v1/" not in link
    page.goto(link)
    page.get_by_text("Your email address is confirmed").wait_for()
    assert "token=" not in page.url  # taken off the address bar


def _sign_in(page, base: str, email: str, password: str = PASSWORD) -> None:  # type: ignore[no-untyped-def]
    page.goto(base + "/#/signin")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", level=1, name="Mia's Gadgets").wait_for()


def _error_code(page, scope=None) -> str:  # type: ignore[no-untyped-def]
    alert = (scope or page).locator(".alert.error").first
    alert.wait_for()
    return str(alert.get_attribute("data-code"))


def test_first_day_journey(page, browser, cabinet, tmp_path):  # type: ignore[no-untyped-def]
    base, box = cabinet
    email = f"mia-{uuid.uuid4().hex[:8]}@shop.test"
    shop_dir, other_dir = tmp_path / "shop", tmp_path / "other"
    shop_dir.mkdir()
    other_dir.mkdir()
    shop, shop_origin = _static_site(shop_dir)
    other, other_origin = _static_site(other_dir)
    try:
        # 1. sign up and verify from the email
        _sign_up(page, base, box, email)
        _shot(page, "verify-email")

        # 2. sign in: a wrong password first
        page.goto(base + "/#/signin")
        page.get_by_label("Email").fill(email)
        page.get_by_label("Password").fill("not the password")
        page.get_by_role("button", name="Sign in").click()
        assert _error_code(page) == "UNAUTHENTICATED"
        _shot(page, "signin-error")
        _sign_in(page, base, email)
        # a new organization says what comes next
        expect(page.locator(".empty-state")).to_contain_text("No project yet")
        page.reload()  # the HttpOnly refresh cookie restores the session; no token is in the page's storage
        page.get_by_role("heading", level=1, name="Mia's Gadgets").wait_for()
        storage = page.evaluate("({...localStorage, ...sessionStorage})")
        assert storage == {"shopsearch.signedIn": "1"}, storage  # only "this browser signed in"

        # 3. a project (then its indices with the first-run checklist), a public key (an invalid origin
        # first) and an index (an invalid mapping first)
        page.get_by_label("New project name").fill("Web shop")
        page.get_by_role("button", name="Create project").click()
        page.get_by_role("heading", level=1, name="Indices").wait_for()
        steps = page.locator(".checklist li")
        expect(steps).to_have_count(5)
        expect(steps.first).to_contain_text("Create an index")
        expect(steps.first.locator(".step-state")).to_have_text("Next")
        _shot(page, "first-run-checklist")
        page.get_by_role("link", name="API keys").click()
        page.get_by_role("heading", level=1, name="API keys").wait_for()
        page.get_by_label("Name").fill("storefront")
        page.get_by_label("Public (storefront search from shop pages)").check()
        page.get_by_label("Allowed origins (one per line)").fill("not-an-origin")
        page.get_by_role("button", name="Create key").click()
        assert _error_code(page) == "VALIDATION_ERROR"
        page.get_by_label("Allowed origins (one per line)").fill(shop_origin)
        page.get_by_role("button", name="Create key").click()
        public_key = page.locator("#new-key").inner_text()
        assert public_key.startswith("ss_pk_")
        page.get_by_role("button", name="Copy key").wait_for()
        _shot(page, "api-keys")

        page.get_by_role("link", name="Indices").click()
        page.get_by_role("heading", level=1, name="Indices").wait_for()
        page.get_by_label("Index name").fill("products")
        page.get_by_role("button", name="Add field").click()
        page.get_by_label("Field name").last.fill("title")
        page.get_by_label("facetable title").check()  # a text field can't be facetable
        page.get_by_role("button", name="Create index").click()
        alert = page.locator(".alert.error")
        assert _error_code(page) == "VALIDATION_ERROR"
        assert "facetable" in alert.inner_text()
        page.get_by_role("button", name="Remove field").last.click()
        page.get_by_role("button", name="Add example product fields").click()
        _shot(page, "create-index")
        page.get_by_role("button", name="Create index").click()
        page.get_by_role("heading", level=1, name="Catalog — products").wait_for()  # the next step: its catalog

        # 4. upload the Best Buy catalog; the first batch's answer is lost, then the network stays down
        catalog = tmp_path / "bestbuy.json"
        catalog.write_text(json.dumps(load_products()[:300]))
        keys_sent: list[str] = []
        failures = {"n": 0}

        def flaky(route):  # type: ignore[no-untyped-def]
            keys_sent.append(route.request.headers.get("idempotency-key", ""))
            failures["n"] += 1
            if failures["n"] == 1:
                route.fetch()  # the server accepts the batch, the answer never arrives
            route.abort()

        page.route("**/documents", flaky)
        page.get_by_label("Catalog file").set_input_files(str(catalog))
        page.get_by_role("button", name="Upload", exact=True).click()
        resume = page.get_by_role("button", name="Resume upload")
        resume.wait_for()
        assert _error_code(page) == "NETWORK"
        page.unroute("**/documents")
        page.on("request", lambda r: keys_sent.append(r.headers.get("idempotency-key", ""))
                if r.url.endswith("/documents") and r.method == "POST" else None)
        resume.click()
        page.get_by_text("Done: 300 documents indexed").wait_for()
        assert len(keys_sent) == 4 and len(set(keys_sent)) == 1 and keys_sent[0].startswith("cabinet-")
        page.get_by_text("300 documents ·").wait_for()
        rows = page.locator("tr[data-status]")
        rows.first.wait_for()
        assert rows.count() == 1, "the resent batch was enqueued twice"
        assert rows.first.get_attribute("data-status") == "succeeded"
        page.get_by_role("button", name="0", exact=True).click()  # the documents browser shows a document
        assert '"id": "0"' in page.locator("pre.doc").inner_text()
        _shot(page, "index")

        # 5. tune a profile in the live preview and save it
        page.get_by_role("link", name="Search profiles").click()
        page.get_by_role("heading", level=1, name="Search profiles — products").wait_for()
        page.get_by_label("Search", exact=True).fill("iphone")
        total = page.locator("#preview-total")
        expect(total).to_have_text(re.compile(r"^\d+ results"))
        page.locator(".hits mark").first.wait_for()  # highlights
        page.get_by_label("Search description").uncheck()  # search titles only
        page.get_by_label("Match", exact=True).select_option("or")
        page.get_by_label("Weight of name").fill("20")
        page.wait_for_timeout(400)  # the preview waits 250 ms after the last change
        expect(page.locator(".preview-results")).to_have_attribute("aria-busy", "false")
        assert int(total.inner_text().split()[0]) > 0
        assert "iphone" in page.locator(".hit-title").first.inner_text().lower()
        page.get_by_role("button", name="Create profile").click()
        page.get_by_text("Profile “storefront” saved").wait_for()
        # the editor now edits the saved profile: saving again updates it (no second profile, no 409)
        page.get_by_label("Weight of name").fill("25")
        page.get_by_role("button", name="Save profile").click()
        expect(page.locator(".alert.ok")).to_contain_text("Profile “storefront” saved")
        expect(page.get_by_role("button", name="Delete profile")).to_be_visible()
        snippet = page.locator("#snippet").input_value()
        assert public_key in snippet and "/v1/search/" in snippet
        _shot(page, "profile")
        # the section opens the saved profile again (it used to open a new one named like it: saving answered 409)
        page.get_by_role("link", name="Overview").click()
        page.get_by_role("heading", level=1, name="products").wait_for()
        page.get_by_role("link", name="Search profiles").click()
        expect(page.get_by_role("button", name="Save profile")).to_be_visible()
        expect(page.get_by_label("Profile name")).to_have_value("storefront")
        assert re.search(r"/profiles/prf_\w+", page.url), page.url
        page.get_by_role("combobox", name="Profile").select_option("new")
        expect(page.get_by_label("Profile name")).to_have_value("storefront 2")  # a name not taken yet

        # a mapping change that breaks the saved profile lists what to change first
        page.get_by_role("link", name="Settings").click()
        page.get_by_role("heading", level=1, name="Settings — products").wait_for()
        page.get_by_label("searchable name").uncheck()
        page.get_by_role("button", name="Save mapping").click()
        assert _error_code(page) == "MAPPING_BREAKS_CONFIG"
        assert "queryFields.name" in page.locator("ul.breaks").inner_text()

        # 6. the snippet on a page of the shop's origin searches; on another origin it is refused
        for directory in (shop_dir, other_dir):
            (directory / "index.html").write_text(f"<!doctype html><html><body>{snippet}</body></html>")
        storefront = browser.new_page()
        storefront.set_default_timeout(TIMEOUT_MS)
        storefront.goto(shop_origin + "/index.html")
        storefront.get_by_label("Search products").fill("iphone")
        storefront.locator("#shopsearch-results li").first.wait_for()
        assert "iphone" in storefront.locator("#shopsearch-results li").first.inner_text().lower()
        assert re.match(r"^\d+ results$", storefront.locator("#shopsearch-total").inner_text())
        _shot(storefront, "storefront")
        storefront.goto(other_origin + "/index.html")
        storefront.get_by_label("Search products").fill("iphone")
        expect(storefront.locator("#shopsearch-total")).not_to_have_text("")
        assert storefront.locator("#shopsearch-results li").count() == 0
        assert "origin" in storefront.locator("#shopsearch-total").inner_text().lower()
        storefront.close()

        # every first-run step is done: the checklist is gone
        page.get_by_role("link", name="Indices").click()
        page.get_by_role("link", name="products").wait_for()
        expect(page.locator(".checklist")).to_have_count(0)

        # sign out: a reload no longer restores the session
        page.get_by_role("button", name="Sign out").click()
        page.get_by_role("heading", level=1, name="Sign in").wait_for()
        assert page.evaluate("localStorage.length") == 0
        page.reload()
        page.get_by_role("heading", level=1, name="Sign in").wait_for()
        # signing in again lands on the project's indices
        page.get_by_label("Email").fill(email)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("heading", level=1, name="Indices").wait_for()
        page.get_by_role("link", name="products").wait_for()
    finally:
        shop.shutdown()
        other.shutdown()


def test_account_pages(page, browser, cabinet):  # type: ignore[no-untyped-def]
    base, box = cabinet
    email = f"sam-{uuid.uuid4().hex[:8]}@shop.test"
    _sign_up(page, base, box, email)

    # forgot password: the emailed link opens a form that posts reset-password
    page.goto(base + "/#/forgot")
    page.get_by_label("Email").fill(email)
    page.get_by_role("button", name="Email me a reset link").click()
    page.get_by_text("a reset link is on its way").wait_for()
    link = _link(box, email, "reset")
    assert "/reset-password?token=" in link and "/v1/" not in link
    page.goto(link)
    new_password = "a brand new password"
    page.get_by_label("New password", exact=True).fill(new_password)
    page.get_by_label("Repeat the new password").fill(new_password)
    page.get_by_role("button", name="Set new password").click()
    page.get_by_text("Your password is changed").wait_for()
    _sign_in(page, base, email, new_password)

    # a second browser signs in; the first lists both sessions and revokes the other
    other = browser.new_context()
    other_page = other.new_page()
    _sign_in(other_page, base, email, new_password)
    page.get_by_role("link", name="Account").click()
    page.get_by_role("heading", level=1, name="Account").wait_for()
    expect(page.get_by_role("button", name=re.compile("^Revoke session"))).to_have_count(2)
    _shot(page, "account")
    page.locator("tr", has_not_text="this browser").get_by_role("button", name=re.compile("^Revoke session")).click()
    expect(page.get_by_role("button", name=re.compile("^Revoke session"))).to_have_count(1)
    other_page.get_by_role("link", name="Account").click()  # its token works no more
    other_page.get_by_role("heading", level=1, name="Sign in").wait_for()
    other.close()

    # change password: a wrong current password is refused with the API's error
    page.get_by_label("Current password").fill("wrong password!")
    page.get_by_label("New password").fill("yet another password")
    page.get_by_role("button", name="Change password").click()
    assert _error_code(page) == "VALIDATION_ERROR"
    assert "currentPassword" in page.locator(".alert.error").inner_text()
    page.get_by_label("Current password").fill(new_password)
    page.get_by_role("button", name="Change password").click()
    page.get_by_text("Password changed.").wait_for()

    # members: adding an email that has no account shows the API's 404
    page.get_by_role("link", name="Projects & members").click()
    page.get_by_label("Email of a registered user").fill(f"nobody-{uuid.uuid4().hex[:6]}@shop.test")
    page.get_by_role("button", name="Add member").click()
    assert _error_code(page) == "NOT_FOUND"
    page.get_by_label("Plan", exact=True).select_option("pro")
    page.get_by_role("button", name="Change plan").click()
    page.get_by_text("The plan is now pro.").wait_for()
    _shot(page, "organization")

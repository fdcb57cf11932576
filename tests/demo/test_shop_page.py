"""README "Add search to a shop page": its HTML as written (the demo's keys and the server's address put
in) on a page of another origin, in Chromium. InstantSearch.js comes from the URL the README names,
answered here with the same file from npm (the tests reach no other host)."""

from __future__ import annotations

import functools
import json
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import httpx
from playwright.sync_api import expect

from tests.demo.conftest import open_page
from tests.fixtures.server import ROOT

INSTANTSEARCH = ROOT / "control_plane" / "demo" / "node_modules" / "instantsearch.js"


def _snippet() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Add search to a shop page", 1)[1]
    return re.search(r"```html\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


def test_the_readme_shop_page_works_as_written(demo, browser, tmp_path):
    html = _snippet()
    assert len(html.strip().splitlines()) <= 11
    url = demo.get("page") or demo["first"]["pageUrl"]  # a later run keeps the --origin of the first
    keys = {k: v[0] for k, v in parse_qs(urlsplit(url).fragment).items()}
    page_html = (html.replace("http://127.0.0.1:8000", demo["base"])
                 .replace('"ss_pk_…"', json.dumps(keys["key"])).replace('"pk_…"', json.dumps(keys["profile"])))
    cdn = re.search(r'src="(https://cdn\.jsdelivr\.net/npm/instantsearch\.js@([\d.]+)/dist/([\w.]+))"', html)
    assert cdn, "the README loads InstantSearch.js from jsDelivr"
    installed = json.loads((INSTANTSEARCH / "package.json").read_text())["version"]
    assert cdn.group(2) == installed, "the README names the InstantSearch.js version the demo bundles"

    # the README's `python3 -m http.server`: a real server on this machine (a page from nowhere may not
    # call a loopback address in Chromium), at the origin the demo's key allows
    (tmp_path / "shop.html").write_text(page_html)
    shop = ThreadingHTTPServer(("127.0.0.1", urlsplit(demo["shopOrigin"]).port or 80),
                               functools.partial(SimpleHTTPRequestHandler, directory=str(tmp_path)))
    threading.Thread(target=shop.serve_forever, daemon=True).start()
    context, page = open_page(browser)
    context.route(cdn.group(1), lambda route: route.fulfill(path=str(INSTANTSEARCH / "dist" / cdn.group(3)),
                                                            content_type="text/javascript"))
    calls: list[str] = []
    page.on("request", lambda r: calls.append(r.url) if "/v1/" in r.url else None)
    page.goto(f"{demo['shopOrigin']}/shop.html")
    expect(page.locator(".ais-Hits-item").first).to_be_visible()
    page.locator(".ais-SearchBox-input").fill("iphone")
    expect(page.locator(".ais-Hits-item mark").first).to_have_text("iPhone")
    names = page.locator(".ais-Hits-item").all_inner_texts()
    answer = httpx.post(f"{demo['base']}/v1/search/{keys['profile']}", json={"q": "iphone"},
                        headers={"Authorization": f"Bearer {keys['key']}", "Origin": demo["shopOrigin"]}).json()
    assert names == [hit["document"]["name"] for hit in answer["hits"]]
    assert calls and all(c == f"{demo['base']}/v1/multi-search" for c in calls), calls
    context.close()
    shop.shutdown()
    assert not page.problems, page.problems

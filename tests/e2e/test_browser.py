"""A real browser (headless Chromium) calls the storefront search with fetch() from a shop page.

The API runs in a real uvicorn server; two static servers on other ports are two shop origins,
one allowed by the public key and one not.
"""

from __future__ import annotations

import functools
import html
import json
import re
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.factories import make_key
from tests.fixtures.browser import CHROMIUM
from tests.fixtures.server import serve_in_thread
from tests.index.helpers import create_index, make_tenant, upload

PAGE = """<!doctype html><html><body><ul id="results"></ul><p id="status">loading</p><script>
fetch(%(url)s, {method: "POST", headers: {"Authorization": "Bearer " + %(key)s, "Content-Type": "application/json"},
                body: JSON.stringify({q: "iphone"})})
  .then(r => r.json().then(body => ({status: r.status, body})))
  .then(({status, body}) => {
    if (status !== 200) { document.getElementById("status").textContent = "refused " + status + " " + body.error.code; return; }
    for (const hit of body.hits) {
      const li = document.createElement("li"); li.textContent = hit.document.name;
      document.getElementById("results").appendChild(li);
    }
    document.getElementById("status").textContent = "found " + body.total;
  })
  .catch(e => { document.getElementById("status").textContent = "failed " + e; });
</script></body></html>"""


@pytest.fixture
def api_server(app):
    """The session's app behind a real HTTP server (its lifespan already runs)."""
    with serve_in_thread(app) as base:
        yield base


def _static_site(directory: Path) -> tuple[ThreadingHTTPServer, str]:
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _render(url: str, tmp_path: Path) -> str:
    assert CHROMIUM, "chromium is not installed: ./dev test installs it (apt-get install chromium)"
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'chromium-profile'}", "--virtual-time-budget=10000", "--dump-dom", url],
        capture_output=True, text=True, timeout=60,
    )
    return result.stdout


def test_storefront_search_from_a_real_browser(app, client, api_server, tmp_path):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    upload(client, tenant, index["id"], [
        {"id": "a", "name": "Apple iPhone 7 128GB", "brand": "Apple", "price": 449.0},
        {"id": "b", "name": "Apple iPhone 8 64GB", "brand": "Apple", "price": 599.0},
        {"id": "c", "name": "Samsung Galaxy S8", "brand": "Samsung", "price": 499.0},
    ])
    profile = client.post(tenant.url(index["id"], "/profiles"), headers=tenant.headers,
                          json={"name": "web", "queryFields": {"name": {"weight": 5}}}).json()

    allowed_dir, blocked_dir = tmp_path / "allowed", tmp_path / "blocked"
    allowed_dir.mkdir()
    blocked_dir.mkdir()
    allowed_site, allowed_origin = _static_site(allowed_dir)
    blocked_site, blocked_origin = _static_site(blocked_dir)
    try:
        key = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=[allowed_origin])
        page = PAGE % {"url": json.dumps(f"{api_server}/v1/search/{profile['profileKey']}"), "key": json.dumps(key)}
        (allowed_dir / "index.html").write_text(page)
        (blocked_dir / "index.html").write_text(page)

        shown = _render(f"{allowed_origin}/index.html", tmp_path)
        assert 'id="status">found 2<' in shown, shown
        names = [html.unescape(n) for n in re.findall(r"<li>(.*?)</li>", shown)]
        assert sorted(names) == ["Apple iPhone 7 128GB", "Apple iPhone 8 64GB"]

        refused = _render(f"{blocked_origin}/index.html", tmp_path)
        assert 'id="status">refused 403 ORIGIN_NOT_ALLOWED<' in refused, refused
        assert "<li>" not in refused
    finally:
        allowed_site.shutdown()
        blocked_site.shutdown()

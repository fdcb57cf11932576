"""The API process serves the cabinet: its pages at / and at the emailed links' paths, its files
under /cabinet/, without shadowing the API, the docs or the probes (both backends)."""

from __future__ import annotations

import re

import pytest

from tests.auth.helpers import new_client, unique_email

PAGES = ["/", "/verify-email?token=abc", "/reset-password?token=abc"]


@pytest.mark.parametrize("path", PAGES)
def test_the_cabinet_pages_are_served(app, path):
    response = new_client(app).get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/cabinet/app.js">' in response.text
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert response.headers["referrer-policy"] == "no-referrer"  # the token in the URL goes nowhere


def test_every_module_the_page_imports_is_served(app):
    client = new_client(app)
    seen: set[str] = set()
    todo = ["/cabinet/app.js", "/cabinet/cabinet.css"]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        response = client.get(path)
        assert response.status_code == 200, path
        if path.endswith(".js"):
            assert "javascript" in response.headers["content-type"]
            base = path.rsplit("/", 1)[0]
            for spec in re.findall(r'from "(\.{1,2}/[^"]+)"', response.text):
                parts = (base + "/" + spec).split("/")
                resolved: list[str] = []
                for part in parts:
                    if part == "..":
                        resolved.pop()
                    elif part not in (".", ""):
                        resolved.append(part)
                todo.append("/" + "/".join(resolved))
    assert "/cabinet/pages/profiles.js" in seen and "/cabinet/upload.js" in seen


def test_the_api_docs_and_probes_are_not_shadowed(app):
    client = new_client(app)
    assert client.get("/health").status_code == 200
    assert client.get("/openapi.json").json()["info"]["title"] == "shopsearch"
    assert client.get("/docs").status_code == 200
    unknown = client.get("/v1/no-such-route")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "NOT_FOUND"
    assert client.post("/verify-email").status_code == 405  # the page is GET only
    missing = client.get("/cabinet/no-such-file.js")
    assert missing.status_code == 404
    paths = client.get("/openapi.json").json()["paths"]
    assert "/" not in paths and "/verify-email" not in paths  # the cabinet is not part of the API


def test_emailed_links_open_cabinet_pages(app, mailbox):
    """The reset link used to point at POST /v1/auth/reset-password: clicking it answered 405."""
    client = new_client(app)
    email = unique_email()
    assert client.post("/v1/auth/register", json={"email": email, "password": "correct horse battery"}).status_code == 201
    assert client.post("/v1/auth/forgot-password", json={"email": email}).status_code == 202
    for subject, page in (("verify", "/verify-email"), ("reset", "/reset-password")):
        body = mailbox.body(mailbox.wait_for(email, subject))
        link = re.search(r"https?://\S+", body)
        assert link, body
        assert link.group(0).startswith(f"http://testserver{page}?token=")
        opened = client.get(link.group(0))
        assert opened.status_code == 200 and opened.headers["content-type"].startswith("text/html")

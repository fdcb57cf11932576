"""No page can be framed (issue 30, finding 5): every HTML answer of every route carries
``X-Frame-Options: DENY`` and a CSP ``frame-ancestors 'none'``, and the static mounts never answer
HTML (``/cabinet/index.html`` and ``/demo/static/index.html`` served the cabinet and the demo
without their headers: a same-site page framed the keys page)."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.routing import iter_route_contexts
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from tests.auth.helpers import new_client

FILLER = "x"  # a value for every path parameter


def _frame_safe(response) -> bool:  # type: ignore[no-untyped-def]
    csp = response.headers.get("content-security-policy", "")
    return response.headers.get("x-frame-options") == "DENY" and "frame-ancestors 'none'" in csp


def _get_paths(app) -> list[str]:  # type: ignore[no-untyped-def]
    """Every route answering GET (included routers' too), path parameters filled in."""
    paths = []
    for context in iter_route_contexts(app.routes):
        if not isinstance(context.original_route, Mount) and "GET" in (context.methods or ()):
            paths.append(re.sub(r"\{[^}]+\}", FILLER, context.path))
    assert "/v1/orgs" in paths  # the routes of included routers are there
    return paths


def _static_mounts(app) -> list[tuple[str, Path]]:  # type: ignore[no-untyped-def]
    mounts = []
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, Mount) and isinstance(route.app, StaticFiles):
            directory = route.app.directory
            assert directory is not None
            mounts.append((context.path, Path(directory)))
    return mounts


def test_every_html_answer_refuses_framing(app):  # type: ignore[no-untyped-def]
    html = []
    for path in _get_paths(app):
        response = new_client(app).get(path)  # an address each: /status and /v1/status share a per-IP limit
        if response.headers.get("content-type", "").startswith("text/html"):
            html.append(path)
            assert _frame_safe(response), (path, dict(response.headers))
            assert response.headers.get("x-content-type-options") == "nosniff", path
    # the pages known today are among them (the test finds new ones by itself)
    assert {"/", "/verify-email", "/reset-password", "/demo", "/status", "/docs", "/redoc"} <= set(html), html


def test_a_page_keeps_its_own_policy_and_gets_frame_ancestors_added(app):  # type: ignore[no-untyped-def]
    client = new_client(app)
    cabinet = client.get("/")
    assert "script-src 'self'" in cabinet.headers["content-security-policy"]  # the strict policy stands
    assert cabinet.headers["content-security-policy"].count("frame-ancestors") == 1
    docs = client.get("/docs")  # Swagger UI brings no policy of its own: framing is refused all the same
    assert docs.status_code == 200 and _frame_safe(docs)


def test_static_mounts_never_answer_html(app):  # type: ignore[no-untyped-def]
    client = new_client(app)
    mounts = _static_mounts(app)
    assert {path for path, _ in mounts} >= {"/cabinet", "/demo/static", "/docs-assets"}
    for prefix, directory in mounts:
        files = [p for p in directory.rglob("*") if p.is_file()]
        assert files, prefix
        for file in files:
            response = client.get(f"{prefix}/{file.relative_to(directory).as_posix()}")
            if file.suffix.lower() in (".html", ".htm"):
                assert response.status_code == 404, (prefix, file.name)
                assert response.json()["error"]["code"] == "NOT_FOUND"
            else:
                assert response.status_code == 200, (prefix, file.name)
                assert not response.headers["content-type"].startswith("text/html"), (prefix, file.name)
        for listing in (f"{prefix}/", prefix):  # no directory page either
            response = client.get(listing)
            assert response.status_code == 404 or not response.headers.get("content-type", "").startswith("text/html")
    for path in ("/cabinet/index.html", "/demo/static/index.html", "/cabinet/INDEX.HTML", "/cabinet/./index.html"):
        assert client.get(path).status_code == 404, path

"""The demo storefront page (``shopsearch demo``) at ``/demo``, and the JavaScript client's browser
file for shop pages at ``/js/shopsearch.js`` (an ES module at ``/js/shopsearch.mjs``).

The page is InstantSearch.js on the ``shopsearch`` client (``clients/js``), bundled by npm and esbuild
from ``src/`` into ``static/build/`` (``package.json``, ``build.mjs``; ``./dev`` builds it when its
sources change), so the page loads no code from elsewhere: its scripts stay ``'self'``. The browser
calls the storefront routes with a public key, as a real shop page would; the key, the profile key and
the suggest key come in the URL's fragment (``/demo#key=ss_pk_…&profile=…&suggest=…``, printed by
``shopsearch demo``), so they never reach a server log. Product images come from the shop's CDN.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from control_plane.page_headers import AssetFiles

STATIC = Path(__file__).parent / "static"
BUILD = STATIC / "build"
# Product images come from the catalog's CDN (any https host); scripts, styles and calls stay on this origin.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}
HOW_TO_BUILD = ("they are built with npm from control_plane/demo: install Node.js 20+ and run ./dev serve "
                "(or scripts/build-js.sh serve)")
NOT_BUILT = ('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>shopsearch demo store</title></head>'
             f"<body><h1>The demo page's scripts are not built</h1><p>{HOW_TO_BUILD}.</p></body></html>")
CLIENT_HEADERS = {
    "Access-Control-Allow-Origin": "*",  # any shop page may load it, as a module too
    "Cache-Control": "public, max-age=300",
    "X-Content-Type-Options": "nosniff",
}


async def _page() -> Response:
    if not (BUILD / "demo.js").exists():
        return HTMLResponse(NOT_BUILT, status_code=503, headers=PAGE_HEADERS)
    return FileResponse(STATIC / "index.html", media_type="text/html", headers=PAGE_HEADERS)


async def _slash() -> RedirectResponse:
    return RedirectResponse("/demo", status_code=308)


def _client_file(name: str, media_type: str):  # type: ignore[no-untyped-def]
    async def serve() -> Response:
        path = BUILD / name
        if not path.exists():
            return Response(f"// the shopsearch client is not built: {HOW_TO_BUILD}\n",
                            status_code=503, media_type=media_type, headers={"Cache-Control": "no-store"})
        return FileResponse(path, media_type=media_type, headers=CLIENT_HEADERS)

    return serve


def install_demo(app: FastAPI) -> None:
    app.add_api_route("/demo", _page, methods=["GET", "HEAD"], include_in_schema=False)
    app.add_api_route("/demo/", _slash, methods=["GET", "HEAD"], include_in_schema=False)
    app.mount("/demo/static", AssetFiles(directory=str(STATIC)), name="demo")
    for name, media_type in (("shopsearch.js", "text/javascript"), ("shopsearch.mjs", "text/javascript")):
        app.add_api_route(f"/js/{name}", _client_file(name, media_type), methods=["GET", "HEAD"],
                          include_in_schema=False)

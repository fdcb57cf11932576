"""The demo storefront page (``shopsearch demo``): a static page the API process serves at ``/demo``.

A shop's search page in miniature, no build step: ``static/`` (HTML, one ES module, CSS) is package
data. The browser calls the public storefront route ``POST /v1/search/{profileKey}`` with a public
key, as a real shop page would; the key and profile key come in the URL's fragment
(``/demo#key=ss_pk_…&profile=…``, printed by ``shopsearch demo``), so they never reach a server log.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"
# Product images come from the catalog's CDN (https); scripts, styles and calls stay on this origin.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


async def _page() -> FileResponse:
    return FileResponse(STATIC / "index.html", media_type="text/html", headers=PAGE_HEADERS)


async def _slash() -> RedirectResponse:
    return RedirectResponse("/demo", status_code=308)


def install_demo(app: FastAPI) -> None:
    app.add_api_route("/demo", _page, methods=["GET"], include_in_schema=False)
    app.add_api_route("/demo/", _slash, methods=["GET"], include_in_schema=False)
    app.mount("/demo/static", StaticFiles(directory=STATIC), name="demo")

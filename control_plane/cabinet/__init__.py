"""The merchant cabinet: a single-page app of plain ES modules, served by the API process.

No build step and nothing fetched from elsewhere: ``static/`` is shipped as package data. The app
calls only the public REST API. Its pages are ``/#/…`` routes; the server answers the app's HTML at
``/`` and at the two pages emailed links open (``/verify-email``, ``/reset-password``), and its
files under ``/cabinet/`` (never the HTML: a page comes only from its route, with its headers).
Nothing here shadows ``/v1``, ``/docs``, ``/openapi.json`` or the probes.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse

from control_plane.page_headers import AssetFiles

STATIC = Path(__file__).parent / "static"
ENTRY_PAGES = ("/", "/verify-email", "/reset-password")
# The page holds a session token in memory: no framing (clickjacking), no script or connection
# outside this origin, and no token-bearing URL (verify, reset) sent on as a Referer.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


async def _page() -> FileResponse:
    return FileResponse(STATIC / "index.html", media_type="text/html", headers=PAGE_HEADERS)


def install_cabinet(app: FastAPI) -> None:
    for path in ENTRY_PAGES:
        app.add_api_route(path, _page, methods=["GET"], include_in_schema=False)
    app.mount("/cabinet", AssetFiles(directory=str(STATIC)), name="cabinet")

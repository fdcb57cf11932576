"""CORS for the storefront routes only, through Starlette's CORSMiddleware.

Browsers call ``/v1/search/…``, ``/v1/multi-search``, ``/v1/suggest/…`` and ``/v1/events`` (clicks)
from shop pages:
the preflight is answered for every origin without credentials, and real answers carry
``Access-Control-Allow-Origin`` for the calling origin (and expose ``Retry-After``). Whether that origin may use the key is
decided on the real request (access.py). Management routes get no CORS headers.
"""

from __future__ import annotations

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

STOREFRONT_PREFIXES = ("/v1/search/", "/v1/multi-search", "/v1/suggest/", "/v1/events")


class StorefrontCORS:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.cors = CORSMiddleware(
            app,
            allow_origin_regex=r".*",
            allow_methods=["POST", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type"],
            # a page's script reads when to try again after a 429 or 503 (not a CORS-safelisted header)
            expose_headers=["Retry-After"],
            allow_credentials=False,
            max_age=600,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(STOREFRONT_PREFIXES):
            await self.cors(scope, receive, send)
        else:
            await self.app(scope, receive, send)

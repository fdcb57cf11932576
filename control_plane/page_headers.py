"""Every HTML answer refuses framing; static mounts never answer HTML.

A page is served by its own route with its own headers (the cabinet's and the demo's strict CSP).
Two rules keep another route from serving a page without them (clickjacking: a same-site page
framed the cabinet's keys page through ``/cabinet/index.html``):

- :class:`AssetFiles` is the ``StaticFiles`` of every mount: it answers 404 for ``.html`` files,
  so a page's HTML is reachable only at its route;
- :class:`FrameGuard` gives any ``text/html`` answer the framing headers it lacks
  (``X-Frame-Options: DENY``, a CSP ``frame-ancestors 'none'`` — added to a page's own policy when
  that policy names no ``frame-ancestors``) and ``X-Content-Type-Options: nosniff``.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

FRAME_ANCESTORS = "frame-ancestors 'none'"
PAGE_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml")


class AssetFiles(StaticFiles):
    """``StaticFiles`` for scripts, styles and images: an HTML file (or a directory) is 404."""

    def __init__(self, *, directory: str) -> None:
        super().__init__(directory=directory, html=False)

    async def get_response(self, path: str, scope: Scope) -> Response:
        if path.lower().rstrip("/").endswith(PAGE_SUFFIXES):
            raise HTTPException(status_code=404)
        return await super().get_response(path, scope)


def _guarded(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    names = {name.lower(): i for i, (name, _) in enumerate(headers)}
    out = list(headers)
    csp = names.get(b"content-security-policy")
    if csp is None:
        out.append((b"content-security-policy", FRAME_ANCESTORS.encode()))
    elif b"frame-ancestors" not in out[csp][1].lower():
        out[csp] = (out[csp][0], out[csp][1].rstrip(b"; ") + b"; " + FRAME_ANCESTORS.encode())
    if b"x-frame-options" not in names:
        out.append((b"x-frame-options", b"DENY"))
    if b"x-content-type-options" not in names:
        out.append((b"x-content-type-options", b"nosniff"))
    return out


class FrameGuard:
    """ASGI middleware: the framing headers on every ``text/html`` answer (whatever route made it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def guarded_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.get("headers") or []
                kind = next((value for name, value in headers if name.lower() == b"content-type"), b"")
                if kind.lower().lstrip().startswith((b"text/html", b"application/xhtml")):
                    message = {**message, "headers": _guarded(list(headers))}
            await send(message)

        await self.app(scope, receive, guarded_send)

"""The OpenAPI document describes what is built, and ``/docs`` works offline.

Each operation's credentials and error answers are derived from the access dependencies its route
uses (``control_plane.access``), so they cannot drift from what the code enforces:

- the security requirements (secret key, public key, session token — all HTTP bearer) per label;
- 401/403 where credentials are checked, 404 for path ids, 413 for bodies, 503 where the database
  or the search workers are used, 409 on writes, 429 on rate-limited routes;
- every error answer has the spec's body ``{"error": {code, message, details?}}``.

FastAPI documents a 422 ``HTTPValidationError``; this service answers 400 ``VALIDATION_ERROR`` (or
``PROFILE_INVALID``) instead. Swagger UI and ReDoc load their assets from the installed
``fastapi_offline`` package (mounted under ``/docs-assets``), never from a CDN.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.staticfiles import StaticFiles
from starlette.responses import HTMLResponse

from control_plane import access
from control_plane.storefront.endpoints import storefront_caller

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "details": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["path", "message"],
                        "properties": {"path": {"type": "string"}, "message": {"type": "string"}},
                    },
                },
            },
        }
    },
}

SECURITY_SCHEMES: dict[str, dict[str, Any]] = {
    "sessionToken": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
        "description": "A cabinet session: the `accessToken` of `POST /v1/auth/login`.",
    },
    "secretKey": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "ss_sk_…",
        "description": "A project's secret API key (read or full access, optionally scoped to one index).",
    },
    "publicKey": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "ss_pk_…",
        "description": "A public key: storefront search and suggest only, from one of its allowed origins "
        "(the browser's `Origin` header).",
    },
}

SESSION: dict[str, list[str]] = {"sessionToken": []}
SECRET: dict[str, list[str]] = {"secretKey": []}
PUBLIC: dict[str, list[str]] = {"publicKey": []}

MEANING = {
    400: "VALIDATION_ERROR (or PROFILE_INVALID): malformed JSON, wrong types, missing fields; "
    "`details[].path` names each",
    401: "UNAUTHENTICATED: missing, malformed, expired or revoked credentials",
    403: "FORBIDDEN (role or key access too low, public key off the storefront), EMAIL_NOT_VERIFIED, "
    "IMPERSONATION_FORBIDDEN, INTEGRATION_KEY_ONLY, ORIGIN_NOT_ALLOWED or QUOTA_EXCEEDED",
    404: "NOT_FOUND: unknown id, an id of another organization or project, or another index for an "
    "index-scoped key",
    409: "CONFLICT (duplicate name, state that does not allow it, a concurrent write), or "
    "MAPPING_BREAKS_CONFIG, MAPPING_MANAGED_BY_INTEGRATION, INDEX_HAS_INTEGRATION, IDEMPOTENCY_KEY_REUSED",
    413: "PAYLOAD_TOO_LARGE: a body over the size limit, or more than 1000 documents",
    429: "RATE_LIMITED: try again after `Retry-After` seconds",
    503: "UNAVAILABLE: a dependency (the database, the search workers) is down, or too many password checks "
    "are already waiting; the message says which",
}

# Routes limited by ``runtime.limiter`` / ``runtime.quotas`` (sign-in, recovery, search per second).
RATE_LIMITED = re.compile(
    r"^/v1/(auth/(register|login|refresh|verify-email|forgot-password|reset-password|impersonate|change-password)"
    r"|(search|suggest)/.*|projects/.*/indices/.*/(search|suggest))$"
)
# Writes that no constraint can refuse (searches store nothing; sign-in and sessions only add rows
# or revoke): every other write can answer 409 (duplicates, states, a concurrent change).
NO_CONFLICT = re.compile(r"^/v1/((search|suggest)/.*|projects/.*/indices/.*/(search|suggest)|auth/(?!register$).*)$")
NO_DATABASE = {"/health", "/ready"}
# Sign-in routes that take their own proof (a password, a refresh cookie, a one-time code): 401 when it fails.
OWN_PROOF = {"/v1/auth/login", "/v1/auth/refresh", "/v1/auth/impersonate"}


def _calls(dependant: Any) -> set[Any]:
    found: set[Any] = set()
    for dep in dependant.dependencies:
        if dep.call is not None:
            found.add(dep.call)
        found |= _calls(dep)
    return found


def _dependency(alias: Any) -> Any:
    """The callable behind an ``Annotated[..., Depends(fn)]`` label of ``control_plane.access``."""
    return alias.__metadata__[-1].dependency


SESSION_ONLY = {_dependency(a) for a in (access.SignedIn, access.OrgMember, access.OrgAdmin, access.OrgOwner,
                                         access.ProjectMemberSignedIn, access.ProjectAdminSignedIn)}
SECRET_ONLY = {_dependency(a) for a in (access.SecretKeyCaller, access.IntegrationKey)}
SESSION_OR_SECRET = {access.index_reader} | {
    _dependency(a) for a in (access.CurrentPrincipal, access.ProjectRead, access.ProjectWrite,
                             access.IndexRead, access.IndexWrite)
}


def route_security(route: Any) -> list[dict[str, list[str]]]:
    """The credentials a route accepts, from the access labels it uses (spec §5), narrowest first."""
    calls = _calls(route.dependant)
    if storefront_caller in calls:
        return [PUBLIC, SECRET]
    if calls & SESSION_ONLY:
        return [SESSION]
    if calls & SECRET_ONLY:
        return [SECRET]
    if calls & SESSION_OR_SECRET:
        return [SESSION, SECRET]
    return []


def _error_statuses(route: Any, method: str, operation: dict[str, Any]) -> set[int]:
    statuses: set[int] = set()
    path = route.path_format
    if operation.get("security"):
        statuses |= {401, 403}
    if path in OWN_PROOF:
        statuses.add(401)
    if "{" in path:
        statuses.add(404)
    if "requestBody" in operation:
        statuses.add(413)
    if method != "get" and path.startswith("/v1/") and not NO_CONFLICT.match(path):
        statuses.add(409)
    if RATE_LIMITED.match(path):
        statuses.add(429)
    if path not in NO_DATABASE:
        statuses.add(503)
    return statuses


def _document(schema: dict[str, Any], routes: list[Any]) -> None:
    error_content = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for route in routes:
        path_item = schema["paths"].get(route.path_format, {})
        for method in route.methods or ():
            operation = path_item.get(method.lower())
            if operation is None:
                continue
            security = route_security(route)
            if security:
                operation["security"] = security
            responses = operation.setdefault("responses", {})
            if responses.pop("422", None) is not None:
                responses.setdefault("400", {"description": MEANING[400]})
            for status in _error_statuses(route, method.lower(), operation):
                responses.setdefault(str(status), {"description": MEANING[status]})
            for status, response in responses.items():
                if status.startswith(("4", "5")) and not response.get("content"):
                    response["content"] = error_content
                if status == "429":
                    response.setdefault("headers", {})["Retry-After"] = {
                        "description": "Seconds to wait before trying again",
                        "schema": {"type": "string"},
                    }


def install_openapi(app: FastAPI) -> None:
    def build() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        components = schema.setdefault("components", {})
        components.setdefault("schemas", {})["Error"] = ERROR_SCHEMA
        for name in ("HTTPValidationError", "ValidationError"):
            components["schemas"].pop(name, None)
        components["securitySchemes"] = SECURITY_SCHEMES
        # routes of included routers come as contexts carrying their prefixed path
        routes = [c for c in iter_route_contexts(app.routes) if isinstance(c.original_route, APIRoute)]
        _document(schema, [c for c in routes if c.include_in_schema])
        app.openapi_schema = schema
        return schema

    app.openapi = build  # type: ignore[method-assign]
    install_docs(app)


DOCS_ASSETS = "/docs-assets"


def install_docs(app: FastAPI) -> None:
    """``/docs`` (Swagger UI) and ``/redoc`` from the assets of the installed ``fastapi_offline``.

    The app must be created with ``docs_url=None, redoc_url=None`` (FastAPI's own pages use a CDN).
    """
    assets = resources.files("fastapi_offline") / "static"
    app.mount(DOCS_ASSETS, StaticFiles(directory=str(assets)), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} — API",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon.png",
            swagger_ui_parameters={"persistAuthorization": True},
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url,
            title=f"{app.title} — API",
            redoc_js_url=f"{DOCS_ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{DOCS_ASSETS}/favicon.png",
            with_google_fonts=False,
        )

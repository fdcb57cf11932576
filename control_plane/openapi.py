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

import copy
import re
from importlib import resources
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.responses import HTMLResponse

from control_plane.access import labels as access
from control_plane.auth.endpoints import SAME_ORIGIN
from control_plane.openapi_checks import CHECKED_BEYOND_SCHEMA
from control_plane.page_headers import AssetFiles
from control_plane.storefront.endpoints import storefront_caller
from control_plane.wire import COMPONENT_MARK
from shared.jsonvalue import INT64
from shared.limits import FILTER_SCHEMAS

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
# ids named in the body rather than the path (a multi-search's profile keys): unknown ones are 404s
BODY_IDS = {"/v1/multi-search"}
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
    if SAME_ORIGIN.dependency in _calls(route.dependant):  # another site's Origin is refused
        statuses.add(403)
    if path in OWN_PROOF:
        statuses.add(401)
    if "{" in path or path in BODY_IDS:
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
            rules = CHECKED_BEYOND_SCHEMA.get(f"{method.upper()} {route.path_format}")
            if rules:
                bad_request = responses.setdefault("400", {"description": MEANING[400]})
                bad_request["description"] += ". Beyond the schema: " + "; ".join(
                    f"`{name}`: {rule}" for name, rule in rules.items())
                bad_request["x-checked-beyond-schema"] = rules
            for status, response in responses.items():
                if status.startswith(("4", "5")) and not response.get("content"):
                    response["content"] = error_content
                if status == "429":
                    response.setdefault("headers", {})["Retry-After"] = {
                        "description": "Seconds to wait before trying again",
                        "schema": {"type": "string"},
                    }


# --------------------------------------------------------------------------- numbers and free JSON
_REF_JSON = "#/components/schemas/JsonValue"
NUMBER_RANGE = {"minimum": INT64[0], "maximum": INT64[1]}
# Any JSON value a request may hold: every number within the 64-bit integer range (shared.jsonvalue).
JSON_VALUE: dict[str, Any] = {
    "description": "Any JSON value; every number within the 64-bit integer range",
    "anyOf": [
        {"type": "string"}, {"type": "number", **NUMBER_RANGE}, {"type": "boolean"}, {"type": "null"},
        {"type": "array", "items": {"$ref": _REF_JSON}},
        {"type": "object", "additionalProperties": {"$ref": _REF_JSON}},
    ],
}
_ANNOTATIONS = {"title", "description", "default", "examples", "deprecated"}
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "if", "then", "else", "propertyNames", "contains")


def _is_any(schema: Any) -> bool:
    return isinstance(schema, dict) and not (set(schema) - _ANNOTATIONS)


def _exact_json(schema: dict[str, Any]) -> None:
    """What JsonBodyRoute refuses, stated: every integer and number of ``schema`` within 64 bits, and
    every schema that takes any value (``{}``, an object of anything) takes a :data:`JSON_VALUE`."""
    component = schema.pop(COMPONENT_MARK, None)
    if component is not None:
        kept = {key: value for key, value in schema.items() if key in _ANNOTATIONS}
        schema.clear()
        schema.update({"$ref": f"#/components/schemas/{component}", **kept})
        return
    types = schema.get("type")
    kinds = set(types) if isinstance(types, list) else {types}
    if kinds & {"integer", "number"}:
        if "minimum" not in schema and "exclusiveMinimum" not in schema:
            schema["minimum"] = INT64[0]
        if "maximum" not in schema and "exclusiveMaximum" not in schema:
            schema["maximum"] = INT64[1]
        if "integer" in kinds:
            schema.setdefault("format", "int64")
    if "object" in kinds and schema.get("additionalProperties") is True:
        schema["additionalProperties"] = {"$ref": _REF_JSON}
    for key in _SUBSCHEMAS:
        if isinstance(schema.get(key), dict):
            schema[key] = _exact_sub(schema[key])
    for key in _SUBSCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            schema[key] = [_exact_sub(sub) if isinstance(sub, dict) else sub for sub in schema[key]]
    properties = schema.get("properties")
    if isinstance(properties, dict):
        schema["properties"] = {name: _exact_sub(sub) if isinstance(sub, dict) else sub
                                for name, sub in properties.items()}


def _exact_sub(sub: dict[str, Any]) -> dict[str, Any]:
    """``sub`` made exact: a schema that takes anything becomes a JSON value."""
    if _is_any(sub):
        return {"$ref": _REF_JSON, **sub}
    _exact_json(sub)
    return sub


def _exact_json_everywhere(document: dict[str, Any]) -> None:
    for name, component in document["components"]["schemas"].items():
        if name != "JsonValue":
            _exact_json(component)
    for item in document["paths"].values():
        for operation in item.values():
            holders = [p for p in operation.get("parameters", [])]
            holders += list((operation.get("requestBody") or {}).get("content", {}).values())
            holders += [c for r in operation.get("responses", {}).values() for c in r.get("content", {}).values()]
            for holder in holders:
                if isinstance(holder.get("schema"), dict):
                    holder["schema"] = _exact_sub(holder["schema"])


def _inline_profile(create: dict[str, Any]) -> dict[str, Any]:
    """The ``profile`` of a secret search: the body of POST profiles, its ``name`` accepted and ignored."""
    inline = copy.deepcopy(create)
    inline["title"] = "InlineProfile"
    inline["required"] = [name for name in inline.get("required", []) if name != "name"]
    if not inline["required"]:
        del inline["required"]
    inline["properties"]["name"] = {**inline["properties"]["name"], "description": "Accepted and ignored."}
    return inline


def install_openapi(app: FastAPI) -> None:
    def build() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        components = schema.setdefault("components", {})
        components.setdefault("schemas", {})["Error"] = ERROR_SCHEMA
        components["schemas"]["JsonValue"] = JSON_VALUE
        components["schemas"].update(FILTER_SCHEMAS)
        components["schemas"]["InlineProfile"] = _inline_profile(components["schemas"]["ProfileCreate"])
        for name in ("HTTPValidationError", "ValidationError"):
            components["schemas"].pop(name, None)
        components["securitySchemes"] = SECURITY_SCHEMES
        # routes of included routers come as contexts carrying their prefixed path
        routes = [c for c in iter_route_contexts(app.routes) if isinstance(c.original_route, APIRoute)]
        _document(schema, [c for c in routes if c.include_in_schema])
        _exact_json_everywhere(schema)
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
    app.mount(DOCS_ASSETS, AssetFiles(directory=str(assets)), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} — API",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon.png",
            swagger_ui_parameters={"persistAuthorization": False},  # a pasted key is not kept in localStorage
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

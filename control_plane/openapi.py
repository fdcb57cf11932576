"""The OpenAPI document describes what is built: validation failures are 400 with the error body.

FastAPI documents a 422 ``HTTPValidationError`` on every route with a body or parameters; this
service answers those with 400 ``VALIDATION_ERROR`` (or ``PROFILE_INVALID``) in the spec's body.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

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


def install_openapi(app: FastAPI) -> None:
    def build() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components["Error"] = ERROR_SCHEMA
        for name in ("HTTPValidationError", "ValidationError"):
            components.pop(name, None)
        error_ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        for path_item in schema.get("paths", {}).values():
            for operation in path_item.values():
                responses = operation.get("responses", {})
                if responses.pop("422", None) is not None and "400" not in responses:
                    responses["400"] = {"description": "VALIDATION_ERROR: the request is not valid", **error_ref}
        app.openapi_schema = schema
        return schema

    app.openapi = build  # type: ignore[method-assign]

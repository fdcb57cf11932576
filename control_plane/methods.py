"""Which methods a path takes, and the 405 answers that say so.

RFC 9110 §15.5.6: a 405 carries ``Allow`` with every method the resource supports. Starlette names
only the methods of the first route whose path matched, and FastAPI makes one route per path and
method group (``GET /indices`` and ``POST /indices`` are two), so the methods are gathered here
from every route of the app, once.

OpenAPI matches a concrete path before a templated one (``.../documents/delete`` before
``.../documents/{doc_id}``): the document has no ``GET .../documents/delete``, so that request
is a 405 too, where the router alone would take ``delete`` for a document id.
:class:`ConcreteRoutesFirst` answers those; both use :func:`allowed_methods`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fastapi.routing import iter_route_contexts
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from control_plane.wire import JSONBody
from shared.errors import ErrorCode, ServiceError

_PARAM = re.compile(r"^\{[^}]*\}$")


@dataclass(frozen=True)
class _Route:
    regex: re.Pattern[str]
    segments: tuple[str, ...]  # of the path template
    methods: frozenset[str]

    @property
    def rank(self) -> tuple[int, ...]:
        """Per segment 0 for a literal, 1 for a parameter: the lower, the more specific."""
        return tuple(1 if _PARAM.match(segment) else 0 for segment in self.segments)


def _overlap(one: _Route, other: _Route) -> bool:
    """Whether some path matches both templates (segment by segment: equal, or a parameter)."""
    return len(one.segments) == len(other.segments) and all(
        a == b or _PARAM.match(a) or _PARAM.match(b) for a, b in zip(one.segments, other.segments, strict=True)
    )


class RouteMethods:
    """Every route's path and methods, and the literal segments that may shadow another route's parameter."""

    def __init__(self, app: ASGIApp) -> None:
        self.routes: list[_Route] = []
        for context in iter_route_contexts(getattr(app, "routes", [])):
            regex, template = getattr(context, "path_regex", None), context.path_format
            methods = context.methods
            if isinstance(context.original_route, Mount) and isinstance(context.original_route.app, StaticFiles):
                methods = {"GET", "HEAD"}  # the files under its prefix
            if methods and regex is not None and template:
                self.routes.append(_Route(regex, tuple(template.strip("/").split("/")), frozenset(methods)))
        self.shadowing = frozenset(
            route.segments[i]
            for route in self.routes
            for other in self.routes
            if _overlap(route, other)
            for i, kind in enumerate(route.rank)
            if kind == 0 and other.rank[i] == 1
        )

    def methods_at(self, path: str) -> list[str]:
        """The methods of the most specific routes matching ``path`` (none when no route does)."""
        matching = [r for r in self.routes if r.regex.match(path)]
        if not matching:
            return []
        best = min(r.rank for r in matching)
        return sorted(set().union(*(r.methods for r in matching if r.rank == best)))


def route_methods(app: ASGIApp) -> RouteMethods:
    state = app.state  # type: ignore[attr-defined]
    table = getattr(state, "route_methods", None)
    if table is None:
        table = state.route_methods = RouteMethods(app)
    return table  # type: ignore[no-any-return]


def allowed_methods(app: ASGIApp, path: str) -> list[str]:
    return route_methods(app).methods_at(path)


def app_path(scope: Scope) -> str:
    """The request's path under the app (also inside a mounted app, whose ``root_path`` grew)."""
    root = scope.get("app_root_path", scope.get("root_path", ""))
    path: str = scope["path"]
    return path[len(root):] if root and path.startswith(root) else path


def method_not_allowed(app: ASGIApp, path: str) -> JSONBody:
    """The one 405 answer: the error body, and ``Allow`` naming every method of the path."""
    error = ServiceError(ErrorCode.METHOD_NOT_ALLOWED, "Method not allowed on this route")
    return JSONBody(error.body(), status_code=405, headers={"Allow": ", ".join(allowed_methods(app, path))})


class ConcreteRoutesFirst:
    """Answers 405 for a method a concrete path lacks, before a templated route takes the path
    (only paths holding a segment that shadows a parameter are looked at: the rest cost a set test)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            table = route_methods(scope["app"])
            path = app_path(scope)
            if not table.shadowing.isdisjoint(path.split("/")):
                allow = table.methods_at(path)
                if allow and scope["method"] not in allow:
                    await method_not_allowed(scope["app"], path)(scope, receive, send)
                    return
        await self.app(scope, receive, send)

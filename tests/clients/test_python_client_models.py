"""The Python client agrees with the server's OpenAPI document (``/openapi.json``).

- every route the client calls exists there, and every management and storefront route a secret or
  public key may call is one the client calls;
- each route's answer model has the documented fields, required fields and types (nested models,
  lists, maps, nullability, enums, date-times), compared recursively;
- the keyword arguments that build a request body or query are the documented fields, by name;
- whether the client repeats a route after a lost answer matches its method (reads, PUT, DELETE, the
  search-like POSTs; uploads and deletes carry an Idempotency-Key).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic.alias_generators import to_camel
from shopsearch_client import Index, Project, models
from shopsearch_client import _routes as routes
from shopsearch_client._handles import Root

from control_plane.app import create_app
from shared.settings import Settings

# routes only a signed-in cabinet session may call (no key can), or that are not part of the REST API
SESSION_ONLY = re.compile(r"^/v1/(auth|orgs)(/|$)|^/v1/projects/\{project_id\}/api-keys|^/(health|ready|mcp)$")


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return create_app(Settings(data_dir=tmp_path_factory.mktemp("openapi"))).openapi()  # type: ignore[arg-type]


# --------------------------------------------------------------------------- schema shapes
# components the client passes through as JSON without a model of its own: any JSON value, and a
# filter (fields with conditions, nested and/or/not), which the client sends as written
FREE_FORM = {"JsonValue": ("any",), "Filter": ("any object",)}


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:  # a JSON pointer into the same document: "#/components/schemas/X", "#/$defs/X"
        node: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def shape(schema: dict[str, Any], root: dict[str, Any], seen: frozenset[str] = frozenset()) -> Any:
    """What a schema says about the data, without titles, descriptions, defaults or bounds. A model
    inside itself (a tree's children) reads as any object, as the document writes it."""
    ref = schema.get("$ref")
    if ref is not None and ref.rsplit("/", 1)[-1] in FREE_FORM:
        return FREE_FORM[ref.rsplit("/", 1)[-1]]
    if ref is not None:
        if ref in seen:
            return ("any object",)
        seen = seen | {ref}
    schema = _resolve(schema, root)
    options = schema.get("anyOf")
    if options is None and isinstance(schema.get("type"), list):
        options = [{**schema, "type": kind} for kind in schema["type"]]
    if options is not None:
        kinds = [shape(option, root, seen) for option in options]
        nullable = ("null",) in kinds
        kinds = [kind for kind in kinds if kind != ("null",)]
        base = kinds[0] if len(kinds) == 1 else ("union", tuple(sorted(kinds, key=repr)))
        return ("nullable", base) if nullable else base
    if "const" in schema:
        return ("enum", (schema["const"],))
    if "enum" in schema:
        return ("enum", tuple(sorted(schema["enum"])))
    kind = schema.get("type")
    if "properties" in schema:
        properties = tuple(sorted((name, shape(value, root, seen)) for name, value in schema["properties"].items()))
        return ("object", properties, tuple(sorted(schema.get("required", []))))
    if kind == "object":
        extra = schema.get("additionalProperties")
        values = shape(extra, root, seen) if isinstance(extra, dict) and extra else ("any",)
        return ("any object",) if values == ("any",) else ("map", values)
    if kind == "array":
        return ("array", shape(schema.get("items", {}), root, seen))
    if kind == "string" and schema.get("format") == "date-time":
        return ("date-time",)
    return (kind,) if kind else ("any",)


def differences(client: Any, server: Any, path: str = "") -> list[str]:
    """Where the client's shape differs from the server's, by dotted path."""
    if client == server:
        return []
    if client[0] == server[0] == "object":
        client_fields, server_fields = dict(client[1]), dict(server[1])
        out = [f"{path}.{name}: documented, not in the model" for name in server_fields.keys() - client_fields.keys()]
        out += [f"{path}.{name}: in the model, not documented" for name in client_fields.keys() - server_fields.keys()]
        if client[2] != server[2]:
            out.append(f"{path or '.'}: required {sorted(client[2])} in the model, {sorted(server[2])} documented")
        for name in client_fields.keys() & server_fields.keys():
            mine, theirs = client_fields[name], server_fields[name]
            if name not in server[2] and mine[0] == "nullable" and theirs[0] != "nullable":
                mine = mine[1]  # a field the server may leave out reads as None
            out += differences(mine, theirs, f"{path}.{name}")
        return out
    if client[0] == server[0] == "union" and len(client[1]) == len(server[1]):
        # each option of the model's matches one of the document's (options of answers: a search's, a
        # facet value search's)
        unmatched = [c for c in client[1] if all(differences(c, o, path) for o in server[1])]
        return [f"{path or '.'}: option {c} in the model, not documented" for c in unmatched]
    if client[0] == server[0] and client[0] in ("array", "map", "nullable"):
        return differences(client[1], server[1], f"{path}[]" if client[0] != "nullable" else path)
    return [f"{path or '.'}: {client} in the model, {server} documented"]


def model_shape(model: Any) -> Any:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return shape(schema, schema)


def answer_schema(document: dict[str, Any], method: str, path: str) -> tuple[str, dict[str, Any] | None]:
    responses = document["paths"][path][method.lower()]["responses"]
    status = next(code for code in responses if code.startswith("2"))
    content = responses[status].get("content", {}).get("application/json")
    return status, (content or {}).get("schema")


# --------------------------------------------------------------------------- tests
def test_every_route_exists_and_every_key_route_is_covered(document):
    documented = {(method.upper(), path) for path, item in document["paths"].items() for method in item
                  if not SESSION_ONLY.search(path)}
    called = {(route.method, route.path) for route in routes.ALL.values()}
    assert called - documented == set(), "the client calls routes the server does not document"
    assert documented - called == set(), "routes a key may call that the client has no method for"


@pytest.mark.parametrize("name", sorted(routes.ALL))
def test_answer_models_follow_the_document(document, name):
    route = routes.ALL[name]
    status, schema = answer_schema(document, route.method, route.path)
    if route.answer is None:
        if status == "204":
            assert schema is None
        else:  # a free JSON value: the document names no model for it
            assert schema is not None and "$ref" not in schema and "properties" not in schema, schema
        return
    assert schema is not None, f"{name}: the server documents no JSON answer"
    server = shape(schema, document)
    if server[0] == "union":  # synonyms/export: a list, or Solr text with ?format=solr
        assert any(differences(model_shape(route.answer), option) == [] for option in server[1])
        return
    assert differences(model_shape(route.answer), server) == []


def test_the_event_model_follows_the_document(document):
    server = shape(document["components"]["schemas"]["EventIn"], document)
    assert differences(model_shape(models.Event), server) == []


def test_the_comparison_catches_a_disagreement(document):
    """The shapes compared above are precise enough to fail: a field missing, a type changed, a
    field made optional, a date-time read as a string."""

    class Missing(models.Model):
        task_id: str

    class Retyped(models.Model):
        task_id: str
        previous_doc_count: str

    class Optional(models.Model):
        task_id: str
        previous_doc_count: int | None = None

    class StringTimes(models.Model):
        id: str
        org_id: str
        name: str
        created_at: str

    _, flush = answer_schema(document, "POST", routes.FLUSH_DOCUMENTS.path)
    _, project = answer_schema(document, "GET", routes.PROJECT.path)
    assert differences(model_shape(models.FlushAnswer), shape(flush, document)) == []
    assert differences(model_shape(Missing), shape(flush, document)) == [
        ".previousDocCount: documented, not in the model", ".: required ['taskId'] in the model, "
        "['previousDocCount', 'taskId'] documented"]
    assert differences(model_shape(Retyped), shape(flush, document)) == [
        ".previousDocCount: ('string',) in the model, ('integer',) documented"]
    assert differences(model_shape(Optional), shape(flush, document))
    assert differences(model_shape(StringTimes), shape(project, document)) == [
        ".createdAt: ('string',) in the model, ('date-time',) documented"]


def _keywords(function: Any, skip: set[str]) -> set[str]:
    params = inspect.signature(function).parameters
    return {to_camel(name) for name in list(params)[1:] if name not in skip}


# (method, request schema, its parameters that are not body fields, body fields deliberately not offered,
#  parameter -> field where the name differs)
BODIES: list[tuple[Any, str, set[str], set[str], dict[str, str]]] = [
    (Index.search.fn, "SearchRequest", set(), set(), {}),
    (Root.search.fn, "SearchRequest", {"profile_key"}, {"profileKey", "profile"}, {}),  # secret route only
    (Index.suggest.fn, "SuggestRequest", set(), set(), {}),
    (Root.suggest.fn, "SuggestRequest", {"suggest_key"}, set(), {}),
    (Index.test_rules.fn, "RuleTest", set(), set(), {}),
    (Project.create_index.fn, "IndexCreate", set(), set(), {}),
    (Index.set_feed.fn, "FeedIn", set(), set(), {}),
    (Index.set_integration.fn, "IntegrationIn", set(), set(), {"manageMapping": "settings"}),
    (Index.add_custom_suggestion.fn, "CustomSuggestionIn", set(), set(), {}),
    (Index.import_synonyms.fn, "SynonymImport", set(), set(), {}),
]


@pytest.mark.parametrize(("function", "schema", "skip", "left_out", "renamed"), BODIES,
                         ids=[f"{body[0].__qualname__}" for body in BODIES])
def test_keyword_arguments_are_the_documented_body_fields(document, function, schema, skip, left_out, renamed):
    documented = set(document["components"]["schemas"][schema]["properties"]) - left_out
    offered = {renamed.get(name, name) for name in _keywords(function, skip)}
    assert offered == documented


# (method, route, parameter -> query name where they differ, documented query parameters not offered)
QUERIES: list[tuple[Any, Any, dict[str, str], set[str]]] = [
    (Project.list_tasks.fn, routes.TASKS, {}, set()),
    (Index.list_tasks.fn, routes.TASKS, {}, {"indexId"}),  # the index's own id
    (Index.analytics.fn, routes.ANALYTICS, {"start": "from", "end": "to"}, {"interval"}),  # only "day" exists
    (Project.list_indices.fn, routes.INDICES, {}, set()),
    (Index.list_documents.fn, routes.DOCUMENTS, {}, set()),
    (Index.list_profiles.fn, routes.PROFILES, {}, set()),
    (Index.list_synonyms.fn, routes.SYNONYMS, {}, set()),
    (Index.list_rules.fn, routes.RULES, {}, set()),
    (Index.list_custom_suggestions.fn, routes.CUSTOM_SUGGESTIONS, {}, set()),
]


@pytest.mark.parametrize(("function", "route", "renamed", "left_out"), QUERIES,
                         ids=[f"{query[0].__qualname__}" for query in QUERIES])
def test_keyword_arguments_are_the_documented_query_parameters(document, function, route, renamed, left_out):
    operation = document["paths"][route.path][route.method.lower()]
    documented = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"} - left_out
    offered = {renamed.get(name, to_camel(name)) for name in list(inspect.signature(function).parameters)[1:]}
    assert offered == documented


def test_what_the_client_repeats():
    for name, route in routes.ALL.items():
        if route.method in ("GET", "PUT", "DELETE"):
            assert route.idempotent, name
    repeated_posts = {name for name, route in routes.ALL.items() if route.method == "POST" and route.idempotent}
    assert repeated_posts == {"STOREFRONT_SEARCH", "STOREFRONT_SUGGEST", "SEARCH", "SUGGEST", "TEST_RULES",
                              "SESSION_UPLOAD", "REPLACE_SYNONYMS", "STOREFRONT_FACET_VALUES", "FACET_VALUES",
                              "MULTI_SEARCH"}


def test_models_are_pydantic_and_exported():
    exported = {getattr(models, name) for name in models.__all__}
    answers = {route.answer for route in routes.ALL.values() if route.answer is not None}
    for answer in answers:
        origin = answer.__pydantic_generic_metadata__["origin"] or answer
        assert issubclass(answer, BaseModel) and origin in exported, answer


def test_the_client_imports_nothing_of_the_server():
    package = Path(inspect.getfile(models)).parent
    server = re.compile(r"^\s*(from|import)\s+(shared|control_plane|search_workers|cli|benchmarks)\b", re.M)
    for source in package.rglob("*.py"):
        assert not server.search(source.read_text()), source

"""The handles — the client's root, a project, an index, a replace session — and their methods,
each written once as an operation (see :mod:`shopsearch_client._calls` for how it becomes a sync or
an async call)."""

from __future__ import annotations

import functools
import itertools
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Sized
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass
from datetime import date
from typing import Any, Concatenate, Generic, Literal, overload

from shopsearch_client import _routes as r
from shopsearch_client import models as m
from shopsearch_client._calls import IO, Async, Context, Fetch, Handle, P, Sync, operation, paginated
from shopsearch_client._core import Op, Route, Sleep, call
from shopsearch_client.errors import TASK_TIMEOUT, ShopsearchError


# a replace session's context: committed on success, aborted on error (the runner's ``scope``)
class scoped(Generic[P]):
    def __init__(self, fn: Callable[Concatenate[Any, P], Op[ReplaceSession[Any]]]) -> None:
        self.fn = fn
        self.__doc__ = fn.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> scoped[P]: ...
    @overload
    def __get__(self, obj: Handle[Sync], owner: type) -> Callable[P, AbstractContextManager[ReplaceSession[Sync]]]: ...
    @overload
    def __get__(self, obj: Handle[Async], owner: type) -> Callable[P, AbstractAsyncContextManager[ReplaceSession[Async]]]: ...

    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        fn, scope = self.fn, obj._ctx.runner.scope

        @functools.wraps(fn)
        def bound(*args: Any, **kwargs: Any) -> Any:
            return scope(fn(obj, *args, **kwargs))

        return bound


MAX_BATCH = 1000  # documents (or ids) per request, the API's limit
Body = Mapping[str, Any] | m.Model


@dataclass(frozen=True)
class UploadProgress:
    """Passed to ``on_progress`` after each batch the server accepted."""

    documents: int  # sent and accepted so far
    batches: int
    total: int | None  # len() of what was given, when it has one
    task_id: str | None  # the task of the last batch (None in a replace session: it has no task per batch)


ProgressCallback = Callable[[UploadProgress], None]
TaskRef = str | m.TaskAccepted | m.Task | m.FlushAnswer


def _task_id(task: TaskRef) -> str:
    return task if isinstance(task, str) else task.task_id


def _batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    if not 1 <= size <= MAX_BATCH:
        raise ValueError(f"batch_size must be 1 to {MAX_BATCH}")
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def _body(**fields: Any) -> dict[str, Any]:
    """A JSON body from keyword arguments: camelCase names, arguments left at None left out."""
    return {name: value for name, value in fields.items() if value is not None}


def _point(value: tuple[float, float] | None) -> dict[str, float] | None:
    return None if value is None else {"lat": value[0], "lng": value[1]}


def _vector(value: Sequence[float] | None) -> list[float] | None:
    return None if value is None else [float(x) for x in value]


def _day(value: date | str | None) -> str | None:
    return value.isoformat() if isinstance(value, date) else value


class _Handle(Handle[IO]):
    _ids: dict[str, str]

    def __init__(self, ctx: Context[IO], **ids: str) -> None:
        self._ctx = ctx
        self._ids = ids

    def _call(self, route: Route, *, params: Mapping[str, Any] | None = None, body: Any = None,
              headers: Mapping[str, str] | None = None, **ids: str) -> Op[Any]:
        return call(route, self._ctx.retry, {**self._ids, **ids}, params=params, body=body, headers=headers)

    def _page(self, route: Route, page_size: int, **params: Any) -> Fetch[Any]:
        def fetch(cursor: str | None) -> Op[Any]:
            return self._call(route, params={**params, "limit": page_size, "cursor": cursor})
        return fetch

    # shared by projects and indices
    def _wait(self, task: TaskRef, timeout: float | None, raise_on_failure: bool,
              poll_interval: float) -> Op[m.Task]:
        task_id = _task_id(task)
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = min(0.05, poll_interval)
        while True:
            current: m.Task = yield from self._call(r.TASK, task_id=task_id)
            if current.finished:
                if raise_on_failure and current.status != "succeeded":
                    code = current.error.code if current.error else f"TASK_{current.status.upper()}"
                    message = current.error.message if current.error else f"task {task_id} {current.status}"
                    raise ShopsearchError(None, code, message, task=current)
                return current
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ShopsearchError(None, TASK_TIMEOUT, f"task {task_id} still {current.status} after {timeout} s",
                                          task=current)
                delay = min(delay, remaining)
            yield Sleep(delay)
            delay = min(delay * 1.5, poll_interval)

    def _wait_all(self, tasks: Iterable[TaskRef], timeout: float | None, raise_on_failure: bool,
                  poll_interval: float) -> Op[list[m.Task]]:
        deadline = None if timeout is None else time.monotonic() + timeout
        done = []
        for task in tasks:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            done.append((yield from self._wait(task, left, raise_on_failure, poll_interval)))
        return done


class Project(_Handle[IO]):
    """A project: its indices and tasks. ``client.project(project_id)``."""

    def __init__(self, ctx: Context[IO], project_id: str) -> None:
        super().__init__(ctx, project_id=project_id)
        self.id = project_id

    def index(self, index_id: str) -> Index[IO]:
        return Index(self._ctx, self.id, index_id)

    @operation
    def get(self) -> Op[m.ProjectInfo]:
        return self._call(r.PROJECT)

    # ----------------------------------------------------------------- indices
    @operation
    def list_indices(self, *, limit: int | None = None, cursor: str | None = None) -> Op[m.Page[m.IndexInfo]]:
        return self._call(r.INDICES, params={"limit": limit, "cursor": cursor})

    @paginated
    def iter_indices(self, *, page_size: int = 100) -> Fetch[m.IndexInfo]:
        return self._page(r.INDICES, page_size)

    @operation
    def create_index(self, name: str, *, mapping: Mapping[str, Any] | None = None, shards: int | None = None,
                     replicas: int | None = None, language: str | None = None) -> Op[m.IndexInfo]:
        """A new index (201). Not repeated after a lost answer: a second create would fail on the name."""
        return self._call(r.CREATE_INDEX, body=_body(name=name, mapping=mapping, shards=shards, replicas=replicas,
                                                     language=language))

    # ----------------------------------------------------------------- tasks
    @operation
    def get_task(self, task: TaskRef) -> Op[m.Task]:
        return self._call(r.TASK, task_id=_task_id(task))

    @operation
    def list_tasks(self, *, status: Sequence[str] | None = None, type: Sequence[str] | None = None,
                   index_id: str | None = None, limit: int | None = None,
                   cursor: str | None = None) -> Op[m.Page[m.Task]]:
        return self._call(r.TASKS, params={"status": status, "type": type, "indexId": index_id, "limit": limit,
                                           "cursor": cursor})

    @paginated
    def iter_tasks(self, *, status: Sequence[str] | None = None, type: Sequence[str] | None = None,
                   index_id: str | None = None, page_size: int = 100) -> Fetch[m.Task]:
        return self._page(r.TASKS, page_size, status=status, type=type, indexId=index_id)

    @operation
    def wait_for_task(self, task: TaskRef, *, timeout: float | None = 120.0, raise_on_failure: bool = True,
                      poll_interval: float = 1.0) -> Op[m.Task]:
        """Poll the task until it finished (50 ms between polls, growing by half to ``poll_interval``).

        Raises ``TASK_TIMEOUT`` after ``timeout`` seconds (None: wait for ever), and, unless
        ``raise_on_failure`` is False, the task's own error when it failed or was canceled.
        """
        return self._wait(task, timeout, raise_on_failure, poll_interval)

    @operation
    def wait_for_tasks(self, tasks: Iterable[TaskRef], *, timeout: float | None = 600.0,
                       raise_on_failure: bool = True, poll_interval: float = 1.0) -> Op[list[m.Task]]:
        """Wait for each task in turn; ``timeout`` bounds the whole wait."""
        return self._wait_all(tasks, timeout, raise_on_failure, poll_interval)


class Index(_Handle[IO]):
    """An index: ``client.index(project_id, index_id)`` or ``client.project(project_id).index(index_id)``."""

    def __init__(self, ctx: Context[IO], project_id: str, index_id: str) -> None:
        super().__init__(ctx, project_id=project_id, index_id=index_id)
        self.project_id = project_id
        self.id = index_id

    @property
    def project(self) -> Project[IO]:
        return Project(self._ctx, self.project_id)

    # ----------------------------------------------------------------- the index
    @operation
    def get(self) -> Op[m.IndexInfo]:
        return self._call(r.INDEX)

    @operation
    def delete(self) -> Op[None]:
        return self._call(r.DELETE_INDEX)

    @operation
    def get_mapping(self) -> Op[dict[str, Any]]:
        return self._call(r.MAPPING)

    @operation
    def update_mapping(self, mapping: Mapping[str, Any]) -> Op[m.TaskAccepted]:
        """Change the mapping: a task (a reindex when needed); 409 ``MAPPING_BREAKS_CONFIG`` lists what it would break."""
        return self._call(r.UPDATE_MAPPING, body=mapping)

    @operation
    def mapping_usage(self) -> Op[m.MappingUsage]:
        return self._call(r.MAPPING_USAGE)

    @operation
    def get_facets(self) -> Op[m.Facets]:
        return self._call(r.FACETS)

    @operation
    def update_facets(self, facets: Iterable[Body]) -> Op[m.Facets]:
        return self._call(r.UPDATE_FACETS, body={"facets": list(facets)})

    @operation
    def set_integration(self, platform: str, name: str, *, url: str | None = None, version: str | None = None,
                        manage_mapping: bool = False) -> Op[m.Integration]:
        """Connect (or update) a shop platform plugin; a full-access secret key only. Send it on every settings change."""
        return self._call(r.SET_INTEGRATION, body=_body(platform=platform, name=name, url=url, version=version,
                                                        settings={"manageMapping": manage_mapping}))

    @operation
    def remove_integration(self) -> Op[None]:
        return self._call(r.REMOVE_INTEGRATION)

    @operation
    def get_feed(self) -> Op[m.Feed]:
        return self._call(r.FEED)

    @operation
    def set_feed(self, url: str, format: Literal["json", "jsonl", "csv"], *,
                 schedule: Literal["manual", "hourly", "daily"] | None = None,
                 field_map: Mapping[str, str] | None = None) -> Op[m.Feed]:
        return self._call(r.SET_FEED, body=_body(url=url, format=format, schedule=schedule, fieldMap=field_map))

    @operation
    def remove_feed(self) -> Op[None]:
        return self._call(r.REMOVE_FEED)

    @operation
    def sync_feed(self) -> Op[m.TaskAccepted]:
        return self._call(r.SYNC_FEED)

    @operation
    def reindex(self) -> Op[m.TaskAccepted]:
        return self._call(r.REINDEX)

    @operation
    def cancel_reindex(self) -> Op[m.ReindexCancelAnswer]:
        return self._call(r.CANCEL_REINDEX)

    # ----------------------------------------------------------------- documents
    @operation
    def upload_documents(self, documents: Iterable[Mapping[str, Any]], *, batch_size: int = MAX_BATCH,
                         on_progress: ProgressCallback | None = None) -> Op[list[m.TaskAccepted]]:
        """Add or replace documents by id, from any iterable, in batches of ``batch_size`` (at most 1000).

        Each batch is one task, sent with an ``Idempotency-Key`` of its own, so a batch whose answer
        was lost is sent again and applied once. Returns the batches' tasks, in order; pass them to
        ``wait_for_tasks`` to know when search reflects them.
        """
        total = len(documents) if isinstance(documents, Sized) else None
        accepted: list[m.TaskAccepted] = []
        sent = 0
        for batch in _batches(documents, batch_size):
            answer: m.TaskAccepted = yield from self._call(r.UPLOAD_DOCUMENTS, body=batch,
                                                           headers={"Idempotency-Key": uuid.uuid4().hex})
            accepted.append(answer)
            sent += len(batch)
            if on_progress is not None:
                on_progress(UploadProgress(sent, len(accepted), total, answer.task_id))
        return accepted

    @operation
    def delete_documents(self, ids: Iterable[str | int], *, batch_size: int = MAX_BATCH) -> Op[list[m.TaskAccepted]]:
        """Delete documents by id (unknown ids are accepted), in batches; one task per batch."""
        accepted = []
        for batch in _batches(ids, batch_size):
            accepted.append((yield from self._call(r.DELETE_DOCUMENTS, body=batch,
                                                   headers={"Idempotency-Key": uuid.uuid4().hex})))
        return accepted

    @operation
    def flush(self) -> Op[m.FlushAnswer]:
        """Delete every document (a task); ``previous_doc_count`` is how many there were."""
        return self._call(r.FLUSH_DOCUMENTS)

    @operation
    def get_document(self, doc_id: str) -> Op[dict[str, Any]]:
        return self._call(r.DOCUMENT, doc_id=doc_id)

    @operation
    def list_documents(self, *, limit: int | None = None,
                       cursor: str | None = None) -> Op[m.Page[dict[str, Any]]]:
        return self._call(r.DOCUMENTS, params={"limit": limit, "cursor": cursor})

    @paginated
    def iter_documents(self, *, page_size: int = MAX_BATCH) -> Fetch[dict[str, Any]]:
        """Every stored document, as uploaded, page by page."""
        return self._page(r.DOCUMENTS, page_size)

    # ----------------------------------------------------------------- replace sessions
    @operation
    def open_replace_session(self, *, mapping: Mapping[str, Any] | None = None) -> Op[ReplaceSession[IO]]:
        """Open a replace session to commit or abort yourself (``replace_session`` does both for you)."""
        return self._open_session(mapping)

    @scoped
    def replace_session(self, *, mapping: Mapping[str, Any] | None = None) -> Op[ReplaceSession[IO]]:
        """``with index.replace_session() as session: session.upload(catalog)``: the whole catalog is
        swapped in at the end of the block (``session.task_id`` is the commit's task), or nothing is
        if the block raises (the session is aborted). ``mapping``: the new catalog's mapping."""
        return self._open_session(mapping)

    def _open_session(self, mapping: Mapping[str, Any] | None) -> Op[ReplaceSession[IO]]:
        info: m.ReplaceSessionInfo = yield from self._call(r.OPEN_SESSION, body=_body(mapping=mapping))
        return ReplaceSession(self._ctx, self.project_id, self.id, info)

    @operation
    def get_replace_session(self, session_id: str) -> Op[m.ReplaceSessionInfo]:
        return self._call(r.SESSION, session_id=session_id)

    # ----------------------------------------------------------------- tasks
    @operation
    def list_tasks(self, *, status: Sequence[str] | None = None, type: Sequence[str] | None = None,
                   limit: int | None = None, cursor: str | None = None) -> Op[m.Page[m.Task]]:
        """This index's tasks."""
        return self._call(r.TASKS, params={"status": status, "type": type, "indexId": self.id, "limit": limit,
                                           "cursor": cursor})

    @paginated
    def iter_tasks(self, *, status: Sequence[str] | None = None, type: Sequence[str] | None = None,
                   page_size: int = 100) -> Fetch[m.Task]:
        return self._page(r.TASKS, page_size, status=status, type=type, indexId=self.id)

    @operation
    def get_task(self, task: TaskRef) -> Op[m.Task]:
        return self._call(r.TASK, task_id=_task_id(task))

    @operation
    def wait_for_task(self, task: TaskRef, *, timeout: float | None = 120.0, raise_on_failure: bool = True,
                      poll_interval: float = 1.0) -> Op[m.Task]:
        """As :meth:`Project.wait_for_task`."""
        return self._wait(task, timeout, raise_on_failure, poll_interval)

    @operation
    def wait_for_tasks(self, tasks: Iterable[TaskRef], *, timeout: float | None = 600.0,
                       raise_on_failure: bool = True, poll_interval: float = 1.0) -> Op[list[m.Task]]:
        """As :meth:`Project.wait_for_tasks`."""
        return self._wait_all(tasks, timeout, raise_on_failure, poll_interval)

    # ----------------------------------------------------------------- profiles and search
    @operation
    def list_profiles(self, *, limit: int | None = None, cursor: str | None = None) -> Op[m.Page[m.Profile]]:
        return self._call(r.PROFILES, params={"limit": limit, "cursor": cursor})

    @paginated
    def iter_profiles(self, *, page_size: int = 100) -> Fetch[m.Profile]:
        return self._page(r.PROFILES, page_size)

    @operation
    def create_profile(self, profile: Body) -> Op[m.Profile]:
        """Save a search profile (its ``profile_key`` is the storefront handle); 400 ``PROFILE_INVALID`` names each bad setting."""
        return self._call(r.CREATE_PROFILE, body=profile)

    @operation
    def get_profile(self, profile_id: str) -> Op[m.Profile]:
        return self._call(r.PROFILE, profile_id=profile_id)

    @operation
    def update_profile(self, profile_id: str, profile: Body) -> Op[m.Profile]:
        """Replace a profile's settings (a :class:`~shopsearch_client.models.Profile` read before may be sent back)."""
        return self._call(r.UPDATE_PROFILE, profile_id=profile_id, body=profile)

    @operation
    def delete_profile(self, profile_id: str) -> Op[None]:
        return self._call(r.DELETE_PROFILE, profile_id=profile_id)

    @operation
    def search(self, q: str = "", *, profile_key: str | None = None, profile: Body | None = None,
               filters: Mapping[str, Any] | None = None, facets: Sequence[str] | None = None, sort: str | None = None,
               page: int | None = None, per_page: int | None = None,
               user_token: str | None = None, near: tuple[float, float] | None = None,
               vector: Sequence[float] | None = None, similar_to: str | None = None) -> Op[m.SearchAnswer]:
        """Secret search: with a saved profile's ``profile_key``, or an inline ``profile`` to try settings.
        ``near``: ``(lat, lng)`` a sort option ``FIELD:near`` orders by (each hit then has ``distance_m``).
        ``vector``: the query's own vector (a profile whose ``semantic.field`` holds shop-supplied vectors);
        ``similar_to``: a document id to rank by its vector (left out of the hits; ``q`` must be empty)."""
        return self._call(r.SEARCH, body=_body(q=q, profileKey=profile_key, profile=profile, filters=filters,
                                               facets=facets, sort=sort, page=page, perPage=per_page,
                                               userToken=user_token, near=_point(near), vector=_vector(vector),
                                               similarTo=similar_to))

    @operation
    def facet_values(self, field: str, q: str = "", *, query: str | None = None,
                     filters: Mapping[str, Any] | None = None, limit: int | None = None,
                     profile_key: str | None = None, profile: Body | None = None) -> Op[m.FacetValuesAnswer]:
        """The values of facet ``field`` matching ``q`` (prefix or one typo), with the counts of the
        search ``query`` + ``filters`` (the field's own filter left out)."""
        return self._call(r.FACET_VALUES, body=_body(field=field, q=q, query=query, filters=filters, limit=limit,
                                                     profileKey=profile_key, profile=profile))

    # ----------------------------------------------------------------- synonyms
    @operation
    def list_synonyms(self, *, limit: int | None = None,
                      cursor: str | None = None) -> Op[m.Page[m.Synonym]]:
        return self._call(r.SYNONYMS, params={"limit": limit, "cursor": cursor})

    @paginated
    def iter_synonyms(self, *, page_size: int = 1000) -> Fetch[m.Synonym]:
        return self._page(r.SYNONYMS, page_size)

    @operation
    def create_synonym(self, synonym: Body) -> Op[m.Synonym]:
        """``{"type": "multiway", "terms": [...]}`` or ``{"type": "oneway", "input": …, "synonyms": [...]}``."""
        return self._call(r.CREATE_SYNONYM, body=synonym)

    @operation
    def get_synonym(self, synonym_id: str) -> Op[m.Synonym]:
        return self._call(r.SYNONYM, synonym_id=synonym_id)

    @operation
    def update_synonym(self, synonym_id: str, synonym: Body) -> Op[m.Synonym]:
        return self._call(r.UPDATE_SYNONYM, synonym_id=synonym_id, body=synonym)

    @operation
    def delete_synonym(self, synonym_id: str) -> Op[None]:
        return self._call(r.DELETE_SYNONYM, synonym_id=synonym_id)

    @operation
    def import_synonyms(self, items: Iterable[Body] | None = None, *, solr: str | None = None,
                        mode: Literal["append", "replace"] = "append") -> Op[m.SynonymImport]:
        """Import JSON ``items`` (as exported) or ``solr`` text; ``replace`` swaps the whole set.

        A ``replace`` import is repeated after a lost answer, an ``append`` is not (it would add twice).
        """
        body = _body(items=None if items is None else list(items), solr=solr, mode=mode)
        return self._call(r.REPLACE_SYNONYMS if mode == "replace" else r.IMPORT_SYNONYMS, body=body)

    @operation
    def export_synonyms(self) -> Op[list[m.Synonym]]:
        page: m.Page[m.Synonym] = yield from self._call(r.EXPORT_SYNONYMS)
        return page.items

    @operation
    def export_synonyms_solr(self) -> Op[str]:
        """The synonyms in Solr's synonyms format (what ``import_synonyms(solr=…)`` takes)."""
        answer: m.SolrSynonyms = yield from self._call(r.EXPORT_SYNONYMS_SOLR, params={"format": "solr"})
        return answer.solr

    # ----------------------------------------------------------------- rules
    @operation
    def list_rules(self, *, limit: int | None = None, cursor: str | None = None) -> Op[m.Page[m.Rule]]:
        return self._call(r.RULES, params={"limit": limit, "cursor": cursor})

    @paginated
    def iter_rules(self, *, page_size: int = 1000) -> Fetch[m.Rule]:
        """The rules in ``position`` order."""
        return self._page(r.RULES, page_size)

    @operation
    def create_rule(self, rule: Body) -> Op[m.Rule]:
        return self._call(r.CREATE_RULE, body=rule)

    @operation
    def get_rule(self, rule_id: str) -> Op[m.Rule]:
        return self._call(r.RULE, rule_id=rule_id)

    @operation
    def update_rule(self, rule_id: str, rule: Body) -> Op[m.Rule]:
        return self._call(r.UPDATE_RULE, rule_id=rule_id, body=rule)

    @operation
    def delete_rule(self, rule_id: str) -> Op[None]:
        return self._call(r.DELETE_RULE, rule_id=rule_id)

    @operation
    def order_rules(self, ids: Iterable[str]) -> Op[list[m.Rule]]:
        """Set every rule's position: ``ids`` lists each rule once, first applied first."""
        page: m.Page[m.Rule] = yield from self._call(r.ORDER_RULES, body={"ids": list(ids)})
        return page.items

    @operation
    def test_rules(self, q: str = "", *, filters: Mapping[str, Any] | None = None, rule: Body | None = None,
                   profile_key: str | None = None, page: int | None = None,
                   per_page: int | None = None) -> Op[m.RuleTestAnswer]:
        """Which rules a query matches and what it then finds; ``rule``: an unsaved rule to try too."""
        return self._call(r.TEST_RULES, body=_body(q=q, filters=filters, rule=rule, profileKey=profile_key,
                                                   page=page, perPage=per_page))

    # ----------------------------------------------------------------- autocomplete
    @operation
    def get_suggestion_config(self) -> Op[m.SuggestionConfig]:
        return self._call(r.SUGGESTION_CONFIG)

    @operation
    def update_suggestion_config(self, config: Body) -> Op[m.SuggestionConfig]:
        return self._call(r.UPDATE_SUGGESTION_CONFIG, body=config)

    @operation
    def list_custom_suggestions(self, *, limit: int | None = None,
                                cursor: str | None = None) -> Op[m.Page[m.CustomSuggestion]]:
        return self._call(r.CUSTOM_SUGGESTIONS, params={"limit": limit, "cursor": cursor})

    @paginated
    def iter_custom_suggestions(self, *, page_size: int = 1000) -> Fetch[m.CustomSuggestion]:
        return self._page(r.CUSTOM_SUGGESTIONS, page_size)

    @operation
    def add_custom_suggestion(self, text: str, *, weight: int | None = None) -> Op[m.CustomSuggestion]:
        return self._call(r.ADD_CUSTOM_SUGGESTION, body=_body(text=text, weight=weight))

    @operation
    def delete_custom_suggestion(self, suggestion_id: str) -> Op[None]:
        return self._call(r.DELETE_CUSTOM_SUGGESTION, suggestion_id=suggestion_id)

    @operation
    def rebuild_suggestions(self) -> Op[m.TaskAccepted]:
        return self._call(r.REBUILD_SUGGESTIONS)

    @operation
    def suggest(self, q: str = "", *, limit: int | None = None) -> Op[m.SuggestAnswer]:
        """Autocomplete with the secret key (the storefront uses ``client.suggest(suggest_key, …)``)."""
        return self._call(r.SUGGEST, body=_body(q=q, limit=limit))

    # ----------------------------------------------------------------- analytics
    @operation
    def analytics(self, *, start: date | str | None = None, end: date | str | None = None,
                  limit: int | None = None) -> Op[m.Analytics]:
        """Searches, no-result queries, clicks and conversions per day from ``start`` to ``end``
        (inclusive; default the last 30 days); ``limit``: entries in each top list."""
        return self._call(r.ANALYTICS, params={"from": _day(start), "to": _day(end), "limit": limit})


class ReplaceSession(_Handle[IO]):
    """A replace session: upload the whole catalog, then ``commit`` swaps it in at once (search answers
    from the old catalog until then) or ``abort`` drops it."""

    def __init__(self, ctx: Context[IO], project_id: str, index_id: str, info: m.ReplaceSessionInfo) -> None:
        super().__init__(ctx, project_id=project_id, index_id=index_id, session_id=info.id)
        self.id = info.id
        self.info = info
        self.task_id: str | None = None  # the commit's task, once committed
        self._ended = False

    @operation
    def get(self) -> Op[m.ReplaceSessionInfo]:
        info: m.ReplaceSessionInfo = yield from self._call(r.SESSION)
        self.info = info
        return info

    @operation
    def upload(self, documents: Iterable[Mapping[str, Any]], *, batch_size: int = MAX_BATCH,
               on_progress: ProgressCallback | None = None) -> Op[m.SessionUpload | None]:
        """Stage documents in batches; the answer of the last batch (None when there was none).

        Staging is by id, so a batch whose answer was lost is sent again without staging twice.
        """
        total = len(documents) if isinstance(documents, Sized) else None
        last: m.SessionUpload | None = None
        sent = 0
        for batches, batch in enumerate(_batches(documents, batch_size), 1):
            last = yield from self._call(r.SESSION_UPLOAD, body=batch)
            sent += len(batch)
            if on_progress is not None:
                on_progress(UploadProgress(sent, batches, total, None))
        return last

    @operation
    def commit(self) -> Op[m.TaskAccepted]:
        """Swap the staged catalog in (a task, ``task_id``).

        A commit is not sent twice blindly: when its answer is lost, the session is read to learn
        whether it was committed (and by which task) before committing again.
        """
        return self._commit()

    @operation
    def abort(self) -> Op[None]:
        return self._abort()

    def _commit(self) -> Op[m.TaskAccepted]:
        try:
            accepted: m.TaskAccepted = yield from self._call(r.COMMIT_SESSION)
        except ShopsearchError as error:
            if error.status is not None and error.status != 503:
                raise
            info: m.ReplaceSessionInfo = yield from self._call(r.SESSION)
            if info.status == "open":
                accepted = yield from self._call(r.COMMIT_SESSION)
            elif info.task_id is not None:
                accepted = m.TaskAccepted(task_id=info.task_id)
            else:
                raise
        self.task_id = accepted.task_id
        self._ended = True
        return accepted

    def _abort(self) -> Op[None]:
        yield from self._call(r.ABORT_SESSION)
        self._ended = True

    def _finish(self, exc: BaseException | None) -> Op[None]:
        """The end of a ``with`` block: commit after success, abort after an error (whose own failure
        to abort is noted on ``exc``, which is what the block raises)."""
        if self._ended:
            return
        if exc is None:
            yield from self._commit()
            return
        try:
            yield from self._abort()
        except ShopsearchError as abort_error:
            exc.add_note(f"aborting replace session {self.id} failed too: {abort_error}")


class Root(_Handle[IO]):
    """What needs no project: storefront search and suggest, events, status; and the handles."""

    def project(self, project_id: str) -> Project[IO]:
        return Project(self._ctx, project_id)

    def index(self, project_id: str, index_id: str) -> Index[IO]:
        return Index(self._ctx, project_id, index_id)

    @operation
    def status(self) -> Op[m.Status]:
        """``GET /v1/status``: the service's state (no key needed)."""
        return self._call(r.STATUS)

    @operation
    def search(self, profile_key: str, q: str = "", *, filters: Mapping[str, Any] | None = None,
               facets: Sequence[str] | None = None, sort: str | None = None, page: int | None = None,
               per_page: int | None = None, user_token: str | None = None,
               near: tuple[float, float] | None = None, vector: Sequence[float] | None = None,
               similar_to: str | None = None) -> Op[m.SearchAnswer]:
        """Storefront search with a saved profile's ``profile_key`` (a public key needs an ``Origin`` header).
        ``near``: ``(lat, lng)`` a sort option ``FIELD:near`` orders by (each hit then has ``distance_m``).
        ``vector``: the query's own vector (a profile whose ``semantic.field`` holds shop-supplied vectors);
        ``similar_to``: a document id to rank by its vector (left out of the hits; ``q`` must be empty)."""
        return self._call(r.STOREFRONT_SEARCH, profile_key=profile_key,
                          body=_body(q=q, filters=filters, facets=facets, sort=sort, page=page, perPage=per_page,
                                     userToken=user_token, near=_point(near), vector=_vector(vector),
                                     similarTo=similar_to))

    @operation
    def facet_values(self, profile_key: str, field: str, q: str = "", *, query: str | None = None,
                     filters: Mapping[str, Any] | None = None, limit: int | None = None) -> Op[m.FacetValuesAnswer]:
        """Storefront facet value search: ``field``'s values matching ``q``, counted over the search."""
        return self._call(r.STOREFRONT_FACET_VALUES, profile_key=profile_key,
                          body=_body(field=field, q=q, query=query, filters=filters, limit=limit))

    @operation
    def multi_search(self, queries: Iterable[Mapping[str, Any]]) -> Op[m.MultiSearchAnswer]:
        """A page's storefront queries in one round trip (1-20), each a search body with its
        ``profileKey`` (or ``{profileKey, facetValues: {field, q}}``); answers in order."""
        return self._call(r.MULTI_SEARCH, body={"queries": [dict(q) for q in queries]})

    @operation
    def suggest(self, suggest_key: str, q: str = "", *, limit: int | None = None) -> Op[m.SuggestAnswer]:
        """Storefront autocomplete with an index's ``suggest_key``."""
        return self._call(r.STOREFRONT_SUGGEST, suggest_key=suggest_key, body=_body(q=q, limit=limit))

    @operation
    def send_events(self, events: Iterable[m.Event | Mapping[str, Any]]) -> Op[m.EventsAccepted]:
        """Report clicks and conversions on search hits (at most 1000 at once). Not repeated after a lost
        answer: the server would count them twice."""
        return self._call(r.EVENTS, body={"events": list(events)})

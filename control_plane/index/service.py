"""Indices: create, read, delete, mapping, facets, integration, data source (feed), reindex.

Services flush, never commit (the request's session dependency commits), except
:func:`cancel_reindex`, which must let the task runner see its request.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.orm import Session, sessionmaker

from control_plane.access.tenancy import ProjectAccess
from control_plane.db import isoformat, utcnow
from control_plane.index import feed_url, repository
from control_plane.index.feed_fetch import AddressRefused, resolve
from control_plane.index.models import Index
from control_plane.index.schemas import FeedIn, IndexCreate, IntegrationIn
from control_plane.org.repository import plan_of_project
from control_plane.serving.follower import SyncState
from control_plane.shard import MappingError, validate_mapping
from control_plane.task import service as tasks
from control_plane.task.models import Task
from control_plane.usage import check_mapping_keeps_config, register_usage_provider
from control_plane.wire import decode_cursor, encode_cursor
from shared.errors import ErrorCode, ServiceError, conflict, forbidden, not_found, validation
from shared.ids import new_id
from shared.plans import PlanLimits, plan_limits
from shared.settings import Settings

# How long cancelling a running reindex waits for the runner to stop it.
CANCEL_WAIT_S = 5.0


# --------------------------------------------------------------------------- plans
def plan_limits_for_project(db: Session, project_id: str) -> PlanLimits:
    return plan_limits(plan_of_project(db, project_id))


def quota_exceeded(message: str) -> ServiceError:
    return ServiceError(ErrorCode.QUOTA_EXCEEDED, message)


# --------------------------------------------------------------------------- lookups
def get_index(db: Session, access: ProjectAccess, index_id: str, *, lock: bool = False) -> Index:
    access.check_index(index_id)
    index = repository.get_index(db, access.project_id, index_id, lock=lock)
    if index is None:
        raise not_found("Index")
    return index


def list_indices(db: Session, access: ProjectAccess, limit: int, cursor: str | None) -> tuple[list[Index], str | None]:
    after = decode_cursor(cursor)[0] if cursor else None
    rows = repository.list_indices(db, access.project_id, only=access.index_scope, after=after, limit=limit + 1)
    next_cursor = encode_cursor(rows[limit - 1].id) if len(rows) > limit else None
    return rows[:limit], next_cursor


# --------------------------------------------------------------------------- rows for the document domain and the task runner
# (by id, no tenant: the caller already holds an index of the tenant's, or is the task runner)
def all_indices(db: Session) -> list[Index]:
    """Every index of every tenant (start-up and operator work, never a request)."""
    return repository.all_indices(db)


def sync_states(db: Session) -> list[SyncState]:
    """What every index's replicas must hold (the serving processes' followers)."""
    return repository.sync_states(db)


def newest_index(db: Session) -> Index | None:
    """The index created last, of any tenant (the status route's search probe)."""
    return repository.newest_index(db)


def index_by_id(db: Session, index_id: str) -> Index | None:
    return repository.index_by_id(db, index_id)


def detached_index(db: Session, index_id: str) -> Index | None:
    """The index by id, detached from the session (kept across transactions)."""
    return repository.detached_index(db, index_id)


def locked_index(db: Session, index_id: str) -> Index | None:
    """The index by id, its row locked until the transaction ends."""
    return repository.locked_index(db, index_id)


def touch_index(db: Session, index_id: str) -> None:
    """Take the index row's lock (on SQLite the database's write lock) by moving ``updated_at``."""
    repository.touch_index(db, index_id)


def reserve_seqs(db: Session, index_id: str, count: int) -> int:
    """Hand out ``count`` change sequence numbers; the last one (the index row stays locked)."""
    return repository.reserve_seqs(db, index_id, count)


def current_seq(db: Session, index_id: str) -> int:
    return repository.current_seq(db, index_id)


def sequences(db: Session, index_id: str) -> tuple[int, int] | None:
    """The index's sequence and flush sequence; None when it is gone."""
    return repository.sequences(db, index_id)


def set_flush_seq(db: Session, index_id: str, seq: int) -> None:
    repository.set_flush_seq(db, index_id, seq)


def set_document_count(db: Session, index_id: str, count: int) -> None:
    repository.set_document_count(db, index_id, count)


def start_build(db: Session, index_id: str, generation: int, *, upto: int, mapping: dict[str, Any],
                session_id: str | None) -> None:
    """The index is ``reindexing`` while ``generation`` is built up to ``upto`` (see the repository)."""
    repository.start_build(db, index_id, generation, upto=upto, mapping=mapping, session_id=session_id)


def indices_with_feed(db: Session) -> list[Index]:
    return repository.indices_with_feed(db)


def touch_merch(db: Session, index_id: str) -> None:
    """Move the index's merchandising version (synonyms and rules are recompiled on next use)."""
    repository.touch_merch(db, index_id)


# --------------------------------------------------------------------------- mapping
def normalize_mapping(mapping: Any, language: str, path: str = "mapping") -> dict[str, Any]:
    if mapping is None:
        return {"idField": "id", "fields": {}}
    if not isinstance(mapping, dict):
        raise validation("The mapping is not valid", [{"path": path, "message": "must be an object"}])
    out = {"idField": mapping.get("idField", "id"), "fields": mapping.get("fields", {})}
    for key in mapping:
        if key not in ("idField", "fields"):
            out[key] = mapping[key]  # "dynamic"; the engine reports unknown keys
    try:
        validate_mapping(out, language)
    except MappingError as exc:
        details = [
            {"path": f"{path}.{d.get('path')}" if d.get("path") and path else (d.get("path") or path), "message": d.get("message", "")}
            for d in exc.details
        ]
        raise validation("The mapping is not valid", details) from exc
    return out


def create_index(db: Session, access: ProjectAccess, body: IndexCreate) -> Index:
    if access.index_scope is not None:
        raise forbidden("An index-scoped key cannot create indices")
    name = body.name
    language = body.language
    # without a mapping, the index infers one from the documents it receives
    mapping = normalize_mapping(body.mapping, language) if body.mapping is not None else {
        "idField": "id", "fields": {}, "dynamic": True}
    limits = plan_limits_for_project(db, access.project_id)
    if repository.count_indices(db, access.project_id) >= limits.max_indices_per_project:
        raise quota_exceeded(f"The {limits.plan} plan allows {limits.max_indices_per_project} indices per project")
    if repository.name_taken(db, access.project_id, name):
        raise conflict(f"An index named {name!r} already exists in this project")
    now = utcnow()
    index = Index(
        id=new_id("idx"),
        project_id=access.project_id,
        name=name,
        shards=body.shards,
        replicas=body.replicas,
        language=language,
        mapping=mapping,
        serving_mapping=mapping,
        facets=[],
        serving_generation=1,
        status="ready",
        seq=0,
        flush_seq=0,
        document_count=0,
        created_at=now,
        updated_at=now,
    )
    db.add(index)
    db.flush()
    return index


def delete_index(db: Session, index: Index) -> None:
    """The index's tasks are canceled; every row stored under it (documents, replace sessions,
    profiles, synonyms, rules, suggestions …) goes with its row (``ON DELETE CASCADE``)."""
    tasks.cancel_all_for_index(db, index.id)
    db.delete(index)
    db.flush()


def put_mapping(db: Session, access: ProjectAccess, index: Index, mapping_in: Any) -> Task:
    integration = index.integration or {}
    if (integration.get("settings") or {}).get("manageMapping"):
        key = access.key
        if key is None or key.id != index.integration_key_id:
            raise ServiceError(
                ErrorCode.MAPPING_MANAGED_BY_INTEGRATION,
                "The connected integration manages this index's mapping; change it in the plugin",
            )
    mapping = normalize_mapping(mapping_in, index.language, path="")
    check_mapping_keeps_config(db, index, mapping)
    if tasks.active_tasks(db, index.id, ("replace.commit",)):
        raise conflict("A replace session is being committed; try again when it is done")
    index.mapping = mapping
    index.updated_at = utcnow()
    db.flush()
    return tasks.enqueue(
        db, project_id=index.project_id, index_id=index.id, type="mapping.update", payload={"mapping": mapping}
    )


def add_inferred_fields(db: Session, index: Index, fields: dict[str, Any]) -> Task:
    """Add ``fields`` (inferred from an upload's documents) to a dynamic index's mapping; the
    ``mapping.update`` task that rebuilds the shards with them. The caller holds the index row's
    lock and enqueues the upload's own task after this one.

    When the last rebuild waiting for the index is an inferred one still enqueued, it is the one
    returned: it builds with the mapping current when it starts (its payload holds none), so these
    fields are in it (a started one is not; a later rebuild could build another mapping)."""
    index.mapping = {**index.mapping, "fields": {**(index.mapping.get("fields") or {}), **fields}}
    index.updated_at = utcnow()
    db.flush()
    rebuilds = tasks.active_tasks(db, index.id, (*tasks.REBUILD_TYPES, "replace.commit", "feed.sync"))
    if rebuilds and rebuilds[-1].status == "enqueued" and rebuilds[-1].type == "mapping.update" \
            and (rebuilds[-1].payload or {}).get("inferred"):
        return rebuilds[-1]
    return tasks.enqueue(db, project_id=index.project_id, index_id=index.id, type="mapping.update",
                         payload={"inferred": True})


def reindex(db: Session, index: Index) -> Task:
    if tasks.active_tasks(db, index.id, tasks.REBUILD_TYPES):
        raise conflict("A reindex is already enqueued or running")
    check_mapping_keeps_config(db, index, index.mapping)
    return tasks.enqueue(db, project_id=index.project_id, index_id=index.id, type="index.reindex")


def cancel_reindex(db: Session, sessions: sessionmaker[Session], index: Index) -> tuple[Task, str]:
    """Cancel the index's reindex and answer its status: an enqueued one is canceled at once; a
    running one is asked to stop, and this waits up to ``CANCEL_WAIT_S`` for the runner to stop it.

    Commits the request's transaction (the one service that does): the runner reads the request
    from its own session, so it must be committed before waiting for it; the commit also releases
    the index row the caller locked."""
    task = _request_cancel(db, index)
    db.commit()
    status = task.status
    deadline = time.monotonic() + CANCEL_WAIT_S
    while status == "processing" and time.monotonic() < deadline:
        time.sleep(0.05)
        with sessions() as fresh:
            status = tasks.task_status(fresh, task.pk) or status
    return task, status


def _request_cancel(db: Session, index: Index) -> Task:
    active = tasks.active_tasks(db, index.id, ("index.reindex",))
    if not active:
        raise conflict("No reindex is enqueued or running")
    task = active[0]
    if task.status == "enqueued" and tasks.cancel_enqueued(db, task):
        return task
    tasks.request_cancel(db, task)
    return task


# --------------------------------------------------------------------------- facets
def validate_facets(index: Index, facets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    fields = index.mapping.get("fields") or {}
    errors: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, facet in enumerate(facets):
        name = facet["field"]
        spec = fields.get(name)
        if spec is None:
            errors.append({"path": f"facets.{i}.field", "message": f"field {name!r} is not in the mapping"})
        elif not spec.get("facetable"):
            errors.append({"path": f"facets.{i}.field", "message": f"field {name!r} is not facetable"})
        elif facet["type"] == "range" and spec.get("type") not in ("integer", "float", "date"):
            errors.append({"path": f"facets.{i}.type", "message": "a range facet needs a numeric or date field"})
        elif facet["type"] == "hierarchy" and spec.get("type") not in ("keyword", "keyword[]"):
            errors.append({"path": f"facets.{i}.type", "message": "a hierarchy facet needs a keyword or keyword[] field"})
        if name in seen:
            errors.append({"path": f"facets.{i}.field", "message": f"field {name!r} appears twice"})
        seen.add(name)
        if facet["type"] == "range" and not facet.get("ranges"):
            errors.append({"path": f"facets.{i}.ranges", "message": "a range facet needs ranges"})
        # settings the facet's type would ignore are refused, not stored
        unused = ("size", "sort", "separator") if facet["type"] == "range" else (
            ("ranges",) if facet["type"] == "hierarchy" else ("ranges", "separator"))
        for key in unused:
            if facet.get(key) is not None:
                errors.append({"path": f"facets.{i}.{key}", "message": f"a {facet['type']} facet has no {key}"})
        entry = {"field": name, "type": facet["type"], "label": facet.get("label") or name}
        if facet["type"] == "range":
            entry["ranges"] = facet.get("ranges") or []
        else:
            entry.update(size=facet.get("size") or 10, sort=facet.get("sort") or "count")
        if facet["type"] == "hierarchy":
            entry["separator"] = facet.get("separator") or " > "
        out.append(entry)
    if errors:
        raise validation("The facets are not valid", errors)
    return out


def put_facets(db: Session, index: Index, facets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    index.facets = validate_facets(index, facets)
    index.updated_at = utcnow()
    db.flush()
    return index.facets


@register_usage_provider
def _facet_uses(_db: Session, index: Any) -> list[dict[str, Any]]:
    return [
        {
            "field": facet["field"],
            "kind": "facet",
            "id": str(i),
            "name": facet.get("label") or facet["field"],
            "path": "field",
            "needs": "facetable",
        }
        for i, facet in enumerate(index.facets or [])
    ]


# --------------------------------------------------------------------------- integration
def put_integration(db: Session, access: ProjectAccess, index: Index, body: IntegrationIn) -> dict[str, Any]:
    """Connect (or update) the integration of the calling secret key; the stored record."""
    principal = access.principal
    if principal.kind != "secret_key":
        raise ServiceError(ErrorCode.INTEGRATION_KEY_ONLY, "Only a full-access secret key can connect an integration")
    assert principal.key is not None
    existing = index.integration or {}
    record = {
        "platform": body.platform,
        "name": body.name,
        "url": body.url,
        "version": body.version,
        "settings": {"manageMapping": body.settings.manage_mapping},
        "keyId": principal.key.id,
        "connectedAt": existing.get("connectedAt") if existing.get("keyId") == principal.key.id else None,
        "updatedAt": isoformat(utcnow()),
    }
    record["connectedAt"] = record["connectedAt"] or record["updatedAt"]
    index.integration = record
    index.integration_key_id = principal.key.id
    index.updated_at = utcnow()
    db.flush()
    return record


def delete_integration(db: Session, index: Index) -> None:
    if index.integration is not None:
        index.integration = None
        index.integration_key_id = None
        index.updated_at = utcnow()
        db.flush()


# --------------------------------------------------------------------------- feed (data source)
def _refuse_integration(index: Index) -> None:
    if index.integration:
        raise ServiceError(
            ErrorCode.INDEX_HAS_INTEGRATION,
            "An integration is connected to this index; disconnect it before using a data source",
        )


def check_feed_url(url: str, settings: Settings, path: str = "url") -> None:
    """Only http(s) to a globally routable host unless allowed (the fetch checks again as it connects)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise validation("The feed URL is not valid", [{"path": path, "message": "must be an http(s) URL"}])
    if settings.feed_allow_private_hosts:
        return
    try:
        resolve(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), allow_private=False)
    except AddressRefused as exc:
        raise validation("The feed URL is not allowed", [{"path": path, "message": str(exc)}]) from exc
    except (OSError, UnicodeError, ValueError) as exc:
        raise validation("The feed URL is not valid", [{"path": path, "message": "the host does not resolve"}]) from exc


def feed_source_url(feed: dict[str, Any], settings: Settings) -> str:
    """The feed's full URL (decrypted); 409 when it was sealed under another secret key."""
    url = feed_url.unseal(feed["sealedUrl"], settings.signing_key())
    if url is None:
        raise conflict("The data source's URL can't be read with this service's secret key; set the data source again")
    return url


def put_feed(db: Session, index: Index, body: FeedIn, settings: Settings) -> dict[str, Any]:
    """Set the index's data source; the stored record."""
    _refuse_integration(index)
    current = index.feed or {}
    # the redacted form sent back unchanged keeps the stored URL
    url = feed_source_url(current, settings) if current and body.url == current["url"] else body.url
    check_feed_url(url, settings)
    feed = {
        "url": feed_url.redact(url),
        "sealedUrl": feed_url.seal(url, settings.signing_key()),
        "format": body.format,
        "schedule": body.schedule,
        "fieldMap": body.field_map or {},
        "lastSyncAt": (index.feed or {}).get("lastSyncAt"),
        "lastTaskId": (index.feed or {}).get("lastTaskId"),
        "configuredAt": isoformat(utcnow()),
    }
    index.feed = feed
    index.updated_at = utcnow()
    db.flush()
    return feed


def get_feed(index: Index) -> dict[str, Any]:
    """The index's stored data source; 404 when it has none."""
    if not index.feed:
        raise not_found("Data source")
    return index.feed


def delete_feed(db: Session, index: Index) -> None:
    if index.feed is not None:
        index.feed = None
        index.updated_at = utcnow()
        db.flush()


def sync_feed(db: Session, index: Index, settings: Settings) -> Task:
    _refuse_integration(index)
    if not index.feed:
        raise conflict("No data source is configured for this index")
    check_feed_url(feed_source_url(index.feed, settings), settings)
    pending = tasks.active_tasks(db, index.id, ("feed.sync",))
    if pending and pending[-1].status == "enqueued":
        return pending[-1]
    task = tasks.enqueue(db, project_id=index.project_id, index_id=index.id, type="feed.sync")
    feed = dict(index.feed)
    feed["lastTaskId"] = task.id
    index.feed = feed
    db.flush()
    return task


@register_usage_provider
def _feed_uses(_db: Session, index: Any) -> list[dict[str, Any]]:
    feed = index.feed or {}
    out = []
    for source, target in (feed.get("fieldMap") or {}).items():
        out.append(
            {
                "field": target,
                "kind": "dataSource",
                "id": index.id,
                "name": feed.get("url"),
                "path": f"fieldMap.{source}",
                "detailsPath": f"feed.fieldMap.{source}",
            }
        )
    return out


def projects_of(db: Session, index_ids: list[str]) -> dict[str, str]:
    """Index id → project id for those of ``index_ids`` that exist (the caller compares owners)."""
    return repository.projects_of(db, index_ids)

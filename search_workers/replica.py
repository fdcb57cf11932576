"""One shard replica: a :class:`ShardEngine` on a directory, plus what a host needs around it.

A plain class: :class:`~search_workers.local.LocalHost` holds instances in-process, and
:func:`search_workers.actors.factory.shard_actor` makes it a Ray actor.  It is what is restarted
after a failure: the constructor re-opens the files at ``path`` when they are there and starts an
empty shard (``applied_seq == 0``) when they are not; the control plane then re-feeds it from the
database (see :meth:`search_workers.host.BaseHost.missing`).

All methods are thread-safe (the engine serialises ``apply`` and ``search`` with its own lock).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Sequence
from typing import Any

from search_workers.engine import EngineError, ShardEngine
from shared.contract import Answer, Change, Query


class ReplicaRetired(RuntimeError):
    """The replica is moving to another node (:meth:`ShardReplica.retire`): a host treats it as
    down and asks another replica of the shard (unlike a dropped one's ``SHARD_DROPPED``, which
    means the whole generation is going)."""


class ShardReplica:
    retired = False

    def __init__(self, path: str, mapping: dict[str, Any], language: str = "en", durable: bool = True) -> None:
        self.path = os.fspath(path)
        self.mapping = mapping
        self.language = language
        # False: memory only (a serving process's replica that follows the database; no files)
        self.durable = durable
        self._lock = threading.Lock()
        self.engine: ShardEngine | None = ShardEngine(self.path, mapping, language, durable=durable)

    def _engine(self) -> ShardEngine:
        if self.retired:
            raise ReplicaRetired(self.path)
        e = self.engine
        if e is None:
            raise EngineError("shard replica was dropped", "SHARD_DROPPED")
        return e

    def ensure(self, mapping: dict[str, Any], language: str) -> dict[str, Any]:
        """Make sure the replica serves ``mapping``/``language`` (re-opening the engine if not); returns :meth:`info`."""
        with self._lock:
            if self.engine is None or mapping != self.mapping or language != self.language:
                if self.engine is not None:
                    self.engine.close()
                self.mapping, self.language = mapping, language
                self.engine = ShardEngine(self.path, mapping, language, durable=self.durable)
        return self.info()

    # -- reads ---------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        """Liveness probe: where the replica runs and what it holds (``persistedSeq``: what a restart
        would reopen; the rest is re-fed from the database)."""
        e = self._engine()
        return {"appliedSeq": e.applied_seq, "persistedSeq": e.persisted_seq, "docCount": e.doc_count,
                "nodeId": ray_node_id(), "pid": os.getpid(), "path": self.path, "persistError": e.persist_error}

    def persist_error(self) -> str | None:
        """Why the replica's files lag its memory (the disk refuses writes; it retries), or None."""
        e = self.engine
        return None if e is None else e.persist_error

    def applied_seq(self) -> int:
        return self._engine().applied_seq

    def search(self, query: Query, wait: bool = True) -> Answer:
        """The engine's answer with ``applied_seq`` set (so a caller can spot a replica that is behind)."""
        e = self._engine()
        answer = e.search(query, wait)
        answer.applied_seq = e.applied_seq
        return answer

    def get_with_seq(self, doc_id: str) -> tuple[dict[str, Any] | None, int]:
        e = self._engine()
        return e.get(doc_id), e.applied_seq

    # -- writes --------------------------------------------------------------------------
    def apply(self, changes: Sequence[Change], after_seq: int | None = None) -> int:
        """Apply ``changes`` (in seq order, may be empty); returns the applied seq.

        ``after_seq``: the batch holds every change of this shard after that sequence; a replica
        behind it (restarted empty, or from older files) does not apply it - that would leave a
        gap no later change reveals - and returns its own, lower, seq, so the caller re-feeds it.
        """
        with self._lock:
            e = self._engine()
            if after_seq is not None and e.applied_seq < after_seq:
                return e.applied_seq
            if changes:
                e.apply(changes)
            return e.applied_seq

    def settle(self) -> None:
        """See :meth:`ShardEngine.settle`."""
        e = self.engine
        if e is not None:
            e.settle()

    def close(self, snapshot: bool = True) -> None:
        with self._lock:
            if self.engine is not None:
                self.engine.close(snapshot)
                self.engine = None

    def destroy(self) -> None:
        """Close and delete the replica's files (no memory snapshot: it would be deleted at once)."""
        self.close(snapshot=False)
        if self.durable:
            with self._lock:
                shutil.rmtree(self.path, ignore_errors=True)

    def retire(self) -> None:
        """Answer every call from now on with :class:`ReplicaRetired`, and delete the files (the
        replica is re-created on another node; its actor is killed next)."""
        self.retired = True
        self.destroy()


def ray_node_id() -> str | None:
    """The Ray node id when running inside a Ray worker, else ``None`` (never imports or starts Ray)."""
    ray = sys.modules.get("ray")
    if ray is None:
        return None
    try:
        if not ray.is_initialized():
            return None
        return ray.get_runtime_context().get_node_id()  # type: ignore[no-any-return]
    except Exception:  # pragma: no cover - defensive
        return None

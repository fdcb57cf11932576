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
import threading
from typing import Any

import orjson

from search_workers.engine import ShardEngine

MARKER_FILE = "shopsearch-seq.json"


class ShardReplica:
    def __init__(self, path: str, mapping: dict, language: str = "en") -> None:
        self.path = os.fspath(path)
        self.mapping = mapping
        self.language = language
        self._lock = threading.Lock()
        self.engine: ShardEngine | None = ShardEngine(self.path, mapping, language)
        self._through = self._read_marker()

    # -- "complete through" marker ------------------------------------------------------
    # The engine's applied_seq only moves with the changes a shard receives; a task whose changes all
    # went to other shards leaves it behind the index sequence.  The marker, kept inside the shard's
    # directory (so it disappears with the files), records "every change of this shard up to N is
    # applied" as told by apply(..., after_seq=, through_seq=).  It is written after the engine
    # commit, so a crash in between can only make the replica look further behind, never ahead.
    @property
    def _marker_path(self) -> str:
        return os.path.join(self.path, MARKER_FILE)

    def _read_marker(self) -> int:
        try:
            with open(self._marker_path, "rb") as fh:
                return int(orjson.loads(fh.read()).get("throughSeq", 0))
        except (OSError, ValueError, AttributeError):
            return 0

    def _write_marker(self, seq: int) -> None:
        tmp = self._marker_path + ".tmp"
        with open(tmp, "wb") as fh:
            fh.write(orjson.dumps({"throughSeq": seq}))
        os.replace(tmp, self._marker_path)
        self._through = seq

    def _applied(self, e: ShardEngine) -> int:
        return max(e.applied_seq, self._through)

    def _engine(self) -> ShardEngine:
        e = self.engine
        if e is None:
            from search_workers.engine import EngineError

            raise EngineError("shard replica was dropped", "SHARD_DROPPED")
        return e

    def ensure(self, mapping: dict, language: str) -> dict[str, Any]:
        """Make sure the replica serves ``mapping``/``language`` (re-opening the engine if not); returns :meth:`info`."""
        with self._lock:
            if self.engine is None or mapping != self.mapping or language != self.language:
                if self.engine is not None:
                    self.engine.close()
                self.mapping, self.language = mapping, language
                self.engine = ShardEngine(self.path, mapping, language)
        return self.info()

    # -- reads ---------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        """Liveness probe: where the replica runs and what it holds."""
        e = self._engine()
        return {"appliedSeq": self._applied(e), "docCount": e.doc_count, "nodeId": _node_id(), "pid": os.getpid(),
                "path": self.path}

    def applied_seq(self) -> int:
        return self._applied(self._engine())

    def search(self, query: dict, wait: bool = True) -> dict:
        """The engine's answer plus ``appliedSeq`` (so a caller can spot a replica that is behind)."""
        e = self._engine()
        answer = e.search(query, wait)
        answer["appliedSeq"] = self._applied(e)
        return answer

    def get(self, doc_id: str) -> dict | None:
        return self._engine().get(doc_id)

    def get_with_seq(self, doc_id: str) -> tuple[dict | None, int]:
        e = self._engine()
        return e.get(doc_id), self._applied(e)

    # -- writes --------------------------------------------------------------------------
    def apply(self, changes: list[dict], after_seq: int | None = None, through_seq: int | None = None) -> int:
        """Apply ``changes`` (may be empty); returns the applied seq.

        With ``after_seq``, the batch is taken as *every* change of this shard in
        ``(after_seq, through_seq or last seq]``; a replica behind ``after_seq`` (e.g. restarted empty)
        does not apply it - that would leave a permanent gap - and returns its own, lower, seq.  When it
        does apply, ``through_seq`` becomes its applied seq even if its last change is older.
        """
        if through_seq is not None and after_seq is None:
            raise ValueError("through_seq needs after_seq")
        with self._lock:
            e = self._engine()
            if after_seq is not None and self._applied(e) < after_seq:
                return self._applied(e)
            if changes:
                e.apply(changes)
            if through_seq is not None:
                # The engine persists behind apply (write-behind).  With the "complete through"
                # protocol the answer is durable: on disk before it is reported, and the marker
                # never gets ahead of the documents.  Plain applies stay write-behind: after a
                # crash the shard reopens at its persisted seq and is re-fed from there.
                e.flush()
                if through_seq > self._applied(e):
                    self._write_marker(through_seq)
            return self._applied(e)

    def close(self, snapshot: bool = True) -> None:
        with self._lock:
            if self.engine is not None:
                self.engine.close(snapshot)
                self.engine = None

    def destroy(self) -> None:
        """Close and delete the replica's files (no memory snapshot: it would be deleted at once)."""
        self.close(snapshot=False)
        with self._lock:
            shutil.rmtree(self.path, ignore_errors=True)


def _node_id() -> str | None:
    """The Ray node id when running inside a Ray worker, else ``None`` (never initialises Ray)."""
    import sys

    if "ray" not in sys.modules:
        return None
    try:
        import ray

        if not ray.is_initialized():
            return None
        return ray.get_runtime_context().get_node_id()
    except Exception:  # pragma: no cover - defensive
        return None

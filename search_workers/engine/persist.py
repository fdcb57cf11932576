"""Write-behind persistence: Whoosh writes and commits in a helper process.

``ShardEngine.apply`` updates the in-memory index (search reflects the change when ``apply``
returns) and hands the same changes, as orjson document bytes, to a :class:`Persister`.  Whoosh's
writer is pure Python (~0.05-0.15 ms per document now that it writes ids and sources only, less
than the in-memory ``apply``); in the helper process it runs on another core instead of holding
the GIL of the process that answers searches and feeds the shards.

* **Order and atomicity.**  Jobs of one shard directory are applied in submission order.  The
  helper takes every job already queued for a directory into *one* Whoosh writer and one commit
  (group commit: bigger segments, fewer tier merges); the meta document written in that commit
  carries the ``applied_seq`` of the last job, so the persisted sequence never runs ahead of the
  persisted documents.  After a crash the shard reopens at the persisted sequence and the control
  plane re-feeds everything after it (``apply`` is idempotent by sequence).
* **Failure.**  A failed commit poisons its directory: later jobs for it are refused (applying
  them on top of a gap would persist a sequence whose changes are missing), the engine's
  ``on_error`` is called at once and its next submission raises ``PERSIST_FAILED``.  A helper that
  dies fails every pending job the same way.  The engine recovers by itself (``ShardEngine``'s
  repair: :meth:`Persister.release` forgets the directory here and in the helper, then the engine
  rewrites the files from memory).
* **Back-pressure.**  ``apply`` waits while more than ``MAX_PENDING_DOCS`` documents of its shard
  are not yet committed, so memory stays bounded and durability lags by a bounded amount.
* ``SHOPSEARCH_ENGINE_PERSIST=inline`` runs the same commit (``whoosh_store.commit_jobs``)
  synchronously inside ``apply`` (no helper process).

One helper process serves every engine of the process that started it (started lazily; it exits
when its parent's end of the socket closes).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from shared.settings import get_settings

from . import whoosh_store
from .errors import EngineError
from .whoosh_store import Job

log = logging.getLogger(__name__)

MAX_PENDING_DOCS = get_settings().engine_max_pending
# at most this many documents per group commit (the commit holds their postings in memory)
GROUP_MAX_DOCS = 8_000


def persist_mode() -> str:
    return get_settings().engine_persist.strip().lower()


# ---------------------------------------------------------------------------- helper process
class _Target:
    """One shard directory, as the helper process writes it."""

    def __init__(self, path: str, mapping: dict, language: str) -> None:
        self.path = path
        self.mapping = mapping
        self.language = language
        self.ix = whoosh_store.open_index(path)
        self.failed: str | None = None


def _child_main(fd: int) -> None:  # pragma: no cover - runs in the helper process
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides (Ctrl-C reaches the group)
    try:
        _serve(Connection(fd))
    except (EOFError, OSError):  # the parent is gone: whatever it did not get is re-fed after restart
        return


def _serve(conn: Any) -> None:  # pragma: no cover - runs in the helper process
    targets: dict[str, _Target] = {}
    while True:
        try:
            msgs = [conn.recv()]
        except (EOFError, OSError):
            return
        docs = 0
        while conn.poll() and docs < GROUP_MAX_DOCS:
            m = conn.recv()
            msgs.append(m)
            if m[0] == "job":
                docs += len(m[5])
        # group the jobs per directory; "close"/"stop" flush their directory first, in order
        pending: dict[str, list[tuple]] = {}
        for m in msgs:
            kind = m[0]
            if kind == "job":
                pending.setdefault(m[2], []).append(m)
            elif kind == "close":  # ("close", jid, path): flush it, forget the directory
                _run(conn, targets, m[2], pending.pop(m[2], None))
                t = targets.pop(m[2], None)
                if t is not None:
                    with contextlib.suppress(Exception):
                        t.ix.close()
                conn.send(("closed", m[2], [m[1]], None, None))
            elif kind == "stop":
                break
        for path, batch in pending.items():
            _run(conn, targets, path, batch)
        if msgs[-1][0] == "stop":
            return


def _run(conn: Any, targets: dict[str, _Target], path: str, batch: list[tuple] | None) -> None:  # pragma: no cover
    if not batch:
        return
    t = targets.get(path)
    jids = [m[1] for m in batch]
    try:
        if t is None:
            t = targets[path] = _Target(path, batch[0][3], batch[0][4])
        if t.failed:
            raise RuntimeError(t.failed)
        jobs: list[Job] = [(m[5], m[6]) for m in batch]
        whoosh_store.commit_jobs(t.ix, jobs, t.mapping, t.language)  # one writer, one commit
        conn.send(("done", path, jids, batch[-1][6], None))
    except BaseException as exc:  # noqa: BLE001 - reported to the engine
        msg = f"{type(exc).__name__}: {exc}"
        if t is not None:
            t.failed = msg
        conn.send(("done", path, jids, None, msg))


class _PathState:
    __slots__ = ("persisted", "outstanding", "pending_docs", "error", "on_error")

    def __init__(self) -> None:
        self.persisted: int | None = None
        self.outstanding: set[int] = set()
        self.pending_docs: dict[int, int] = {}
        self.error: str | None = None
        self.on_error: Callable[[str], None] | None = None


class Persister:
    """Client side of the helper process (thread-safe, one per process)."""

    def __init__(self) -> None:
        # A plain interpreter started on a socketpair (not multiprocessing's spawn, which re-imports
        # the parent's __main__ script).  It exits when the socket closes (this process is gone).
        parent, child = socket.socketpair()
        code = (f"import sys; sys.path[:0] = {[p for p in sys.path if p]!r}; "
                f"from search_workers.engine.persist import _child_main; _child_main({child.fileno()})")
        self._proc = subprocess.Popen([sys.executable, "-c", code], pass_fds=[child.fileno()],
                                      stdin=subprocess.DEVNULL)
        child.close()
        self._conn = Connection(parent.detach())
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._sender = threading.Thread(target=self._send_loop, name="shopsearch-persist-sender", daemon=True)
        self._sender.start()
        self._cond = threading.Condition()
        self._states: dict[str, _PathState] = {}
        self._ids = itertools.count(1)
        self._dead: str | None = None
        self._reader = threading.Thread(target=self._read, name="shopsearch-persist-reader", daemon=True)
        self._reader.start()

    def _state(self, path: str) -> _PathState:
        st = self._states.get(path)
        if st is None:
            st = self._states[path] = _PathState()
        return st

    def _read(self) -> None:
        while True:
            try:
                kind, path, jids, seq, err = self._conn.recv()
            except (EOFError, OSError):
                with self._cond:
                    self._dead = "the persistence process exited"
                    told = self._fail_all(self._dead)
                    self._cond.notify_all()
                _tell(told)
                return
            _tell(self._answered(path, jids, seq, err))

    def _answered(self, path: str, jids: list[int], seq: int | None, err: str | None) -> list[tuple[Callable[[str], None], str]]:
        """Settle the helper's answer for ``path``; whom to tell of a failure. A method of its own so
        that no local of the reading loop holds a directory's state while it waits for the next
        answer: the state's ``on_error`` is its engine, and the last state answered was usually a
        closed generation's, whose whole in-memory index it kept alive (~120 MiB per 100k
        documents after a reindex)."""
        told = []
        with self._cond:
            st = self._state(path)
            for j in jids:
                st.outstanding.discard(j)
                st.pending_docs.pop(j, None)
            if err:
                first = st.error is None
                st.error = st.error or err
                if first and st.on_error is not None:
                    told.append((st.on_error, st.error))
            elif seq is not None:
                st.persisted = seq
            self._cond.notify_all()
        return told

    def _fail_all(self, why: str) -> list[tuple[Callable[[str], None], str]]:
        """Fail every directory with jobs outstanding (the helper is gone); whom to tell. Under the lock."""
        told = []
        for st in self._states.values():
            if st.outstanding:
                if st.error is None and st.on_error is not None:
                    told.append((st.on_error, why))
                st.error = st.error or why
            st.outstanding.clear()
            st.pending_docs.clear()
        return told

    def alive(self) -> bool:
        return self._dead is None and self._proc.poll() is None

    def submit(self, path: str, mapping: dict, language: str, ops: list[tuple], seq: int,
               on_error: Callable[[str], None] | None = None) -> None:
        """Queue a job for ``path``; ``on_error(message)`` is called (on another thread) when a
        commit of ``path`` fails."""
        ndocs = max(1, len(ops))
        jid = next(self._ids)
        with self._cond:
            st = self._state(path)
            if on_error is not None:
                st.on_error = on_error
            while (st.error is None and self._dead is None and st.pending_docs
                   and sum(st.pending_docs.values()) + ndocs > MAX_PENDING_DOCS):
                self._cond.wait(1.0)  # back-pressure
            self._raise(st)
            st.outstanding.add(jid)
            st.pending_docs[jid] = ndocs
        self._outbox.put(("job", jid, path, mapping, language, ops, seq))

    def _send_loop(self) -> None:
        # The helper reads between commits: a blocking send must not stall ``apply``.
        while True:
            msg = self._outbox.get()
            if msg is None:
                return
            try:
                self._conn.send(msg)
                del msg  # the job's documents, not kept until the next one comes
            except (OSError, ValueError):
                with self._cond:
                    self._dead = self._dead or "the persistence process is gone"
                    told = self._fail_all(self._dead)
                    self._cond.notify_all()
                _tell(told)

    def _raise(self, st: _PathState) -> None:
        if st.error is not None:
            raise EngineError(f"persisting the shard failed: {st.error}", "PERSIST_FAILED")
        if self._dead is not None:
            raise EngineError(self._dead, "PERSIST_FAILED")

    def wait(self, path: str, timeout: float | None = None) -> int | None:
        """Wait until every job submitted for ``path`` is committed; returns the persisted seq."""
        with self._cond:
            st = self._state(path)
            if not self._cond.wait_for(lambda: not st.outstanding or self._dead is not None, timeout):
                raise EngineError("timed out waiting for the shard to be persisted", "PERSIST_TIMEOUT")
            self._raise(st)
            return st.persisted

    def persisted(self, path: str) -> int | None:
        """The last committed seq of ``path`` while nothing is outstanding, else the last reported."""
        with self._cond:
            st = self._states.get(path)
            if st is None:
                return None
            return st.persisted

    def pending(self, path: str) -> int:
        with self._cond:
            st = self._states.get(path)
            return sum(st.pending_docs.values()) if st else 0

    def release(self, path: str) -> None:
        """Flush and forget ``path`` in the helper (the engine is closing)."""
        jid = next(self._ids)
        with self._cond:
            st = self._state(path)
            st.outstanding.add(jid)
        if self._dead is None:
            self._outbox.put(("close", jid, path))
        with self._cond:
            self._cond.wait_for(lambda: jid not in st.outstanding or self._dead is not None, 600)
            err = st.error
            self._states.pop(path, None)
            st.on_error = None  # the closed engine: nothing may keep it through its directory's state
        if err is not None:
            raise EngineError(f"persisting the shard failed: {err}", "PERSIST_FAILED")


def _tell(told: list[tuple[Callable[[str], None], str]]) -> None:
    for on_error, why in told:
        try:
            on_error(why)
        except Exception:  # noqa: BLE001 - the reader thread must go on
            log.warning("reporting a persistence failure failed", exc_info=True)


_PERSISTER: Persister | None = None
_PLOCK = threading.Lock()


def get_persister() -> Persister:
    global _PERSISTER
    with _PLOCK:
        if _PERSISTER is None or not _PERSISTER.alive():
            _PERSISTER = Persister()
        return _PERSISTER

"""Serving processes whose replicas follow the database's change sequence.

``shopsearch serve --workers N`` runs N processes on one machine. The one holding the lock on
``DATA_DIR/serving.lock`` (:func:`take_primary`) owns the shard files and runs the task runner, as a
single process does. Every other process is a *follower*: it holds replicas of every index in memory
only (no files) and keeps them at the database's sequence. Every :data:`POLL_S` it reads each index's
serving generation and sequence, and the generation being built with where it is built from
(``indices.build``), and catches up by sequence with the same :func:`~control_plane.shard.catch_up` a
task uses. The database numbers every change, so that is all a follower needs to know.

Why a replica per process rather than columns shared through memory-mapped files: the in-memory index
is updated in place by every apply (postings appended, slots marked dead, compactions), which shared
read-only files would have to turn into immutable segments plus a merge policy; a replica per process
reuses the catch-up that already rebuilds any shard from the database, costs one more in-memory copy
per process (stated by ``benchmarks.search_bench``), and needs no locks between processes.

A task succeeds only when every serving process reflects it: a follower reports what it holds in
``serving_processes`` (:meth:`Follower._report`), and the task waits for every live process
(:func:`wait_for_replicas`). A process not heard from for :data:`LEASE_S` is not waited for; so that
it never answers from replicas a task skipped, it answers again only once it has reported within the
lease (:meth:`Follower.searchable`), i.e. after its loop has run and caught up again.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, NamedTuple, Protocol

from sqlalchemy.orm import Session, sessionmaker

from control_plane.serving import repository as registry
from control_plane.shard import ShardBridge, catch_up
from control_plane.shard.feed import Feed, RowSource
from shared.contract import ShardSpec
from shared.ids import new_id

log = logging.getLogger("shopsearch.serving")

#: a process not heard from for this long is not waited for (and does not answer until it reports again)
LEASE_S = 10.0
#: how often a follower reads the indices' sequences
POLL_S = 0.05
#: how often it reports when nothing changed
REPORT_S = 1.0
#: how long a generation that stopped serving stays searchable (searches that started on it finish)
DROP_DELAY_S = 3.0
#: how long a search waits for this process to catch up with a generation before answering 503
GATE_WAIT_S = 5.0


class SyncState(NamedTuple):
    """What a serving process's replicas of an index must hold."""

    id: str
    shards: int
    serving_generation: int
    seq: int
    flush_seq: int
    building_generation: int | None
    build: dict[str, Any] | None


class Catalog(Protocol):
    """What a follower reads of the database. The index and document domains answer (the app's
    start-up hands them over: ``control_plane.lifecycle``), so this package imports neither."""

    def sync_states(self, db: Session) -> list[SyncState]:
        """Every index's serving generation and sequence, and the generation being built (one query)."""

    def shard_spec(self, db: Session, index_id: str, generation: int | None,
                   mapping: dict[str, Any] | None) -> ShardSpec | None:
        """The spec of the index's serving generation (``generation`` None), or of the generation
        being built with its ``mapping``; None when the index is gone."""

    def rows(self, sessions: sessionmaker[Session], index_id: str, session_id: str | None) -> RowSource:
        """What a generation being built is fed from: the documents, or a replace session's staged ones."""

    def feed(self, sessions: sessionmaker[Session], index_id: str) -> contextlib.AbstractContextManager[Feed | None]:
        """The index's documents as of one moment (what its serving generation is fed from)."""


def take_primary(data_dir: Path) -> IO[bytes] | None:
    """The lock that makes this process the primary (shard files, task runner), or None when another
    process holds it. The operating system releases it when the process ends, however it ends."""
    data_dir.mkdir(parents=True, exist_ok=True)
    handle = open(data_dir / "serving.lock", "ab")  # noqa: SIM115 - held for the process's life
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


class Follower:
    """Keeps this process's in-memory replicas at the database's sequences, and reports them."""

    def __init__(self, sessions: sessionmaker[Session], bridge: ShardBridge, catalog: Catalog, *,
                 poll_s: float = POLL_S) -> None:
        self.sessions = sessions
        self.bridge = bridge
        self.catalog = catalog
        self.poll_s = poll_s
        self.id = f"{socket.gethostname()}:{os.getpid()}:{new_id('srv')}"
        self._lock = threading.Lock()
        self._held: dict[str, dict[int, int]] = {}  # index -> generation -> sequence every shard holds
        self._searchable: set[tuple[str, int]] = set()
        # index -> the generation the last pass saw being built: held only up to the build's
        # sequence, so not searched until a pass sees it serving and catches it up to the index's
        self._building: dict[str, int | None] = {}
        # what searches may use: (index, generation) searchable and not being built, recomputed under
        # the lock whenever either changes and read by searches in one step (reading the two apart let
        # a search pass between a pass's discard of a swapped-in generation and its note that the
        # build ended, and search a replica still at the build's sequence)
        self._open: frozenset[tuple[str, int]] = frozenset()
        self._busy: set[str] = set()
        self._drops: dict[tuple[str, int | None], float] = {}  # (index, generation or whole) -> when
        self._reported: dict[str, dict[str, int]] | None = None
        self._reported_at = -LEASE_S  # monotonic time the last report was taken (before its write)
        self._synced = threading.Event()  # the first pass found every index caught up
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="follow")
        self._thread: threading.Thread | None = None
        self._failing_since = 0.0
        # the last pass failed (the database unreachable): no task can succeed without this process
        # reporting either, so it keeps answering from memory (the database's outage is not its own)
        self._db_down = False
        self._reader: Session | None = None  # the loop's own connection, in autocommit (:meth:`_read_states`)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self.bridge.gate = self
        # registered before the first look at the indices: a task that succeeds from now on waits for
        # this process, and one that succeeded before is in what that first look reads
        with contextlib.suppress(Exception):
            self._report(time.monotonic())
        self._thread = threading.Thread(target=self._loop, name="replica-follower", daemon=True)
        self._thread.start()

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Block until every index was caught up once (start-up: the process serves only then)."""
        return self._synced.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(10)
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._close_reader()
        with contextlib.suppress(Exception), self.sessions.begin() as db:
            registry.forget(db, self.id)

    # ------------------------------------------------------------------ the gate searches pass
    def fresh(self) -> bool:
        """Reported within the lease (with a margin), so no task can have succeeded without this
        process; or the database is unreachable, so none can succeed at all."""
        return time.monotonic() - self._reported_at < LEASE_S - 1.0 or self._db_down

    def searchable(self, index_id: str, generation: int) -> bool:
        return (index_id, generation) in self._open and self.fresh()

    async def wait(self, index_id: str, generation: int) -> None:
        """Wait (up to :data:`GATE_WAIT_S`) until ``generation`` is searchable here."""
        self._wake.set()
        deadline = time.monotonic() + GATE_WAIT_S
        while not self.searchable(index_id, generation) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    # ------------------------------------------------------------------ the loop
    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._pass()
                self._db_down = False
                if self._failing_since:
                    log.warning("following the database works again after %.1f s",
                                time.monotonic() - self._failing_since)
                    self._failing_since = 0.0
            except Exception:  # noqa: BLE001 - a database outage must not end the loop
                self._db_down = True
                if not self._failing_since:
                    self._failing_since = time.monotonic()
                    log.warning("following the database failed; retrying", exc_info=True)
                self._stop.wait(0.5)
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def _read_states(self) -> list[SyncState]:
        """The indices' states, read over a connection the loop keeps, in autocommit: one round trip
        per pass (twenty a second) where a pooled session took four on PostgreSQL (the pool's ping,
        BEGIN, the query, ROLLBACK). The read is one statement, so it needs no transaction. A failure
        drops the connection; the next pass opens another."""
        try:
            if self._reader is None:
                connection = self.sessions.kw["bind"].connect().execution_options(isolation_level="AUTOCOMMIT")
                self._reader = Session(bind=connection)
            states = self.catalog.sync_states(self._reader)
            self._reader.rollback()  # ends the session's bookkeeping; nothing is open on the server
            return states
        except Exception:
            self._close_reader()
            raise

    def _close_reader(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            connection = reader.get_bind()
            with contextlib.suppress(Exception):
                reader.close()
            with contextlib.suppress(Exception):
                connection.close()  # type: ignore[union-attr]

    def _pass(self) -> None:
        taken = time.monotonic()
        states = self._read_states()
        behind = False
        wanted: dict[str, set[int]] = {}
        for state in states:
            targets = _targets(state)
            wanted[state.id] = set(targets)
            with self._lock:
                held = self._held.get(state.id, {})
                if (self._building.get(state.id) == state.serving_generation
                        and held.get(state.serving_generation, -1) < state.seq):
                    # swapped in since the last pass: searched again once caught up with the index
                    self._searchable.discard((state.id, state.serving_generation))
                    self._reopen()
                if self._building.get(state.id, -1) != state.building_generation:
                    self._building[state.id] = state.building_generation
                    self._reopen()
                lagging = any(held.get(gen, -1) < target for gen, target in targets.items())
                start = lagging and state.id not in self._busy
                if start:
                    self._busy.add(state.id)
            behind = behind or lagging
            if start:
                self._pool.submit(self._sync, state)
        self._schedule_drops(wanted)
        self._run_drops()
        self._report(taken)
        if not behind:
            self._synced.set()

    def _sync(self, state: SyncState) -> None:
        """Catch this process's replicas of one index up with ``state`` (a pool thread)."""
        try:
            for generation, target in _targets(state).items():
                self._catch_up(state, generation, target)
        except Exception:  # noqa: BLE001 - retried on the next pass
            log.warning("catching up index %s failed; retrying", state.id, exc_info=True)
            self._stop.wait(0.2)
        finally:
            with self._lock:
                self._busy.discard(state.id)
            self._wake.set()

    def _catch_up(self, state: SyncState, generation: int, target: int) -> None:
        building = generation != state.serving_generation
        build = state.build or {}
        with self._lock:
            opened = generation in self._held.get(state.id, {})
        if not opened:  # the generation's spec (mapping, layout) is read once, when it is first opened
            with self.sessions() as db:
                spec = self.catalog.shard_spec(db, state.id, generation if building else None,
                                               build.get("mapping") if building else None)
            if spec is None:
                return
            self.bridge.open(spec)
        if building:  # searched only once swapped in and caught up from one moment (below)
            low = catch_up(self.bridge, self.catalog.rows(self.sessions, state.id, build.get("sessionId")),
                           index_id=state.id, generation=generation, shards=state.shards, upto=target)
        else:
            # to the sequence of the moment the rows are read at, not the one the pass read: a
            # document rewritten since took a later sequence (see Feed)
            with self.catalog.feed(self.sessions, state.id) as feed:
                if feed is None:
                    return
                target = max(target, feed.seq)
                low = catch_up(self.bridge, feed.rows, index_id=state.id, generation=generation,
                               shards=state.shards, upto=feed.seq, flush_seq=feed.flush_seq)
        reached = min(low.values()) if low else target
        with self._lock:
            self._held.setdefault(state.id, {})[generation] = reached
            # caught up as the build it was when this pass began, but a later pass saw it swapped in:
            # searchable only once caught up with the index (the next pass's sync)
            swapped_since = building and self._building.get(state.id) != generation
            if reached >= target and not swapped_since:
                self._searchable.add((state.id, generation))
                self._reopen()

    def _reopen(self) -> None:
        """Recompute what searches may use (the lock held)."""
        self._open = frozenset(key for key in self._searchable if self._building.get(key[0]) != key[1])

    # ------------------------------------------------------------------ generations that stopped serving
    def _schedule_drops(self, wanted: dict[str, set[int]]) -> None:
        due = time.monotonic() + DROP_DELAY_S
        with self._lock:
            for index_id, generations in self._held.items():
                if index_id in self._busy:
                    continue
                if index_id not in wanted:
                    self._drops.setdefault((index_id, None), due)
                    continue
                for generation in generations:
                    if generation not in wanted[index_id]:
                        self._drops.setdefault((index_id, generation), due)

    def _run_drops(self) -> None:
        now = time.monotonic()
        with self._lock:
            ready = [key for key, when in self._drops.items() if when <= now and key[0] not in self._busy]
            for index_id, generation in ready:
                del self._drops[(index_id, generation)]
                held = self._held.get(index_id, {})
                for gen in [g for g in held if generation in (None, g)]:
                    del held[gen]
                    self._searchable.discard((index_id, gen))
                if not held:
                    self._held.pop(index_id, None)
            if ready:
                self._reopen()
        for index_id, generation in ready:
            self.bridge.drop(index_id, generation)

    # ------------------------------------------------------------------ reporting
    def _report(self, taken: float) -> None:
        """Write what the replicas hold when it changed, and at least every :data:`REPORT_S`."""
        with self._lock:
            replicas = {index_id: {str(gen): seq for gen, seq in gens.items()} for index_id, gens in self._held.items()}
        changed = replicas != self._reported
        if not changed and taken - self._reported_at < REPORT_S:
            return
        with self.sessions.begin() as db:
            registry.report(db, self.id, time.time() - (time.monotonic() - taken), replicas if changed else None)
        self._reported = replicas
        self._reported_at = taken


def _targets(state: SyncState) -> dict[int, int]:
    """``{generation: sequence}`` a follower must hold of one index: the serving generation at the
    index's sequence, and a generation being built at the sequence it is built up to."""
    targets = {state.serving_generation: state.seq}
    if state.building_generation is not None and state.build:
        targets[state.building_generation] = int(state.build["upto"])
    return targets


def wait_for_replicas(sessions: sessionmaker[Session], index_id: str, generation: int, seq: int, *,
                      timeout: float = 30.0, checkpoint: Callable[[], Any] | None = None) -> list[str]:
    """Wait until every live serving process holds ``generation`` of ``index_id`` up to ``seq``;
    returns the processes still behind after ``timeout`` (empty: all caught up)."""
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        with sessions() as db:
            processes = registry.live(db, time.time() - LEASE_S)
            behind = [p.id for p in processes if int((p.replicas.get(index_id) or {}).get(str(generation), -1)) < seq]
        if not behind or time.monotonic() > deadline:
            return behind
        if checkpoint is not None:
            checkpoint()
        time.sleep(pause)
        pause = min(pause * 2, 0.05)

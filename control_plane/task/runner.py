"""The task runner: claims tasks and runs their handlers, several indices in parallel.

It runs in-process in ``shopsearch serve`` (started by the app's startup hook when
``settings.run_task_runner``) and as ``shopsearch worker`` processes (several at once on PostgreSQL).
A claim loop thread takes tasks while worker slots are free (never two of one index, see
:mod:`control_plane.task.queue`); it wakes on an in-process event, set right after the commit of a
request that enqueued (``task.service.enqueue``), and otherwise polls every ``poll_interval`` seconds.
Task types and what runs them: :mod:`control_plane.task.registry`, filled from the domains' task
modules by :func:`control_plane.wiring.install` before a runner starts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from control_plane.shard import HostError, ShardBridge
from control_plane.state import Epochs, SharedState, open_state
from control_plane.task import heartbeats, owners, queue
from control_plane.task.queue import Claim, LeaseLost, TaskCanceled, TaskFailed, TaskRetry
from control_plane.task.registry import MAINTENANCE, TASK_TYPES, WATCHES, TaskContext
from control_plane.task.service import add_waker, remove_waker
from shared.settings import Settings

log = logging.getLogger("shopsearch.tasks")

MAX_ATTEMPTS = 50
MAINTENANCE_SECONDS = 30.0
WATCH_SECONDS = 2.0


class TaskRunner:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        bridge: ShardBridge,
        settings: Settings,
        *,
        concurrency: int = 4,
        lease_seconds: float = 30.0,
        poll_interval: float = 0.1,
        name: str | None = None,
        maintenance: bool = True,
        state: SharedState | None = None,
    ) -> None:
        self.sessions = sessions
        self.bridge = bridge
        self.settings = settings
        self.concurrency = max(1, concurrency)
        self.lease_seconds = lease_seconds
        self.poll_interval = poll_interval
        self.owner = name or owners.runner_name()
        self.maintenance = maintenance
        # Where index epochs live (Redis when configured): bumped when a task ends, retiring cached answers.
        self.state = state if state is not None else open_state(settings)
        self.epochs = Epochs(self.state)
        self.checkpoint_hook: Callable[[TaskContext], None] | None = None
        self._event = threading.Event()
        self._stop = threading.Event()
        self._paused = 0
        self._lock = threading.Lock()
        self._busy: set[str] = set()
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._last_maintenance = 0.0
        self._last_watch = 0.0
        self._watching: threading.Thread | None = None
        self._has_nodes: bool | None = None  # whether the host places replicas on nodes (asked once)
        self._last_beat = 0.0
        self._last_disk_check = 0.0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="task")
        self._thread = threading.Thread(target=self._loop, name="task-claimer", daemon=True)
        self._thread.start()
        add_waker(self.wake)

    def stop(self, timeout: float = 30.0) -> None:
        remove_waker(self.wake)
        self._stop.set()
        self._event.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._watching is not None:
            self._watching.join(timeout)
            self._watching = None
        try:  # the status route sees at once that this runner is gone
            with self.sessions.begin() as db:
                heartbeats.forget(db, self.owner)
        except Exception:  # noqa: BLE001 - the row then ages out
            log.debug("removing the heartbeat of %s failed", self.owner, exc_info=True)

    def wake(self) -> None:
        self._event.set()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No new claims while inside (tasks already running finish)."""
        with self._lock:
            self._paused += 1
        try:
            while True:
                with self._lock:
                    if not self._busy:
                        break
                time.sleep(0.02)
            yield
        finally:
            with self._lock:
                self._paused -= 1
            self.wake()

    def run_forever(self) -> None:
        """Run until interrupted (``shopsearch worker``)."""
        self.start()
        try:
            while not self._stop.wait(0.5):
                pass
        finally:
            self.stop()

    # ------------------------------------------------------------------ claiming
    def _loop(self) -> None:
        """Claim until nothing is claimable, then sleep until woken (an enqueue in this process, after
        its commit; a task of this runner ending) or ``poll_interval`` passed (an enqueue elsewhere).
        No quick re-polls after a wake: while this runner is busy with an index, each upload to it
        woke the loop into ten 20 ms polls that could only find the index busy (a claim statement
        fifty times a second for the whole of a bulk load: ~10 % of a serving process on PostgreSQL)."""
        failing_since = 0.0
        while not self._stop.is_set():
            try:
                self.state.replay()  # epoch bumps kept while Redis was unreachable
                self._maybe_beat()
                self._maybe_check_disk()
                self._maybe_maintain()
                self._maybe_watch()
                claimed = self._claim_some()
                if failing_since:
                    log.warning("claiming tasks works again after %.1f s", time.monotonic() - failing_since)
                    failing_since = 0.0
            except Exception:  # noqa: BLE001 - a database outage must not kill the runner; it resumes after
                if not failing_since:
                    failing_since = time.monotonic()
                    log.warning("claiming tasks failed; retrying every 0.5 s", exc_info=True)
                claimed = False
                self._stop.wait(0.5)
            if claimed:
                continue
            if self._event.wait(self.poll_interval):
                self._event.clear()

    def _claim_some(self) -> bool:
        with self._lock:
            if self._paused or len(self._busy) >= self.concurrency:
                return False
            busy = set(self._busy)
        claim = queue.claim_next(self.sessions, self.owner, self.lease_seconds, busy)
        if claim is None:
            return False
        with self._lock:
            self._busy.add(claim.index_id)
        assert self._pool is not None
        self._pool.submit(self._run_and_release, claim)
        return True

    def _run_and_release(self, claim: Claim) -> None:
        try:
            self.run_claim(claim)
        finally:
            with self._lock:
                self._busy.discard(claim.index_id)
            self._event.set()

    def _bump_epoch(self, claim: Claim) -> None:
        """What search answers may have changed: retire the index's cached answers (every instance)."""
        try:
            self.epochs.bump(claim.index_id)
        except Exception:  # noqa: BLE001 - answers then live until their TTL; never fail the runner
            log.warning("bumping the epoch of index %s failed", claim.index_id, exc_info=True)

    def _on_checkpoint(self, ctx: TaskContext) -> None:
        hook = self.checkpoint_hook  # read at each checkpoint: tests set it while a task runs
        if hook is not None:
            hook(ctx)

    def claim(self, exclude: set[str] | None = None) -> Claim | None:
        """Claim one task (tests and tools)."""
        return queue.claim_next(self.sessions, self.owner, self.lease_seconds, exclude)

    # ------------------------------------------------------------------ running
    def run_claim(self, claim: Claim) -> str:
        """Run one claimed task to its end; returns its final status ('' when the lease was lost).

        The index epoch is bumped right before the outcome is recorded (the shards already reflect
        the task) and again after it is committed (a generation swap is visible only then).
        """
        claim.extra["before_finish"] = lambda: self._bump_epoch(claim)
        try:
            return self._run_claim(claim)
        finally:
            self._bump_epoch(claim)

    def _run_claim(self, claim: Claim) -> str:
        ctx = TaskContext(claim, self.sessions, self.bridge, self.settings, self._on_checkpoint)
        task_type = TASK_TYPES.get(claim.type)
        handler = None if task_type is None else task_type.handler
        try:
            if handler is None:
                raise TaskFailed("INTERNAL", f"No handler for task type {claim.type}")
            result = handler(ctx)
            if result is not None:
                # the handler finished the task itself (a swap committed with the success)
                return str(result.get("status", "succeeded"))
            with self.sessions.begin() as db:
                queue.finish(db, claim, "succeeded", details=_final_details(claim.details))
            return "succeeded"
        except LeaseLost:
            log.warning("task %s: lease lost, another runner resumes it", claim.id)
            return ""
        except TaskCanceled:
            self._cleanup(ctx)
            return self._end(claim, "canceled", None)
        except TaskFailed as exc:
            self._cleanup(ctx)
            return self._end(claim, "failed", {"code": exc.code, "message": exc.message})
        except TaskRetry as exc:
            return self._retry(ctx, str(exc))
        except Exception as exc:  # noqa: BLE001
            if _transient(exc) and claim.attempts < MAX_ATTEMPTS:
                return self._retry(ctx, repr(exc))
            log.exception("task %s (%s) failed", claim.id, claim.type)
            self._cleanup(ctx)
            return self._end(claim, "failed", {"code": "INTERNAL", "message": f"The task failed: {type(exc).__name__}"})

    def _retry(self, ctx: TaskContext, why: str) -> str:
        claim = ctx.claim
        if claim.attempts >= MAX_ATTEMPTS:
            self._cleanup(ctx)
            return self._end(claim, "failed", {"code": "UNAVAILABLE", "message": "Search workers stayed unavailable"})
        log.warning("task %s: transient failure (%s), retrying", claim.id, why)
        # With the database down the release fails too: keep trying while the lease lasts, so the task
        # is claimable again as soon as the database is back (not only once the lease has expired).
        deadline = time.monotonic() + claim.lease_seconds
        while True:
            try:
                queue.release(self.sessions, claim, retry_in=min(10.0, 0.2 * claim.attempts))
                break
            except Exception:  # noqa: BLE001
                if time.monotonic() > deadline or self._stop.is_set():
                    log.warning("releasing task %s failed; its lease will expire", claim.id, exc_info=True)
                    break
                self._stop.wait(0.5)
        return "processing"

    def _cleanup(self, ctx: TaskContext) -> None:
        task_type = TASK_TYPES.get(ctx.claim.type)
        cleanup = None if task_type is None else task_type.cleanup
        if cleanup is None:
            return
        try:
            cleanup(ctx)
        except Exception:  # noqa: BLE001
            log.warning("clean-up of task %s failed", ctx.claim.id, exc_info=True)

    def _end(self, claim: Claim, status: str, error: dict[str, Any] | None) -> str:
        try:
            with self.sessions.begin() as db:
                details = dict(claim.details)
                details.pop("progress", None)
                queue.finish(db, claim, status, details=details, error=error)
        except LeaseLost:
            return ""
        return status

    def _maybe_beat(self) -> None:
        if time.monotonic() - self._last_beat < heartbeats.BEAT_SECONDS:
            return
        self._last_beat = time.monotonic()
        try:  # a crashed runner of this machine: its tasks are taken at once, not when its lease ends
            freed = queue.free_dead_leases(self.sessions)
            if freed:
                log.warning("the runners %s are gone (their process ended): their tasks are resumed", freed)
        except Exception:  # noqa: BLE001 - tried again at the next beat
            log.debug("looking for the leases of ended runners failed", exc_info=True)
        try:
            with self.sessions.begin() as db:
                heartbeats.beat(db, self.owner)
        except Exception:  # noqa: BLE001 - a missed beat must not stop the claiming (tried again next round)
            log.debug("writing the heartbeat of %s failed", self.owner, exc_info=True)

    def _maybe_check_disk(self) -> None:
        """Report replicas whose disk refuses writes (they serve from memory and retry by themselves)."""
        if time.monotonic() - self._last_disk_check < heartbeats.DISK_REPORT_SECONDS:
            return
        self._last_disk_check = time.monotonic()
        try:
            heartbeats.report_disk(self.state, self.bridge.persist_failures())
        except Exception:  # noqa: BLE001 - checked again in a second
            log.debug("checking the shards' disk failed", exc_info=True)

    def _maybe_maintain(self) -> None:
        if not self.maintenance or time.monotonic() - self._last_maintenance < MAINTENANCE_SECONDS:
            return
        self._last_maintenance = time.monotonic()
        for fn in MAINTENANCE:
            try:
                fn(self.sessions, self.bridge)
            except Exception:  # noqa: BLE001
                log.warning("maintenance %s failed", getattr(fn, "__name__", fn), exc_info=True)

    def _maybe_watch(self) -> None:
        """The watch jobs, in the leading runner only (:func:`heartbeats.leader`), on a thread of their
        own, one round at a time: a round that has work to do (re-feeding replicas after a node left)
        holds up no claim."""
        if (not self.maintenance or not WATCHES or time.monotonic() - self._last_watch < WATCH_SECONDS
                or (self._watching is not None and self._watching.is_alive())):
            return
        self._last_watch = time.monotonic()
        if self._has_nodes is None:  # an in-process host has no nodes, and never will: no query every 2 s
            try:
                self._has_nodes = self.bridge.nodes() is not None
            except Exception:  # noqa: BLE001 - the cluster does not answer yet: asked again next time
                return
        if not self._has_nodes:
            return
        with self.sessions() as db:
            if heartbeats.leader(db) != self.owner:
                return

        def watch() -> None:
            for fn in WATCHES:
                if self._stop.is_set():
                    return
                try:
                    fn(self.sessions, self.bridge)
                except Exception:  # noqa: BLE001 - run again in WATCH_SECONDS
                    log.warning("watch %s failed", getattr(fn, "__name__", fn), exc_info=True)

        self._watching = threading.Thread(target=watch, name="task-watch", daemon=True)
        self._watching.start()


def _final_details(details: dict[str, Any]) -> dict[str, Any]:
    out = dict(details)
    if "progress" in out:
        out["progress"] = 1.0
    return out


def _transient(exc: BaseException) -> bool:
    """Failures worth a retry: the shard hosts or the database were unreachable, or the disk refused
    a shard's files (a new generation's directory, say: read-only, full)."""
    if isinstance(exc, HostError | OSError):
        return True
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    return isinstance(exc, OperationalError)

"""Load the production tests drive: storefront searchers (one thread per API) and one sequential writer.

The writer's bookkeeping is what the end check holds the service to: a write counts once it was
answered 202; a request whose answer was lost (its API process killed, a 503) is sent again, to the
same or the other API, until one answers 202 - upserts and deletes by id are idempotent, so the
final state is that of the last write of each id either way.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

WORDS = ("kettle", "toaster", "blender", "speaker", "camera", "router", "monitor", "charger", "laptop", "tablet",
         "headphones", "printer", "keyboard", "mouse", "drone", "watch", "lamp", "fan", "heater", "grill")
BRANDS = ("acme", "zed", "orbit", "nimbus", "vertex", "quill")


def make_doc(rng: random.Random, doc_id: str, rev: int) -> dict[str, Any]:
    return {"id": doc_id, "sku": doc_id, "name": f"{rng.choice(WORDS)} {rng.choice(WORDS)} {doc_id}",
            "brand": rng.choice(BRANDS), "price": round(rng.uniform(5, 500), 2), "rev": rev}


@dataclass
class Sample:
    at: float
    ok: bool
    status: int  # 0: no answer (connection refused or reset)
    detail: str = ""


@dataclass
class Searcher:
    """Storefront searches against one API until stopped; every answer's time and outcome."""

    base: str
    url: str
    headers: dict[str, str]
    samples: list[Sample] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    pause: float = 0.02
    body: dict[str, Any] = field(default_factory=dict)  # sent with every search (an inline profile, say)

    def run(self) -> None:
        rng = random.Random(self.base)
        http = httpx.Client(base_url=self.base, headers=self.headers, timeout=10)
        while not self.stop.is_set():
            body = {**self.body, "q": rng.choice(WORDS), "filters": {"brand": [rng.choice(BRANDS)]} if rng.random() < 0.3 else {}}
            try:
                response = http.post(self.url, json=body)
                ok = response.status_code == 200 and isinstance(response.json().get("hits"), list)
                self.samples.append(Sample(time.monotonic(), ok, response.status_code, "" if ok else response.text[:300]))
            except httpx.HTTPError:
                self.samples.append(Sample(time.monotonic(), False, 0))
                http.close()
                http = httpx.Client(base_url=self.base, headers=self.headers, timeout=10)
                time.sleep(0.05)
            time.sleep(self.pause)
        http.close()

    def failures(self, start: float, end: float) -> list[Sample]:
        return [s for s in self.samples if start <= s.at < end and not s.ok]

    def successes(self, start: float, end: float) -> list[Sample]:
        return [s for s in self.samples if start <= s.at < end and s.ok]


class Accepted:
    """What the service accepted: ``expected[id]`` is the last body answered 202 (``None``: deleted)."""

    def __init__(self) -> None:
        self.expected: dict[str, dict[str, Any] | None] = {}
        self.task_ids: list[str] = []
        self.accepted_at: list[float] = []  # monotonic time of each 202
        self.retries = 0
        self.lock = threading.Lock()

    def record(self, docs: list[dict[str, Any]] | None = None, deleted: list[str] | None = None) -> None:
        with self.lock:
            for doc in docs or []:
                self.expected[doc["id"]] = doc
            for doc_id in deleted or []:
                self.expected[doc_id] = None

    def live(self) -> list[str]:
        with self.lock:
            return [i for i, b in self.expected.items() if b is not None]

    def since(self, at: float) -> int:
        """How many writes were answered 202 at or after ``at`` (monotonic)."""
        with self.lock:
            return sum(1 for t in self.accepted_at if t >= at)


def send(bases: list[str], headers: dict[str, str], path: str, body: Any, accepted: Accepted,
         rng: random.Random, timeout: float = 120) -> str:
    """POST until an API answers 202 (another one when this one does not answer); the task id."""
    deadline = time.monotonic() + timeout
    order = list(bases)
    rng.shuffle(order)
    attempt = 0
    while True:
        base = order[attempt % len(order)]
        attempt += 1
        try:
            response = httpx.post(base + path, json=body, headers=headers, timeout=30)
            if response.status_code == 202:
                task_id = str(response.json()["taskId"])
                with accepted.lock:
                    accepted.task_ids.append(task_id)
                    accepted.accepted_at.append(time.monotonic())
                return task_id
            assert response.status_code in (503, 429), (response.status_code, response.text)
        except httpx.HTTPError:
            pass
        accepted.retries += 1
        assert time.monotonic() < deadline, f"no API accepted {path} for {timeout} s"
        time.sleep(0.2)


def seed(bases: list[str], headers: dict[str, str], path: str, accepted: Accepted, rng: random.Random,
         count: int = 300) -> None:
    """``count`` documents ``s0000``... (kettles and lamps of brand acme) written and recorded as accepted."""
    docs = [{"id": f"s{i:04d}", "sku": f"s{i:04d}", "name": f"{rng.choice(['kettle', 'lamp'])} {i}",
             "brand": "acme", "price": 10.0 + i, "rev": 0} for i in range(count)]
    send(bases, headers, path, docs, accepted, rng)
    accepted.record(docs)


@dataclass
class Writer:
    """Sequential random adds, updates and deletes of small batches, through every API in turn."""

    bases: list[str]
    headers: dict[str, str]
    docs_path: str
    accepted: Accepted
    seed: int = 7
    stop: threading.Event = field(default_factory=threading.Event)
    pause: float = 0.15
    held: threading.Event = field(default_factory=threading.Event)  # no writes while set

    def run(self) -> None:
        rng = random.Random(self.seed)
        n = 0
        rev = 0
        while not self.stop.is_set():
            if self.held.is_set():
                time.sleep(0.05)
                continue
            live = self.accepted.live()
            if live and rng.random() < 0.25:
                ids = rng.sample(live, min(len(live), rng.randint(1, 5)))
                send(self.bases, self.headers, self.docs_path + "/delete", ids, self.accepted, rng)
                self.accepted.record(deleted=ids)
            else:
                batch = []
                for _ in range(rng.randint(1, 8)):
                    rev += 1
                    if live and rng.random() < 0.4:
                        doc_id = rng.choice(live)
                    else:
                        n += 1
                        doc_id = f"w{n:05d}"
                    batch.append(make_doc(rng, doc_id, rev))
                send(self.bases, self.headers, self.docs_path, batch, self.accepted, rng)
                self.accepted.record(batch)
            time.sleep(self.pause)


class Watched(threading.Thread):
    """A daemon thread that keeps the exception that ended it (an assertion in ``send``, say), so the
    test can fail on it instead of pytest printing a warning and the check comparing against the
    writes made until the thread died."""

    def __init__(self, target: Any) -> None:
        super().__init__(target=target.run, daemon=True, name=type(target).__name__)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            super().run()
        except BaseException as exc:  # noqa: BLE001 - kept for the test to raise
            self.error = exc


def start(target: Any) -> Watched:
    thread = Watched(target)
    thread.start()
    return thread


def check_alive(threads: list[Watched]) -> None:
    """Fail with the first thread's exception when one has died (each thread runs until stopped)."""
    for thread in threads:
        if thread.error is not None:
            raise AssertionError(f"the {thread.name} thread failed: {thread.error!r}") from thread.error
        assert thread.is_alive(), f"the {thread.name} thread ended before it was stopped"


def join_all(threads: list[Watched], timeout: float) -> None:
    """Join every thread (after its stop was set); fail when one failed or is still running."""
    for thread in threads:
        thread.join(timeout)
    for thread in threads:
        if thread.error is not None:
            raise AssertionError(f"the {thread.name} thread failed: {thread.error!r}") from thread.error
        assert not thread.is_alive(), f"the {thread.name} thread did not stop within {timeout} s"


def wait_writes_accepted(accepted: Accepted, threads: list[Watched], since: float, timeout: float) -> float:
    """Wait until a write was answered 202 after ``since`` (the writer resumed after a fault); the
    seconds it took. Fails at once when a thread died."""
    deadline = time.monotonic() + timeout
    while accepted.since(since) == 0:
        check_alive(threads)
        assert time.monotonic() < deadline, f"no write was accepted within {timeout} s after the fault"
        time.sleep(0.05)
    return time.monotonic() - since

"""Serving processes that start together on a new data directory all open its SQLite files.

Switching a file to WAL needs it to itself, and SQLite refuses at once ("database is locked", its
busy handler not asked) while another process opens or switches the same file: one of ``serve``'s
two processes then died at start (seen in a suite run). Several processes here open the same new
files at the same instant, round after round."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

PROCESSES = 6
ROUNDS = 6


def _open_at(paths: list[str], starts: list[float], results) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import text

    from control_plane.db import make_engine
    from control_plane.state.statefile import StateFile

    outcome = []
    for path, start in zip(paths, starts, strict=True):
        while time.time() < start:
            pass
        try:
            StateFile(Path(path) / "state.db")
            engine = make_engine(f"sqlite:///{path}/shopsearch.db")
            with engine.connect() as connection:
                mode = connection.execute(text("PRAGMA journal_mode")).scalar()
            engine.dispose()
            outcome.append(str(mode))
        except Exception as exc:  # noqa: BLE001 - reported to the test
            outcome.append(repr(exc))
    results.put(outcome)


def test_processes_opening_new_files_together_all_start(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    paths = [str(tmp_path / f"round{n}") for n in range(ROUNDS)]
    for path in paths:
        Path(path).mkdir()
    first = time.time() + 4  # every process imported before the first round
    starts = [first + 0.5 * n for n in range(ROUNDS)]
    results = context.Queue()
    processes = [context.Process(target=_open_at, args=(paths, starts, results)) for _ in range(PROCESSES)]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(timeout=30)
    assert outcomes == [["wal"] * ROUNDS] * PROCESSES

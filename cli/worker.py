"""``shopsearch worker``: a task runner only (production runs several, against PostgreSQL)."""

from __future__ import annotations

import logging
import signal
import threading

import typer

from cli.output import notice
from control_plane.db import make_engine, make_sessionmaker
from control_plane.shard import ShardBridge
from control_plane.task.runner import TaskRunner
from control_plane.wiring import install as install_wiring
from shared.settings import get_settings


def worker(
    concurrency: int = typer.Option(4, min=1, max=64, help="Tasks run in parallel (different indices)"),
    lease_seconds: float = typer.Option(30.0, min=1.0, help="Lease on a claimed task, renewed while working"),
    poll_interval: float = typer.Option(0.1, min=0.01, help="Seconds between polls for new tasks"),
) -> None:
    """Run a task runner until Ctrl-C (or SIGTERM)."""
    settings = get_settings()
    logging.basicConfig(level=settings.log_level.upper())
    if settings.is_sqlite:
        notice("[yellow]SQLite database: the server's in-process runner is usually enough.[/]")
    if not settings.ray_address:
        notice(
            "[yellow]SHOPSEARCH_RAY_ADDRESS is unset: this worker hosts its own shards; "
            "API processes only see them when they share the Ray cluster.[/]"
        )
    install_wiring()  # the task types the runner runs
    engine = make_engine(settings.resolved_database_url)
    bridge = ShardBridge(settings)
    runner = TaskRunner(
        make_sessionmaker(engine), bridge, settings,
        concurrency=concurrency, lease_seconds=lease_seconds, poll_interval=poll_interval,
    )
    stop = threading.Event()

    def on_signal(_signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    notice(f"task runner {runner.owner} started (concurrency {concurrency})")
    runner.start()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        notice("stopping: finishing running tasks …")
        runner.stop()
        bridge.close()
        engine.dispose()

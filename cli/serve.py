"""``shopsearch serve``: migrate, then run the API (embedded default with no settings)."""

from __future__ import annotations

import gc
import sys

import typer
import uvicorn

from control_plane.app import create_app
from control_plane.migrate import upgrade
from shared.settings import get_settings


def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on"),
    port: int = typer.Option(8000, help="Port to listen on"),
    workers: int = typer.Option(1, help="Uvicorn worker processes (needs PostgreSQL + Redis when > 1)"),
) -> None:
    """Run the API. Applies database migrations first; Ctrl-C stops it cleanly."""
    settings = get_settings()
    # Searches hop between the event loop and shard threads; with the default 5 ms GIL switch
    # interval every hop can wait that long behind a CPU-bound thread. 0.5 ms keeps hops cheap.
    sys.setswitchinterval(0.0005)
    upgrade(settings)
    if workers > 1:
        uvicorn.run("control_plane.app:create_app", factory=True, host=host, port=port, workers=workers)
    else:
        app = create_app(settings)
        # Everything imported and built so far lives as long as the process: out of the garbage
        # collector's full passes, which otherwise rescan it every few seconds under indexing.
        gc.collect()
        gc.freeze()
        uvicorn.run(app, host=host, port=port, log_level=settings.log_level.lower())

"""A second engine on a SQLite file must not drop the locks of the connections already open.

Closing any descriptor of a file releases every POSIX lock the process holds on it. When
``make_engine`` opened and closed the database file each time, a process with open WAL connections
lost its shared lock; another process closing its last connection then took the exclusive lock,
checkpointed and deleted the ``-wal`` and ``-shm`` files under the first process's connections, which
then failed with "disk I/O error" (seen in CI where a CLI subprocess shares a worker's database).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from control_plane.db import make_engine

SECOND_PROCESS = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1])
connection.execute("PRAGMA journal_mode=WAL")
connection.execute("SELECT count(*) FROM t").fetchone()
connection.close()  # the last connection it holds: SQLite checkpoints and deletes the WAL if it may
"""


def test_second_engine_keeps_the_open_connections_locks(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    first = make_engine(url)
    with first.connect() as connection:
        connection.execute(text("CREATE TABLE t (v INTEGER)"))
        connection.commit()
        connection.execute(text("INSERT INTO t VALUES (1)"))
        connection.commit()
        assert Path(f"{tmp_path / 'shared.db'}-wal").exists()

        make_engine(url).dispose()  # what a second component of the same process does at start
        subprocess.run([sys.executable, "-c", SECOND_PROCESS, str(tmp_path / "shared.db")], check=True)

        # the open connection still has its WAL: it reads and writes as before
        assert Path(f"{tmp_path / 'shared.db'}-wal").exists()
        connection.execute(text("INSERT INTO t VALUES (2)"))
        connection.commit()
        assert connection.execute(text("SELECT sum(v) FROM t")).scalar() == 3
    first.dispose()

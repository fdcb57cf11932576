"""Who holds a task's lease, and whether that process is gone.

A runner's name (``Task.lease_owner``, the heartbeat's id) is ``host:pid:start:run_…``: the machine,
the process id and the process's start time (clock ticks since boot, ``/proc/<pid>/stat``), and a
token of its own. A service restarted after a crash sees a task leased to a runner of its own machine
whose process is no longer there (no such process id, or one started at another time: the id was
reused) and takes the task at once, instead of waiting for the lease to expire. A lease held on
another machine is left to expire (nothing here can tell whether that process lives).
"""

from __future__ import annotations

import os
import socket
from functools import cache

from shared.ids import new_id

#: ``Task.lease_owner``'s width
OWNER_MAX = 80


def process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, as a string); ``""`` where the system
    does not say (no ``/proc``); None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            raw = stat.read().decode(errors="replace")
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return ""
    except OSError:
        return ""
    # the command name (in parentheses) may hold spaces: the fields after it are plain
    fields = raw[raw.rfind(")") + 2:].split()
    return fields[19] if len(fields) > 19 else ""


@cache
def _host() -> str:
    return socket.gethostname()


def runner_name() -> str:
    """A new runner's name for this process (see the module docstring)."""
    pid = os.getpid()
    tail = f":{pid}:{process_start(pid) or ''}:{new_id('run')}"
    return _host()[: OWNER_MAX - len(tail)] + tail


def gone(owner: str) -> bool:
    """Whether ``owner`` names a runner of this machine whose process has ended."""
    parts = owner.rsplit(":", 3)
    if len(parts) == 4:
        host, pid_text, started, _token = parts
    else:  # an older name, ``host:pid:run_…``: the process id alone
        parts = owner.rsplit(":", 2)
        if len(parts) != 3:
            return False
        host, pid_text, _token = parts
        started = ""
    if not pid_text.isdigit() or not _host().startswith(host) or not host:
        return False
    now = process_start(int(pid_text))
    if now is None:
        return True
    return bool(started) and bool(now) and now != started

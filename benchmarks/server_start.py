"""How long a ``shopsearch serve`` start takes (its default workers) until ``/ready``, and the CPU
its processes spent, on SQLite and on PostgreSQL + Redis; then ``shopsearch --version``.

    PYTHONPATH=. .venv/bin/python -m benchmarks.server_start [--rounds 3]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import time

from tests.fixtures.server import cli_command, running_server


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    for backend in ("sqlite", "postgres"):
        production = backend == "postgres"
        for n in range(1, rounds + 1):
            cpu, started = _children_cpu(), time.monotonic()
            with running_server(postgres=production, redis=production):
                ready = time.monotonic() - started
            print(f"{backend:8} round {n}: ready in {ready:.2f} s, "
                  f"{_children_cpu() - cpu:.2f} CPU-s (start and stop, every process)")
    started = time.monotonic()
    subprocess.run([*cli_command(), "--version"], check=True, capture_output=True)
    print(f"shopsearch --version: {time.monotonic() - started:.2f} s")


if __name__ == "__main__":
    main()

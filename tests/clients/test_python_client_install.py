"""The Python client installs on its own (``pip install ./clients/python``), depends on httpx and
pydantic only, imports nothing of the server, and gives a type checker sync answers on ``Client``
and awaitables on ``AsyncClient``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "clients" / "python"
SERVER = ("shared", "control_plane", "search_workers", "cli", "benchmarks", "loadtests")


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHOPSEARCH_", "PYTHON"))}
    return {**env, **extra}


def test_it_installs_alone_and_imports_nothing_of_the_server(tmp_path: Path) -> None:
    source = shutil.copytree(SOURCE, tmp_path / "src", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    target = tmp_path / "site"
    # --no-deps: httpx and pydantic come from this environment; --no-build-isolation: no index needed
    result = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                             "--target", str(target), str(source)], capture_output=True, text=True, timeout=300,
                            env=_clean_env())
    assert result.returncode == 0, result.stderr
    [dist] = target.glob("shopsearch_client-*.dist-info")
    metadata = Parser().parsestr((dist / "METADATA").read_text())
    assert metadata["Name"] == "shopsearch-client"
    assert sorted(r.split(">")[0].split("=")[0].strip() for r in metadata.get_all("Requires-Dist")) == [
        "httpx", "pydantic"]
    assert (target / "shopsearch_client" / "py.typed").is_file()

    probe = textwrap.dedent(f"""
        import sys
        import shopsearch_client
        from shopsearch_client import AsyncClient, Client, ShopsearchError, models
        assert shopsearch_client.__file__.startswith({str(target)!r}), shopsearch_client.__file__
        Client("http://127.0.0.1:1", "ss_sk_x").index("prj", "idx")
        AsyncClient("http://127.0.0.1:1", "ss_sk_x")
        server = sorted(name for name in sys.modules if name.split(".")[0] in {SERVER!r})
        assert not server, server
        print("ok", shopsearch_client.__version__)
    """)
    # run from an empty directory, the installed copy first on the path: not the checkout's
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                            cwd=tmp_path, env=_clean_env(PYTHONPATH=str(target)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok 0.1.0"


def test_a_type_checker_sees_answers_on_client_and_awaitables_on_async_client(tmp_path: Path) -> None:
    assert shutil.which("mypy", path=str(Path(sys.executable).parent)), "mypy is a dev dependency: ./dev test installs it"
    sample = tmp_path / "sample.py"
    sample.write_text(textwrap.dedent("""
        from shopsearch_client import AsyncClient, Client

        def use(client: Client, aclient: AsyncClient) -> None:
            index = client.index("prj", "idx")
            reveal_type(index.search("q"))
            reveal_type(index.iter_documents())
            reveal_type(index.replace_session())
            reveal_type(client.project("prj").wait_for_task("tsk"))
            aindex = aclient.index("prj", "idx")
            reveal_type(aindex.search("q"))
            reveal_type(aindex.iter_documents())
            reveal_type(aindex.replace_session())
            index.search(42)
    """))
    result = subprocess.run([str(Path(sys.executable).parent / "mypy"), "--no-incremental", "--cache-dir",
                             str(tmp_path / "cache"), "--config-file", "/dev/null", str(sample)],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env=_clean_env(MYPYPATH=str(SOURCE)))
    revealed = [line.split("Revealed type is ")[1].strip('"') for line in result.stdout.splitlines()
                if "Revealed type is" in line]
    assert revealed == [
        "shopsearch_client.models.SearchAnswer",
        "typing.Iterator[dict[str, Any]]",
        "contextlib.AbstractContextManager[shopsearch_client._handles.ReplaceSession[shopsearch_client._calls.Sync],"
        " bool | None]",
        "shopsearch_client.models.Task",
        "typing.Awaitable[shopsearch_client.models.SearchAnswer]",
        "typing.AsyncIterator[dict[str, Any]]",
        "contextlib.AbstractAsyncContextManager[shopsearch_client._handles.ReplaceSession[shopsearch_client._calls."
        "Async], bool | None]",
    ], result.stdout
    assert 'Argument 1 has incompatible type "int"; expected "str"' in result.stdout

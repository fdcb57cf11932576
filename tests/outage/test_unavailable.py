"""Which failures are outages (503 naming the part) and which stay errors, with real driver errors;
the API's answers with the database gone, on both backends; Redis fallbacks through a cut proxy."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import redis
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError

from control_plane.db import make_engine, make_sessionmaker
from control_plane.outages import unavailable_part
from control_plane.state import Epochs, RateLimiter, RedisState, Revocations, SharedStateUnavailable
from shared.errors import ServiceError
from tests.conftest import REDIS_URL
from tests.factories import make_account, make_key, make_project, runtime_of
from tests.tcp_proxy import TcpProxy

PG_PORT = 5432
REDIS_PORT = int(REDIS_URL.rsplit(":", 1)[1].split("/")[0])


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _raised(engine_url: str, sql: str) -> BaseException:
    engine = create_engine(engine_url)
    try:
        with engine.connect() as connection:
            connection.execute(text(sql))
    except Exception as exc:  # noqa: BLE001
        return exc
    finally:
        engine.dispose()
    raise AssertionError(f"{sql!r} did not fail")


def test_postgres_connection_lost_or_refused_is_the_database(pg_database: str) -> None:
    with TcpProxy(PG_PORT) as proxy:
        engine = create_engine(pg_database.replace(":5432/", f":{proxy.port}/") + "?connect_timeout=2")
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
            proxy.cut()
            with pytest.raises(DBAPIError) as lost:
                connection.execute(text("SELECT 1"))
        with pytest.raises(DBAPIError) as refused:
            engine.connect()
        engine.dispose()
    assert unavailable_part(lost.value) == "database"
    assert unavailable_part(refused.value) == "database"


def test_sql_errors_and_conflicts_are_not_outages(tmp_path: Path, pg_database: str) -> None:
    sqlite_url = f"sqlite:///{tmp_path / 'x.db'}"
    assert unavailable_part(_raised(sqlite_url, "SELECT * FROM no_such_table")) is None
    assert unavailable_part(_raised(pg_database, "SELECT * FROM no_such_table")) is None
    create = "CREATE TABLE t (id INTEGER PRIMARY KEY)"
    for url in (sqlite_url, pg_database):
        engine = create_engine(url)
        with engine.begin() as connection:
            connection.execute(text("DROP TABLE IF EXISTS t"))
            connection.execute(text(create))
            connection.execute(text("INSERT INTO t VALUES (1)"))
        engine.dispose()
        conflict = _raised(url, "INSERT INTO t VALUES (1)")
        assert type(conflict).__name__ == "IntegrityError" and unavailable_part(conflict) is None


def test_a_locked_or_unreachable_sqlite_file_is_the_database(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    holder = create_engine(f"sqlite:///{path}")
    with holder.connect() as connection:
        connection.exec_driver_sql("BEGIN EXCLUSIVE")
        locked = _raised(f"sqlite:///{path}?timeout=0", "SELECT 1 FROM sqlite_master")
        connection.rollback()
    holder.dispose()
    assert unavailable_part(locked) == "database"
    assert unavailable_part(_raised(f"sqlite:///{tmp_path}/missing/dir/x.db", "SELECT 1")) == "database"


def test_every_kind_of_route_answers_503_without_the_database(app, client, backend, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    account = make_account(app)
    project_id = make_project(app, account)
    key = {"Authorization": f"Bearer {make_key(app, project_id)}"}
    runtime = runtime_of(app)
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path}/missing/dir/shopsearch.db"
    else:
        url = f"postgresql+psycopg://postgres@127.0.0.1:{_closed_port()}/gone?connect_timeout=2"
    dead = make_engine(url)
    calls = [
        ("get", f"/v1/projects/{project_id}/indices", key, None),
        ("post", f"/v1/projects/{project_id}/indices", key, {"name": "x", "mapping": {"idField": "id", "fields": {}}}),
        ("get", f"/v1/projects/{project_id}", account.headers, None),
        ("post", "/v1/auth/login", {}, {"email": account.email, "password": account.password}),
    ]
    with monkeypatch.context() as patch:
        patch.setattr(runtime, "engine", dead)
        patch.setattr(runtime, "sessions", make_sessionmaker(dead))
        for method, path, headers, body in calls:
            response = client.request(method, path, headers=headers, json=body)
            assert response.status_code == 503, (path, response.text)
            error = response.json()["error"]
            assert error["code"] == "UNAVAILABLE" and error["details"][0]["path"] == "database"
            assert response.headers["retry-after"].isdigit()
        ready = client.get("/ready")
        assert (ready.status_code, ready.json()) == (503, {"status": "unavailable"})
    dead.dispose()
    # the database back: the same calls succeed, with no restart
    assert client.get("/ready").status_code == 200
    assert [client.request(m, p, headers=h, json=b).status_code for m, p, h, b in calls] == [200, 201, 200, 200]


def test_shared_state_falls_back_and_replays_when_redis_returns() -> None:
    direct = redis.Redis.from_url(REDIS_URL)
    prefix = f"sstest:outage:{socket.gethostname()}:{_closed_port()}:"
    with TcpProxy(REDIS_PORT) as proxy:
        state = RedisState(f"redis://127.0.0.1:{proxy.port}/0", prefix)
        epochs, revocations = Epochs(state), Revocations(state)
        assert epochs.bump("idx_1") == 1 and epochs.current("idx_1") == 1
        proxy.cut()
        with pytest.raises(SharedStateUnavailable):
            state.get("revoked:key:key_1")
        assert revocations.is_revoked("key", "key_1") is None  # unknown: the caller asks the database
        revocations.revoke("key", "key_1", 60)  # kept, not raised
        assert epochs.bump("idx_1") is None
        first, second = epochs.current("idx_1"), epochs.current("idx_1")
        assert first < 0 and second < 0 and first != second  # never a value a cache could hold
        assert direct.get(prefix + "epoch:index:idx_1") == b"1"
        proxy.restore()
        state.backoff.reset()  # skip the pause before Redis is tried again
        assert state.ping()
        assert revocations.is_revoked("key", "key_1") and epochs.current("idx_1") == 2
        assert 0 < int(direct.ttl(prefix + "revoked:key:key_1")) <= 60
    for name in direct.scan_iter(f"{prefix}*"):
        direct.delete(name)


def test_rate_limits_count_locally_while_redis_is_unreachable() -> None:
    with TcpProxy(REDIS_PORT) as proxy:
        limiter = RateLimiter(RedisState(f"redis://127.0.0.1:{proxy.port}/0", f"sstest:outage:{_closed_port()}:"))
        proxy.cut()
        for _ in range(3):
            limiter.hit("3/minute", "login", "someone")
        with pytest.raises(ServiceError) as refused:
            limiter.hit("3/minute", "login", "someone")
        assert refused.value.code == "RATE_LIMITED"


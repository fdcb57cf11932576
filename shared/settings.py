"""The one place that reads the environment (prefix ``SHOPSEARCH_``, CONTRACT §8).

With no settings at all the service runs on the embedded default: SQLite and shard files under
``DATA_DIR``, shards and the task runner in-process, no Redis.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class SmtpSettings(BaseModel):
    host: str | None
    port: int
    user: str | None
    password: str | None
    sender: str
    tls: bool
    #: no SMTP host and a service only this machine reaches: mails are logged whole (their links work)
    log_whole: bool = False


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SHOPSEARCH_", extra="ignore")

    data_dir: Path = Path(".shopsearch")
    database_url: str | None = None
    # Seconds to wait for a PostgreSQL connection before answering 503 (libpq waits forever by default).
    database_connect_timeout: int = 5
    redis_url: str | None = None
    redis_prefix: str = "shopsearch:"
    ray_address: str | None = None
    # Ray mode: every serving process also keeps in-memory replicas of every index that follow the
    # database (as in-process followers do) and answers searches from them once caught up; the shard
    # actors stay the durable copies that tasks write to and that searches fall back to. Unset: on with
    # ``ray_address=local`` (one machine: every shard is local), off when joining a cluster.
    ray_near_replicas: bool | None = None
    public_url: str | None = Field(
        default=None, description="Base of links in emails; unset: the address each request reached")
    secret_key: str | None = Field(default=None, description="Signs session tokens; generated into DATA_DIR when unset")

    smtp_host: str | None = None
    smtp_port: int = 25
    smtp_user: str | None = None
    smtp_password: str | None = None
    smtp_from: str = "shopsearch <no-reply@shopsearch.local>"
    smtp_tls: bool = False

    cookie_secure: bool = False
    feed_allow_private_hosts: bool = False
    log_level: str = "INFO"

    access_token_ttl_seconds: int = 900
    refresh_token_ttl_seconds: int = 30 * 24 * 3600
    email_token_ttl_seconds: int = 24 * 3600
    impersonation_ttl_seconds: int = 3600
    max_body_bytes: int = 10 * 1024 * 1024
    # One document, as stored (serialized JSON); larger ones answer 400 at upload.
    max_document_bytes: int = 100 * 1024
    login_limit_per_email: str = "10/minute"
    login_limit_per_ip: str = "30/minute"
    # Per client address, counted before any work: registrations, and each other unauthenticated
    # auth route (login, refresh, forgot/reset-password, verify-email, impersonate) on its own.
    register_limit_per_ip: str = "20/hour"
    auth_limit_per_ip: str = "60/minute"
    # argon2 takes 64 MiB and a core per hash: at most this many at once (0: half the CPU cores), and
    # at most ``password_hash_queue`` more wait for one; any more answer 503 at once.
    password_hash_concurrency: int = 0
    password_hash_queue: int = 16
    status_limit_per_ip: str = "60/minute"
    run_task_runner: bool = True
    # Serving processes on this machine (``shopsearch serve --workers`` sets it for its workers):
    # above 1, processes without Redis share epochs, revocations and rate limits through
    # ``DATA_DIR/state.db``, and each holds its own in-memory replicas following the database.
    serving_processes: int = 1
    # The address ``shopsearch serve`` listens on (it sets this for its processes): on a loopback
    # address with no SMTP host, mails are logged whole, so a local sign-up can be verified.
    listen_host: str | None = None
    # Shard engine persistence: "process" writes Whoosh files in a helper process behind apply
    # (search reflects changes at once, disk trails); "inline" writes them inside apply.
    engine_persist: str = "process"
    engine_max_pending: int = 12_000
    # A search still running after this answers 503 SEARCH_TIMEOUT and its engine work stops.
    search_timeout_ms: int = 2000
    # In-process shards: a search runs on the event loop for at most this long; past it, it is
    # started again on a worker thread, so an expensive search never holds other requests up.
    search_loop_budget_ms: int = 25
    # Search analytics (aggregated per index, day and query) older than this many days are purged.
    analytics_retention_days: int = Field(default=90, ge=1)
    # Clicks and conversions counted per index and UTC day; past it, events are accepted (200) and
    # not counted (``accepted`` says how many were).
    analytics_events_per_day: int = Field(default=50_000, ge=0)

    @property
    def resolved_database_url(self) -> str:
        url = self.database_url
        if url:
            if url.startswith("postgresql") and "connect_timeout=" not in url:
                url += ("&" if "?" in url else "?") + f"connect_timeout={self.database_connect_timeout}"
            return url
        return f"sqlite:///{(self.data_dir / 'shopsearch.db').resolve()}"

    @property
    def near_replicas(self) -> bool:
        """Ray mode with near replicas (see ``ray_near_replicas``)."""
        if not self.ray_address:
            return False
        return self.ray_address == "local" if self.ray_near_replicas is None else self.ray_near_replicas

    @property
    def is_sqlite(self) -> bool:
        return self.resolved_database_url.startswith("sqlite")

    @property
    def smtp(self) -> SmtpSettings:
        return SmtpSettings(
            host=self.smtp_host,
            port=self.smtp_port,
            user=self.smtp_user,
            password=self.smtp_password,
            sender=self.smtp_from,
            tls=self.smtp_tls,
            log_whole=self.smtp_host is None and self.listen_host is not None and is_loopback(self.listen_host),
        )

    def signing_key(self) -> str:
        """The token-signing secret; on the embedded default it is generated once and kept in DATA_DIR."""
        if self.secret_key:
            return self.secret_key
        path = self.data_dir / "secret_key"
        if not path.exists():
            self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            # created 0600, so never readable by others, not even briefly; another process may win the race
            with contextlib.suppress(FileExistsError), os.fdopen(
                os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w"
            ) as file:
                file.write(secrets.token_urlsafe(48))
        self.secret_key = path.read_text().strip()
        return self.secret_key


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@lru_cache
def get_settings() -> Settings:
    return Settings()

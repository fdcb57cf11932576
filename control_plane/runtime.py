"""Everything a running API process holds, built once per app and reached through dependencies."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from control_plane.db import make_engine, make_sessionmaker, private_dir
from control_plane.hashing import PasswordHashing
from control_plane.mailer import Mailer
from control_plane.ratelimit import RateLimiter
from control_plane.sharedstate import SharedState, make_shared_state
from control_plane.statefile import state_file
from shared.settings import Settings


@dataclass
class Runtime:
    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    state: SharedState
    limiter: RateLimiter
    quotas: RateLimiter
    mailer: Mailer
    # Counted-then-verified attempts (sign-in failures), given back on success: fixed windows.
    attempts: RateLimiter
    hashing: PasswordHashing
    # Filled in by later parts of the app (search host, task runner, caches).
    extras: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, settings: Settings) -> Runtime:
        private_dir(settings.data_dir)
        engine = make_engine(settings.resolved_database_url)
        # several serving processes without Redis share their limits through the machine's state file
        file = state_file(settings.data_dir) if settings.serving_processes > 1 and not settings.redis_url else None
        return cls(
            settings=settings,
            engine=engine,
            sessions=make_sessionmaker(engine),
            state=make_shared_state(settings),
            limiter=RateLimiter(settings.redis_url, settings.redis_prefix, file=file),
            quotas=RateLimiter(settings.redis_url, settings.redis_prefix, strategy="fixed", file=file, batched=True),
            mailer=Mailer(settings.smtp),
            attempts=RateLimiter(settings.redis_url, f"{settings.redis_prefix}attempts:", strategy="fixed", file=file),
            hashing=PasswordHashing(settings.password_hash_concurrency, settings.password_hash_queue),
        )

    def close(self) -> None:
        self.mailer.close()
        self.engine.dispose()

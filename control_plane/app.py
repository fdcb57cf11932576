"""The FastAPI application factory."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI

from control_plane.access.keys import KeyCache
from control_plane.analytics.endpoints import router as analytics_router
from control_plane.analytics.hooks import start_analytics, stop_analytics
from control_plane.analytics.query_ids import QueryIds
from control_plane.analytics.recorder import Recorder
from control_plane.api_key.endpoints import router as api_key_router
from control_plane.auth.endpoints import router as auth_router
from control_plane.cabinet import install_cabinet
from control_plane.cors import StorefrontCORS
from control_plane.db import make_engine, make_sessionmaker, private_dir
from control_plane.demo import install_demo
from control_plane.document.endpoints import router as document_router
from control_plane.door.endpoints import router as search_router
from control_plane.errors import BodySizeLimit, install_error_handlers
from control_plane.events.endpoints import router as events_router
from control_plane.hashing import PasswordHashing
from control_plane.index.endpoints import router as index_router
from control_plane.lifecycle import start_indexing, stop_indexing
from control_plane.mailer import Mailer
from control_plane.mcp.mount import install_mcp
from control_plane.methods import ConcreteRoutesFirst
from control_plane.openapi import install_openapi
from control_plane.org.endpoints import router as org_router
from control_plane.page_headers import FrameGuard
from control_plane.profile.endpoints import router as profile_router
from control_plane.project.endpoints import router as project_router
from control_plane.rule.endpoints import router as rule_router
from control_plane.runtime import Indexing, Runtime
from control_plane.search.cache import AnswerCache
from control_plane.search.service import start_search, stop_search
from control_plane.search.state import SearchRuntime
from control_plane.security import prepare_password_checks
from control_plane.state import Epochs, RateLimiter, Revocations, open_state
from control_plane.status.endpoints import router as status_router
from control_plane.status.process import ProcessStatus
from control_plane.storefront.endpoints import router as storefront_router
from control_plane.suggestion.endpoints import router as suggestion_router
from control_plane.suggestion.state import SuggestState
from control_plane.synonym.endpoints import router as synonym_router
from control_plane.task.endpoints import router as task_router
from control_plane.tenants.endpoints import router as tenants_router
from control_plane.wiring import install as install_wiring
from shared.settings import Settings, get_settings


def start_state(runtime: Runtime) -> None:
    """The shared state's listener (Redis: changes of epochs and revocations pushed to this process)."""
    runtime.state.start()


def stop_state(runtime: Runtime) -> None:
    runtime.state.stop()


# Start/stop hooks of parts that run beside the API (shard host, task runner), in start order.
LifecycleHook = Callable[[Runtime], None]
STARTUP_HOOKS: list[LifecycleHook] = [start_state, start_indexing, start_analytics, start_search]
SHUTDOWN_HOOKS: list[LifecycleHook] = [stop_state, stop_indexing, stop_analytics, stop_search]


def build_runtime(settings: Settings) -> Runtime:
    """Everything the process holds, built once: connections, the shared state and what stands on
    it, and each part's in-memory state."""
    private_dir(settings.data_dir)
    engine = make_engine(settings.resolved_database_url)
    sessions = make_sessionmaker(engine)
    state = open_state(settings)
    search = SearchRuntime(AnswerCache(shared=state.answers))
    analytics = Recorder(sessions)
    search.events.subscribe(analytics)
    return Runtime(
        settings=settings,
        engine=engine,
        sessions=sessions,
        state=state,
        epochs=Epochs(state),
        revocations=Revocations(state),
        limiter=RateLimiter(state),
        quotas=RateLimiter(state, strategy="fixed", batched=True),
        attempts=RateLimiter(state, "attempts:", strategy="fixed"),
        mailer=Mailer(settings.smtp),
        hashing=PasswordHashing(settings.password_hash_concurrency, settings.password_hash_queue),
        keys=KeyCache(),
        search=search,
        suggestions=SuggestState(),
        query_ids=QueryIds(settings.signing_key()),
        analytics=analytics,
        status=ProcessStatus(),
        indexing=Indexing(),
    )


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    install_wiring()
    prepare_password_checks()
    logging.basicConfig(level=settings.log_level.upper())
    runtime = build_runtime(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        for hook in STARTUP_HOOKS:
            hook(runtime)
        try:
            yield
        finally:
            for hook in reversed(SHUTDOWN_HOOKS):
                hook(runtime)
            runtime.close()

    app = FastAPI(
        title="shopsearch",
        version="0.1.0",
        description="Hosted search for online shops.",
        lifespan=lifespan,
        docs_url=None,  # /docs and /redoc are served offline by install_openapi
        redoc_url=None,
    )
    app.state.runtime = runtime
    install_error_handlers(app)
    install_openapi(app)
    app.add_middleware(ConcreteRoutesFirst)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(StorefrontCORS)
    app.add_middleware(FrameGuard)  # every HTML answer refuses framing, whichever route made it
    # The storefront routes first: they take most of the traffic, and routes are matched in order.
    app.include_router(storefront_router, prefix="/v1")
    app.include_router(status_router)
    app.include_router(auth_router, prefix="/v1")
    app.include_router(org_router, prefix="/v1")
    app.include_router(tenants_router, prefix="/v1")
    app.include_router(project_router, prefix="/v1")
    app.include_router(api_key_router, prefix="/v1")
    app.include_router(index_router, prefix="/v1")
    app.include_router(document_router, prefix="/v1")
    app.include_router(task_router, prefix="/v1")
    app.include_router(search_router, prefix="/v1")
    app.include_router(profile_router, prefix="/v1")
    app.include_router(synonym_router, prefix="/v1")
    app.include_router(rule_router, prefix="/v1")
    app.include_router(suggestion_router, prefix="/v1")
    app.include_router(analytics_router, prefix="/v1")
    app.include_router(events_router, prefix="/v1")
    install_demo(app)  # the `shopsearch demo` storefront page at /demo
    install_mcp(app)  # /mcp: the MCP app for AI agents
    install_cabinet(app)  # last: the merchant dashboard's pages at / and its files under /cabinet/
    return app

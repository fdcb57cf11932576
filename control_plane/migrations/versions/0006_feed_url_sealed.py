"""feed URL secrets: store the feed URL encrypted, and only its redacted form in clear

A data source's ``url`` could carry credentials (``user:password@``, ``?token=``) and was stored
and shown as given. The stored feed now keeps ``url`` redacted and ``sealedUrl``, the full URL
encrypted under a key derived from the service's secret key (see control_plane/index/feed_url.py).
The secret key comes from the settings ``shopsearch db upgrade`` / ``serve`` pass in.

Revision ID: 0006
Revises: 0005
"""

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import context, op

from control_plane.index import feed_url

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

_INDICES = sa.table("indices", sa.column("id", sa.String), sa.column("feed", sa.JSON))


def _secret() -> str:
    from shared.settings import get_settings

    settings = context.config.attributes.get("settings") or get_settings()
    return str(settings.signing_key())


def rewrite_feeds(bind: Any, change: Callable[[dict[str, Any], str], dict[str, Any] | None],
                  secret: Callable[[], str]) -> None:
    """Applies ``change`` to every stored feed (the secret is only read when there is one)."""
    key: str | None = None
    for row in bind.execute(sa.select(_INDICES.c.id, _INDICES.c.feed).where(_INDICES.c.feed.is_not(None))).all():
        if not isinstance(row.feed, dict):
            continue
        key = key or secret()
        feed = change(dict(row.feed), key)
        if feed is not None:
            bind.execute(sa.update(_INDICES).where(_INDICES.c.id == row.id).values(feed=feed))


def seal_feed(feed: dict[str, Any], secret: str) -> dict[str, Any] | None:
    if "sealedUrl" in feed or not isinstance(feed.get("url"), str):
        return None
    url = feed["url"]
    return {**feed, "url": feed_url.redact(url), "sealedUrl": feed_url.seal(url, secret)}


def unseal_feed(feed: dict[str, Any], secret: str) -> dict[str, Any] | None:
    if "sealedUrl" not in feed:
        return None
    url = feed_url.unseal(feed.pop("sealedUrl"), secret)
    return {**feed, "url": url if url is not None else feed["url"]}


def upgrade() -> None:
    rewrite_feeds(op.get_bind(), seal_feed, _secret)


def downgrade() -> None:
    rewrite_feeds(op.get_bind(), unseal_feed, _secret)

"""Which shard host a process runs, picked from the settings (``SHOPSEARCH_RAY_ADDRESS``).

The one module that knows both hosts: :class:`~search_workers.local.LocalHost` (engines in-process,
the embedded default) and :class:`~search_workers.actors.ray_host.RayHost` (one Ray actor per
shard replica). The Ray host is imported only when asked for: Ray's import costs a second the
embedded default never needs.
"""

from __future__ import annotations

from search_workers.host import ShardHost
from search_workers.local import LocalHost
from shared.settings import Settings

__all__ = ["make_host", "start_local_cluster"]


def make_host(settings: Settings, *, durable: bool = True) -> ShardHost:
    """``ray_address`` unset -> :class:`LocalHost` under ``data_dir/shards`` (``durable=False``: its
    replicas in memory only); ``"local"`` -> a local Ray started here; ``"auto"`` / ``"ray://…"`` /
    ``host:port`` -> join that cluster."""
    shards_dir = settings.data_dir / "shards"
    if not settings.ray_address:
        return LocalHost(shards_dir, durable=durable)
    from search_workers.actors.ray_host import RayHost

    return RayHost.connect(settings.ray_address, shards_dir)


def start_local_cluster() -> str:
    """A Ray instance on this machine that several serving processes join (its address)."""
    from search_workers.actors.ray_host import RayHost

    return RayHost.start_cluster()

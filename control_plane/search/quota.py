"""Search quotas: the plan's searches per second, in separate buckets for the shop's own side and
for its storefront's shoppers, so anonymous traffic can never use up the shop server's searches.

- Secret keys (and members searching on the secret route) share one bucket per project at the
  plan's rate.
- Public keys (storefront pages) are counted per client address at half the plan's rate (at least
  one per second), so one shopper (or one abuser) can take at most half of the storefront's share;
  and all together per project at the plan's rate, which bounds what the storefront can cost.
  IPv6 clients are counted per /64, the block one subscriber usually holds.

Counts run over 10-second fixed windows so that short bursts (search as you type) pass. The
client address is the connection's (behind a reverse proxy, the proxy must pass the shopper's).
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from control_plane.access.caller import Principal
from control_plane.runtime import Runtime

WINDOW_SECONDS = 10


@lru_cache(maxsize=65536)
def _client(ip: str) -> str:
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return ip
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def charge_search(runtime: Runtime, project_id: str, searches_per_second: int, principal: Principal,
                  client_ip: str) -> None:
    """Count one search against the caller's bucket; raise ``RATE_LIMITED`` (429) past its quota."""
    per_window = searches_per_second * WINDOW_SECONDS
    if principal.kind != "public_key":
        runtime.quotas.hit(f"{per_window}/{WINDOW_SECONDS} seconds", "search", project_id)
        return
    # the shopper's own bucket first: a refused shopper does not use up the storefront's share
    per_shopper = max(WINDOW_SECONDS, per_window // 2)
    runtime.quotas.hit(f"{per_shopper}/{WINDOW_SECONDS} seconds", "search-shopper", project_id, _client(client_ip))
    runtime.quotas.hit(f"{per_window}/{WINDOW_SECONDS} seconds", "search-storefront", project_id)

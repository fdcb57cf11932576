"""Fetching a data source (feed) from a tenant-chosen URL without reaching the service's own network.

A tenant names the URL, so its host may resolve to loopback, a private network or a cloud metadata
address, or change its answer between a check and the fetch (DNS rebinding). Here a name is resolved
once per connection, every address it resolves to must be globally routable (unless the operator sets
``FEED_ALLOW_PRIVATE_HOSTS``), and the socket connects to one of exactly those addresses. The check
lives in the connection layer (an httpcore network backend), so every redirect hop is checked the
same way while the URL, the ``Host`` header and the TLS server name (and certificate check) keep the
original host name.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

FEED_MAX_BYTES = 512 * 1024 * 1024
FEED_TIMEOUT = 120.0  # per connect / read / write
FEED_DEADLINE = 600.0  # the whole download, so a server dribbling bytes can't hold a task runner
FEED_MAX_REDIRECTS = 5

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressRefused(Exception):
    """The host resolves to an address a feed may not be fetched from."""


class FeedError(Exception):
    """The feed could not be fetched; ``code`` is the error code the task fails with."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 destination an IPv4-mapped, NAT64 (64:ff9b::/96) or 6to4 address really reaches."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def is_allowed_address(address: IPAddress) -> bool:
    """Globally routable unicast only: no private, shared (CGNAT), loopback, link-local, multicast or reserved."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return is_allowed_address(embedded)
    return address.is_global and not (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    )


def resolve(host: str, port: int, allow_private: bool) -> list[str]:
    """The addresses to connect to for ``host``: one lookup, every answer checked.

    Raises ``AddressRefused`` when any answer is not allowed (a name with one bad answer is refused
    as a whole) and ``OSError`` when the name does not resolve.
    """
    host = host.strip("[]")
    try:
        answers: Iterable[str] = [str(ipaddress.ip_address(host))]
    except ValueError:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        answers = dict.fromkeys(str(info[4][0]) for info in infos)
    addresses = list(answers)
    if not addresses:
        raise OSError(f"{host} has no address")
    if not allow_private:
        for address in addresses:
            if not is_allowed_address(ipaddress.ip_address(address.split("%")[0])):
                raise AddressRefused("private, loopback and reserved addresses are refused")
    return addresses


class _CheckedBackend(httpcore.SyncBackend):
    """Connects to an address checked in the same lookup, never to a second answer."""

    def __init__(self, allow_private: bool) -> None:
        self.allow_private = allow_private

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = resolve(host, port, self.allow_private)
        except OSError as exc:
            raise httpcore.ConnectError(f"{host} does not resolve") from exc
        error: Exception | None = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        assert error is not None
        raise error


class CheckedTransport(httpx.HTTPTransport):
    """``httpx.HTTPTransport`` whose connection pool uses ``_CheckedBackend``.

    httpx has no public way to hand its transport a network backend, so the pool it built is replaced
    by an ``httpcore.ConnectionPool`` (public API) with the same TLS context; the assertion makes an
    httpx upgrade that renames the pool fail loudly instead of silently fetching unchecked.
    """

    def __init__(self, allow_private: bool) -> None:
        super().__init__(trust_env=False)
        assert isinstance(getattr(self, "_pool", None), httpcore.ConnectionPool)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=4,
            network_backend=_CheckedBackend(allow_private),
        )


def download(url: str, allow_private: bool) -> bytes:
    """The body at ``url`` (redirects followed, each hop checked), bounded in size and time."""
    deadline = time.monotonic() + FEED_DEADLINE
    try:
        with (
            httpx.Client(
                transport=CheckedTransport(allow_private),
                timeout=FEED_TIMEOUT,
                follow_redirects=True,
                max_redirects=FEED_MAX_REDIRECTS,
                trust_env=False,
            ) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code >= 300:
                raise FeedError("FEED_UNAVAILABLE", f"The feed answered HTTP {response.status_code}")
            chunks = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > FEED_MAX_BYTES:
                    raise FeedError("PAYLOAD_TOO_LARGE", "The feed is too large")
                if time.monotonic() > deadline:
                    raise FeedError("FEED_UNAVAILABLE", f"The feed took longer than {FEED_DEADLINE:.0f} s to download")
                chunks.append(chunk)
            return b"".join(chunks)
    except AddressRefused as exc:
        raise FeedError("VALIDATION_ERROR", f"The feed URL is not allowed: {exc}") from exc
    except httpx.HTTPError as exc:
        raise FeedError("FEED_UNAVAILABLE", f"The feed could not be downloaded: {type(exc).__name__}") from exc

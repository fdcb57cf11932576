"""Web origins (RFC 6454) parsed into scheme, host and port, and compared as such.

A public key's ``allowedOrigins`` hold exact origins (``https://shop.example.com[:port]``) and
subdomain patterns (``https://*.example.com``, every subdomain but not the apex). The browser's
``Origin`` header must be a serialized origin: ``scheme://host[:port]`` and nothing else, so a
path, userinfo, query, fragment or a stray dot never reaches the comparison (``https://evil.com/.
shop.com`` once matched ``https://*.shop.com`` by its suffix). Hosts compare in their canonical
form: lower case, internationalized names as IDNA A-labels, IPv6 literals compressed, and a port
equal to the scheme's default dropped. A trailing dot (``shop.com.``) is a different host to a
browser, and is refused.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import idna

DEFAULT_PORTS = {"http": 80, "https": 443}
_SERIALIZED = re.compile(r"(?P<scheme>[A-Za-z]+)://(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/?#@\[\]\\\s%]+)(?::(?P<port>[0-9]{1,5}))?")
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_MAX_HOST = 253


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}{_port_suffix(self.scheme, self.port)}"


@dataclass(frozen=True)
class OriginPattern:
    """An allowed origin: exactly ``host``, or (``subdomains``) any host strictly under it."""

    scheme: str
    host: str
    port: int
    subdomains: bool = False

    def matches(self, origin: Origin) -> bool:
        if origin.scheme != self.scheme or origin.port != self.port:
            return False
        if self.subdomains:
            return origin.host.endswith("." + self.host)
        return origin.host == self.host

    def __str__(self) -> str:
        star = "*." if self.subdomains else ""
        return f"{self.scheme}://{star}{self.host}{_port_suffix(self.scheme, self.port)}"


def _port_suffix(scheme: str, port: int) -> str:
    return "" if DEFAULT_PORTS[scheme] == port else f":{port}"


def _dns_name(raw: str, *, unicode_ok: bool) -> str | None:
    """The canonical (lower-case A-label) form of a DNS name, or None."""
    if not raw.isascii():
        if not unicode_ok:
            return None
        try:
            raw = idna.encode(raw, uts46=True).decode("ascii")
        except idna.IDNAError:
            return None
    host = raw.lower()
    labels = host.split(".")
    if len(host) > _MAX_HOST or not all(_LABEL.fullmatch(label) for label in labels):
        return None  # also an empty label: "a..b", a leading or a trailing dot
    for label in labels:
        if label.startswith("xn--"):
            try:
                idna.decode(label)
            except idna.IDNAError:
                return None
    return host


def _host(raw: str, *, unicode_ok: bool) -> str | None:
    if raw.startswith("["):
        try:
            return f"[{ipaddress.IPv6Address(raw[1:-1]).compressed}]"
        except ValueError:
            return None
    return _dns_name(raw, unicode_ok=unicode_ok)


def _split(value: str) -> tuple[str, str, int] | None:
    match = _SERIALIZED.fullmatch(value)
    if match is None:
        return None
    scheme = match["scheme"].lower()
    if scheme not in DEFAULT_PORTS:
        return None
    port = int(match["port"]) if match["port"] is not None else DEFAULT_PORTS[scheme]
    if not 1 <= port <= 65535:
        return None
    return scheme, match["host"], port


@lru_cache(maxsize=4096)  # one shop's pages send the same few origins on every search
def parse_origin(value: str) -> Origin | None:
    """A browser's ``Origin`` header, or None when it is not a serialized http(s) origin (``null``)."""
    parts = _split(value)
    if parts is None:
        return None
    scheme, raw_host, port = parts
    host = _host(raw_host, unicode_ok=False)
    return Origin(scheme, host, port) if host is not None else None


@lru_cache(maxsize=4096)
def parse_pattern(value: str) -> OriginPattern | None:
    """An ``allowedOrigins`` entry (surrounding spaces and one trailing ``/`` tolerated), or None.

    A subdomain pattern needs a registrable-looking name of two labels or more under ``*.``."""
    value = value.strip()
    if value.endswith("/"):
        value = value[:-1]
    subdomains = "://*." in value
    parts = _split(value.replace("://*.", "://", 1))
    if parts is None:
        return None
    scheme, raw_host, port = parts
    host = _host(raw_host, unicode_ok=True)
    if host is None:
        return None
    if subdomains and (host.startswith("[") or "." not in host or _is_ipv4(host)):
        return None
    return OriginPattern(scheme, host, port, subdomains)


def _is_ipv4(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


def origin_allowed(origin: str, allowed: Iterable[str]) -> bool:
    """Whether the ``Origin`` header names one of the allowed origins (entries that don't parse
    allow nothing)."""
    parsed = parse_origin(origin)
    if parsed is None:
        return False
    for entry in allowed:
        pattern = parse_pattern(entry)
        if pattern is not None and pattern.matches(parsed):
            return True
    return False

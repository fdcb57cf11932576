"""The base of links in emails: ``PUBLIC_URL``, else the address the request reached the service at.

With ``PUBLIC_URL`` unset (the embedded/local default) the link follows the request, so
``shopsearch serve --port 9000`` mails links to port 9000. The Host header is a client's claim:
trusting any value would let someone ask a reset email for another person's address with
``Host: attacker.example`` and collect the token from the click. So the Host header is used only
when it names a loopback host or the very address the connection arrived at; any other value gives
way to the server socket's own address. Production behind a proxy or a public name sets
``PUBLIC_URL``.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from fastapi import Request

_HOST_HEADER = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _is_loopback(hostname: str) -> bool:
    if hostname == "localhost" or hostname.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False


def _claimed_hostname(claimed: str) -> str | None:
    """The host name of a well-formed ``host[:port]`` header, else None."""
    if not _HOST_HEADER.match(claimed):
        return None
    parts = urlsplit(f"//{claimed}")
    try:
        if parts.port == 0:
            return None
    except ValueError:  # a port beyond 65535
        return None
    return parts.hostname


def _host_port(host: str, port: int, scheme: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if _DEFAULT_PORTS.get(scheme) == port else f"{shown}:{port}"


def links_base(request: Request, public_url: str | None) -> str:
    """``scheme://host[:port][root_path]`` to put in front of ``/v1/…`` in an emailed link."""
    if public_url:
        return public_url.rstrip("/")
    scheme = request.url.scheme
    root = request.scope.get("root_path", "").rstrip("/")
    server = request.scope.get("server")
    server_host = str(server[0]).lower() if server else None
    claimed = request.headers.get("host", "").lower()
    hostname = _claimed_hostname(claimed)
    if hostname and (_is_loopback(hostname) or hostname == server_host):
        return f"{scheme}://{claimed}{root}"
    if server and server[1] is not None:
        return f"{scheme}://{_host_port(str(server[0]), int(server[1]), scheme)}{root}"
    return f"{scheme}://localhost{root}"  # a Unix socket: only PUBLIC_URL can name the service


def own_origin(request: Request, public_url: str | None) -> str:
    """The service's own origin as a browser names it: ``PUBLIC_URL``'s, else the request's scheme
    and Host header (a browser's ``Origin`` and ``Host`` agree on a page of the service itself)."""
    if public_url:
        parts = urlsplit(public_url)
        return f"{parts.scheme}://{parts.netloc}".lower()
    return f"{request.url.scheme}://{request.headers.get('host', '')}".lower()

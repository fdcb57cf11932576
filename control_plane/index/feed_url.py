"""A feed URL's secrets: shown redacted, stored encrypted.

Feed URLs often carry credentials (``https://user:password@host/…``, ``?token=…``). The stored feed
keeps two forms: ``url``, the redacted form every reader sees (user, password and every query value
become ``***``; scheme, host, port and path stay), and ``sealedUrl``, the full URL encrypted with
Fernet under a key derived from the service's secret key. Only the fetch decrypts it. A PUT that sends
the redacted form back unchanged keeps the stored URL (so a client can round-trip GET → PUT).
Rotating ``SECRET_KEY`` makes stored feed URLs unreadable: syncing then answers 409 until the data
source is set again.
"""

from __future__ import annotations

import base64
from functools import lru_cache
from urllib.parse import urlsplit, urlunsplit

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

MASK = "***"


def redact(url: str) -> str:
    """``url`` with its user, password, query values and fragment masked; host and path kept."""
    parts = urlsplit(url)
    netloc = parts.netloc
    userinfo, at, hostport = netloc.rpartition("@")
    if at:
        netloc = (f"{MASK}:{MASK}" if ":" in userinfo else MASK) + "@" + hostport
    query = "&".join(
        f"{key}={MASK}" if sep else MASK
        for key, sep, _value in (piece.partition("=") for piece in parts.query.split("&") if piece)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, MASK if parts.fragment else ""))


@lru_cache(maxsize=4)
def _fernet(secret: str) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"shopsearch feed url v1").derive(secret.encode())
    return Fernet(base64.urlsafe_b64encode(key))


def seal(url: str, secret: str) -> str:
    return _fernet(secret).encrypt(url.encode()).decode("ascii")


def unseal(token: str, secret: str) -> str | None:
    """The full URL, or None when it was sealed under another secret key."""
    try:
        return _fernet(secret).decrypt(token.encode("ascii")).decode()
    except InvalidToken:
        return None

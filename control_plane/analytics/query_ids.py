"""Self-describing, signed query ids: what ties a click or conversion to its search.

A search answer's ``queryId`` is ``q_<payload>.<indexId>`` where the payload (URL-safe base64) is
a version byte, the search's UTC day, the first 8 bytes of sha256 of the normalized query,
6 random bytes (each search gets its own id), and 10 bytes of HMAC-SHA256 over all that and the
index id, keyed with the settings' secret. Any process validates one without storing a row per
search: the day and query hash name the aggregate row the click adds to. A forged or altered id
fails the signature; the index id says which project it belongs to.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import struct
from dataclasses import dataclass
from datetime import date, timedelta

from control_plane.runtime import Runtime

PREFIX = "q_"
_VERSION = 1
_EPOCH = date(1970, 1, 1)
_HEAD = struct.Struct(">BH8s6s")  # version, day number, query hash, random
_MAC_BYTES = 10


def normalize_query(q: str) -> str:
    """The query as analytics groups it (as the answer cache keys it): words joined, lower case."""
    return " ".join(q.split()).lower()


def query_hash_bytes(normalized: str) -> bytes:
    return hashlib.sha256(normalized.encode()).digest()[:8]


def query_hash(normalized: str) -> str:
    """The aggregate row's key for a normalized query (16 hex digits)."""
    return query_hash_bytes(normalized).hex()


@dataclass(frozen=True)
class QueryRef:
    index_id: str
    day: date
    query_hash: str


class QueryIds:
    """Makes and checks query ids with one secret (``Settings.signing_key()``)."""

    def __init__(self, secret: str) -> None:
        key = hashlib.sha256(b"shopsearch-query-id:" + secret.encode()).digest()
        self._keyed = hmac.new(key, digestmod=hashlib.sha256)  # copied per id: the key is set up once

    def _mac(self, head: bytes, index_id: str) -> bytes:
        mac = self._keyed.copy()
        mac.update(head + index_id.encode())
        return mac.digest()[:_MAC_BYTES]

    def make(self, index_id: str, day: date, normalized: str) -> str:
        head = _HEAD.pack(_VERSION, (day - _EPOCH).days, query_hash_bytes(normalized), os.urandom(6))
        payload = base64.urlsafe_b64encode(head + self._mac(head, index_id)).rstrip(b"=").decode()
        return f"{PREFIX}{payload}.{index_id}"

    def parse(self, query_id: str) -> QueryRef | None:
        """The search a query id names, or None when it is malformed or its signature is wrong."""
        if not isinstance(query_id, str) or not query_id.startswith(PREFIX) or len(query_id) > 120:
            return None
        payload, dot, index_id = query_id[len(PREFIX):].partition(".")
        if not dot or not index_id:
            return None
        try:
            raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        except (binascii.Error, ValueError):
            return None
        if len(raw) != _HEAD.size + _MAC_BYTES:
            return None
        head, mac = raw[: _HEAD.size], raw[_HEAD.size:]
        if not hmac.compare_digest(mac, self._mac(head, index_id)):
            return None
        version, day_number, qhash, _random = _HEAD.unpack(head)
        if version != _VERSION:
            return None
        return QueryRef(index_id=index_id, day=_EPOCH + timedelta(days=day_number), query_hash=qhash.hex())


def query_ids(runtime: Runtime) -> QueryIds:
    """The process's query-id signer (built once from the settings' secret)."""
    signer = runtime.extras.get("query_ids")
    if signer is None:
        signer = runtime.extras["query_ids"] = QueryIds(runtime.settings.signing_key())
    return signer  # type: ignore[no-any-return]

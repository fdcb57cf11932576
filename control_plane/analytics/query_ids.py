"""Self-describing, signed query ids: what ties a click or conversion to its search, and to the
documents that search returned.

A search answer's ``queryId`` is ``q_<payload>.<indexId>`` where the payload (URL-safe base64) is
a version byte, the search's UTC day, the first 8 bytes of sha256 of the normalized query,
6 random bytes (each search gets its own id), the number of hits returned (one byte), a 2-byte tag
per returned hit, and 10 bytes of HMAC-SHA256 over all that and the index id, keyed with the
settings' secret. A hit's tag is a keyed BLAKE2b of its document id salted with the id's random
bytes, so only the service can say which ids pass, and a tag found for one search says nothing of
another.

Why in the id and not in a store: any serving process (``serve --workers N``, SQLite or PostgreSQL,
with or without Redis) checks a click without a row or a round trip per search, and a search costs
the same as before (at most 100 hits a page: the id stays under 320 characters). The price is a
false positive per document id of (hits returned) / 65,536 — about 1 in 3,300 for a page of 20:
a forger who does not know the key needs thousands of refused requests (each counted by the events
rate limit) to have one made-up id counted once.

A forged or altered id fails the signature; the index id says which project it belongs to.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

PREFIX = "q_"
_VERSION = 2
_EPOCH = date(1970, 1, 1)
_HEAD = struct.Struct(">BH8s6sB")  # version, day number, query hash, random, hits returned
_TAG = 2
_MAC_BYTES = 10
MAX_HITS = 255
#: the longest id made: head, a tag per hit of the largest page (100), the MAC, the prefix, an index id
MAX_CHARS = len(PREFIX) + 4 * -(-(_HEAD.size + 100 * _TAG + _MAC_BYTES) // 3) + 1 + 40


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
    #: the signed bytes (not the text: base64 has several spellings of one id): what events dedupe on
    signed: bytes = b""
    #: the tags of the hits the search returned (``QueryIds.returned``)
    tags: frozenset[bytes] = frozenset()


class QueryIds:
    """Makes and checks query ids with one secret (``Settings.signing_key()``)."""

    def __init__(self, secret: str) -> None:
        key = hashlib.sha256(b"shopsearch-query-id:" + secret.encode()).digest()
        self._keyed = hmac.new(key, digestmod=hashlib.sha256)  # copied per id: the key is set up once
        self._tag_key = hashlib.sha256(b"shopsearch-query-hit:" + secret.encode()).digest()

    def _mac(self, head: bytes, index_id: str) -> bytes:
        mac = self._keyed.copy()
        mac.update(head + index_id.encode())
        return mac.digest()[:_MAC_BYTES]

    def _tagger(self, salt: bytes) -> Any:
        """A keyed hash salted for one search, copied per hit (set up once per search)."""
        return hashlib.blake2b(digest_size=_TAG, key=self._tag_key, salt=salt)

    @staticmethod
    def _tag(tagger: Any, document_id: str) -> bytes:
        one = tagger.copy()
        one.update(document_id.encode())
        return bytes(one.digest())

    def make(self, index_id: str, day: date, normalized: str, hit_ids: Sequence[str] = ()) -> str:
        """The id of a search that returned ``hit_ids`` (its page, in order)."""
        ids = list(hit_ids)[:MAX_HITS]
        salt = os.urandom(6)
        head = _HEAD.pack(_VERSION, (day - _EPOCH).days, query_hash_bytes(normalized), salt, len(ids))
        tagger = self._tagger(salt)
        head += b"".join(self._tag(tagger, str(i)) for i in ids)
        payload = base64.urlsafe_b64encode(head + self._mac(head, index_id)).rstrip(b"=").decode()
        return f"{PREFIX}{payload}.{index_id}"

    def parse(self, query_id: str) -> QueryRef | None:
        """The search a query id names, or None when it is malformed or its signature is wrong."""
        if not isinstance(query_id, str) or not query_id.startswith(PREFIX) or len(query_id) > MAX_CHARS:
            return None
        payload, dot, index_id = query_id[len(PREFIX):].partition(".")
        if not dot or not index_id:
            return None
        try:
            raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        except (binascii.Error, ValueError):
            return None
        if len(raw) < _HEAD.size + _MAC_BYTES or base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != payload:
            return None  # one spelling per id: base64 skips foreign characters and unused bits
        head, mac = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
        if not hmac.compare_digest(mac, self._mac(head, index_id)):
            return None
        version, day_number, qhash, salt, count = _HEAD.unpack(head[:_HEAD.size])
        tags = head[_HEAD.size:]
        if version != _VERSION or len(tags) != count * _TAG:
            return None
        return QueryRef(index_id=index_id, day=_EPOCH + timedelta(days=day_number), query_hash=qhash.hex(),
                        signed=head, tags=frozenset(tags[i:i + _TAG] for i in range(0, len(tags), _TAG)))

    def returned(self, ref: QueryRef, document_id: str) -> bool:
        """Whether the search ``ref`` names returned ``document_id`` (up to the tags' false positives)."""
        salt = ref.signed[_HEAD.size - 7:_HEAD.size - 1]
        return self._tag(self._tagger(salt), document_id) in ref.tags

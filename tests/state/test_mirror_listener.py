"""The pushed-values mirror (:mod:`control_plane.state.pushed`) when Redis goes silent: the
listener's subscribed connection stays open and says nothing (a hung Redis, a black-holed network).

A request may use the mirror only while its listener is fresh, so during the silence requests read
Redis (with its own 2 s timeout, tests/outage/test_stalls.py) rather than values that may have
changed unheard; once Redis answers again the listener subscribes afresh with an empty mirror, and
changes announced from then on are dropped and acknowledged as before.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import pytest
import redis

from control_plane.state.pushed import FRESH_FOR, SILENT_FOR, Mirror
from tests.tcp_proxy import TcpProxy

REDIS = "redis://127.0.0.1:6379/0"
SLACK_S = 1.0  # a loaded 2-core machine
#: the listener's longest back-off between attempts (pushed.Mirror._run) and one connect timeout
RECONNECT_BOUND_S = 8.0 + 2.0 + SLACK_S


@pytest.fixture
def proxied() -> Iterator[tuple[Mirror, TcpProxy, redis.Redis]]:
    direct = redis.Redis.from_url(REDIS)
    direct.ping()
    with TcpProxy(6379) as proxy:
        mirror = Mirror(f"redis://127.0.0.1:{proxy.port}/0", f"sstest:{secrets.token_hex(4)}:state", 2)
        mirror.start()
        try:
            assert mirror.wait_fresh(5), "the listener never subscribed"
            yield mirror, proxy, direct
        finally:
            mirror.stop()
            direct.close()


def _known(mirror: Mirror, key: str) -> bool:
    return mirror.lookup(key)[0]


def _remember(mirror: Mirror, key: str, value: bytes) -> None:
    _, _, generation = mirror.lookup(key)
    mirror.remember(key, value, -1, generation)


def test_a_silent_redis_makes_the_mirror_unused_until_it_answers_again(proxied) -> None:
    mirror, proxy, direct = proxied
    _remember(mirror, "epoch:a", b"1")
    assert _known(mirror, "epoch:a")

    proxy.stall(hold_open=True)
    started = time.monotonic()
    while mirror.fresh():
        assert time.monotonic() - started <= FRESH_FOR + SLACK_S, "a silent listener still counted as fresh"
        time.sleep(0.02)
    assert not _known(mirror, "epoch:a")  # requests read Redis now
    # a change announced while the listener hears nothing
    direct.publish(mirror.channel, b"epoch:a\n")
    time.sleep(SILENT_FOR + 0.5)  # the listener gives up on its silent connection and retries
    assert not mirror.fresh()

    proxy.restore()
    restored = time.monotonic()
    assert mirror.wait_fresh(RECONNECT_BOUND_S), "the listener did not subscribe again after Redis came back"
    print(f"fresh again {time.monotonic() - restored:.2f} s after Redis answered")
    assert not _known(mirror, "epoch:a")  # the value of before the silence is gone

    # from here on a change is dropped and acknowledged as before
    _remember(mirror, "epoch:a", b"2")
    assert _known(mirror, "epoch:a")
    ack = f"sstest:ack:{secrets.token_hex(4)}"
    assert direct.publish(mirror.channel, f"epoch:a\n{ack}".encode()) == 1
    assert direct.blpop([ack], timeout=3) is not None, "the listener did not acknowledge the change"
    assert not _known(mirror, "epoch:a")
    direct.delete(ack)


def test_a_value_read_while_a_change_was_announced_is_not_kept(proxied) -> None:
    mirror, _, direct = proxied
    _, _, generation = mirror.lookup("revoked:k1")  # a request starts reading Redis
    ack = f"sstest:ack:{secrets.token_hex(4)}"
    direct.publish(mirror.channel, f"revoked:k1\n{ack}".encode())  # a revocation lands meanwhile
    assert direct.blpop([ack], timeout=3) is not None
    mirror.remember("revoked:k1", None, -2, generation)  # what the request read before the change
    assert not _known(mirror, "revoked:k1")
    direct.delete(ack)

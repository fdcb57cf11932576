"""Compiled rules of an index: which rules a query triggers, and what they do together.

Rules are indexed by their condition patterns (per anchoring, keyed by the pattern's words), so a
query costs a dict lookup per prefix, suffix and span of its words (spans up to the longest
pattern), never a pass over the rules. Rules without a pattern condition apply to every query
(their filter condition and validity still hold them back).

A rule *matches* when one of its conditions matches the normalized query (none: every query)
and the search's filters hold its filter condition; it *applies* when it also is enabled and
inside one of its validity windows (none: always). Applied rules act in position order:
``hide``, ``boost``, ``bury`` and ``addFilters`` add up; a pin keeps its position unless an earlier
rule took it (then the next free one); ``replaceQuery`` and ``redirect`` come from the first rule
that sets them; ``userData`` collects every applied rule's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from shared.contract import BoostFilter
from shared.text import atoms, match_form, match_key

MAX_QUERY_WORDS = 32


@dataclass(frozen=True)
class CompiledRule:
    id: str
    name: str
    enabled: bool
    position: int
    conditions: tuple[tuple[str, tuple[str, ...]], ...]
    filters: dict[str, Any] | None
    windows: tuple[tuple[datetime | None, datetime | None], ...]
    consequence: dict[str, Any]

    def active(self, now: datetime) -> bool:
        if not self.enabled:
            return False
        return not self.windows or any((a is None or a <= now) and (b is None or now < b) for a, b in self.windows)


def _stamp(value: Any) -> datetime | None:
    if value is None:
        return None
    stamp = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def compile_rule(rule_id: str, name: str, enabled: bool, position: int, body: dict[str, Any]) -> CompiledRule:
    conditions = tuple((c["anchoring"], match_key(c["pattern"])) for c in body.get("conditions") or [])
    windows = tuple((_stamp(w.get("from")), _stamp(w.get("until"))) for w in body.get("validity") or [])
    return CompiledRule(rule_id, name, enabled, position, tuple(c for c in conditions if c[1]),
                        body.get("filters"), windows, body.get("consequence") or {})


def _holds(request: Any, wanted: Any) -> bool:
    """One field of a rule's filter condition against the search's filter on that field."""
    if isinstance(wanted, list):
        have = request if isinstance(request, list) else [request]
        return all(value in have for value in wanted)
    if isinstance(request, list):
        return wanted in request if not isinstance(wanted, dict) else False
    return bool(request == wanted)


def filters_hold(request: dict[str, Any] | None, condition: dict[str, Any] | None) -> bool:
    """The search filters on every field of ``condition`` with (at least) its values."""
    if not condition:
        return True
    request = request or {}
    return all(name in request and _holds(request[name], value) for name, value in condition.items())


class RuleSet:
    def __init__(self, rules: Iterable[CompiledRule] = ()) -> None:
        self.rules = sorted(rules, key=lambda r: (r.position, r.id))
        self._always: list[CompiledRule] = []
        self._by: dict[tuple[str, tuple[str, ...]], list[CompiledRule]] = {}
        for rule in self.rules:
            if not rule.conditions:
                self._always.append(rule)
            for anchoring, key in rule.conditions:
                bucket = self._by.setdefault((anchoring, key), [])
                if rule not in bucket:
                    bucket.append(rule)
        self._longest = {a: max((len(k) for b, k in self._by if b == a), default=0)
                         for a in ("startsWith", "endsWith", "contains")}
        self._seen: dict[tuple[str, ...], list[CompiledRule]] = {}  # query words -> rules they trigger

    def __len__(self) -> int:
        return len(self.rules)

    def matching(self, q: str, filters: dict[str, Any] | None) -> list[CompiledRule]:
        """Rules whose conditions match (enabled or not, valid or not), in position order."""
        if not self.rules:
            return []
        words = tuple(match_form(a) for a in atoms(q)[:MAX_QUERY_WORDS])
        found = self._seen.get(words)
        if found is None:
            found = self._by_words(words)
            if len(self._seen) > 50_000:
                self._seen.clear()
            self._seen[words] = found
        return [r for r in found if filters_hold(filters, r.filters)]

    def _by_words(self, words: tuple[str, ...]) -> list[CompiledRule]:
        found: dict[str, CompiledRule] = {r.id: r for r in self._always}
        n = len(words)
        by = self._by

        def take(anchoring: str, key: tuple[str, ...]) -> None:
            for rule in by.get((anchoring, key), ()):
                found[rule.id] = rule

        if words:
            take("is", words)
            for k in range(1, min(n, self._longest["startsWith"]) + 1):
                take("startsWith", words[:k])
            for k in range(1, min(n, self._longest["endsWith"]) + 1):
                take("endsWith", words[n - k:])
            longest = self._longest["contains"]
            for i in range(n if longest else 0):
                for j in range(i + 1, min(n, i + longest) + 1):
                    take("contains", words[i:j])
        return sorted(found.values(), key=lambda r: (r.position, r.id))

    def applying(self, q: str, filters: dict[str, Any] | None, now: datetime | None = None) -> list[CompiledRule]:
        now = now or datetime.now(UTC)
        return [r for r in self.matching(q, filters) if r.active(now)]


@dataclass
class Effects:
    """What the applied rules do to one search."""

    applied: list[str] = field(default_factory=list)
    pins: list[tuple[str, int]] = field(default_factory=list)
    hide: set[str] = field(default_factory=set)
    boosts: list[BoostFilter] = field(default_factory=list)
    add_filters: list[dict[str, Any]] = field(default_factory=list)
    replace_query: str | None = None
    redirect: str | None = None
    user_data: list[Any] = field(default_factory=list)


NO_EFFECTS = Effects()


def effects_of(rules: Sequence[CompiledRule]) -> Effects:
    if not rules:
        return NO_EFFECTS
    out = Effects()
    taken: set[int] = set()
    pinned: set[str] = set()
    for rule in rules:
        c = rule.consequence
        out.applied.append(rule.id)
        out.hide.update(c.get("hide") or ())
        for pin in c.get("pin") or ():
            if pin["id"] in pinned:
                continue
            position = int(pin["position"])
            while position in taken:
                position += 1
            taken.add(position)
            pinned.add(pin["id"])
            out.pins.append((pin["id"], position))
        out.boosts += [BoostFilter(b["filters"], float(b["weight"])) for b in c.get("boost") or ()]
        out.boosts += [BoostFilter(b["filters"], -float(b["weight"])) for b in c.get("bury") or ()]
        if c.get("addFilters"):
            out.add_filters.append(c["addFilters"])
        if out.replace_query is None and c.get("replaceQuery"):
            out.replace_query = c["replaceQuery"]
        if out.redirect is None and c.get("redirect"):
            out.redirect = c["redirect"]
        if c.get("userData") is not None:
            out.user_data.append(c["userData"])
    out.pins = [(doc, pos) for doc, pos in sorted(out.pins, key=lambda p: p[1]) if doc not in out.hide]
    return out

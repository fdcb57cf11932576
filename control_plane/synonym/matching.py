"""Compiled synonyms of an index: which alternatives a query's words reach.

Built once per change of the index's synonyms (``indices.merch_version``) and shared by every
search of the index. ``for_query`` costs a dict lookup per span of query words (spans up to the
longest synonym phrase) and, for words that match no entry, a deletion-index lookup, never a
scan of the entries, so 1,000 or 100,000 synonyms cost a query the same.

What it hands the engine (``Query.synonyms``): ``{phrase of the query as typed: alternatives}``,
each alternative a tuple of words that must all match. A word that matches no entry but is one
typo from a single-word entry (two from a long one; the first letter must match) is passed under
``"~word"``: the engine uses those alternatives only where the word as typed is not in the index's
dictionary, so a real word ("table") never reaches the synonyms of its neighbour ("tablet").
"""

from __future__ import annotations

from collections.abc import Iterable

from shared.text import atoms, deletes, match_form, osa_distance

Alternatives = tuple[tuple[str, ...], ...]

MIN_TYPO_WORD = 4
MAX_QUERY_WORDS = 16


class SynonymSet:
    def __init__(self, entries: Iterable[tuple[str, list[str], str | None, list[str]]] = ()) -> None:
        """``entries``: ``(type, terms, input, synonyms)`` of the enabled synonyms."""
        alts: dict[tuple[str, ...], dict[tuple[str, ...], None]] = {}

        def add(source: str, targets: Iterable[str]) -> None:
            key = tuple(match_form(a) for a in atoms(source))
            bucket = alts.setdefault(key, {})
            for target in targets:
                phrase = tuple(atoms(target))
                if phrase and tuple(match_form(a) for a in phrase) != key:
                    bucket[phrase] = None

        for kind, terms, source, targets in entries:
            if kind == "multiway":
                for i, term in enumerate(terms):
                    add(term, terms[:i] + terms[i + 1:])
            elif source:
                add(source, targets)
        self._alts: dict[tuple[str, ...], Alternatives] = {k: tuple(v) for k, v in alts.items() if k and v}
        self._longest = max((len(k) for k in self._alts), default=0)
        self._near: dict[str, set[str]] = {}
        self._near_seen: dict[tuple[str, int], str | None] = {}  # (word, distance) -> nearest entry
        for key in self._alts:
            if len(key) == 1 and len(key[0]) >= MIN_TYPO_WORD and not key[0].isdigit():
                for variant in deletes(key[0], 2 if len(key[0]) >= 8 else 1):
                    self._near.setdefault(variant, set()).add(key[0])

    def __len__(self) -> int:
        return len(self._alts)

    def for_query(self, q: str, *, typo: bool = True, min_one_typo: int = 4,
                  min_two_typos: int = 8) -> dict[str, Alternatives] | None:
        if not self._alts:
            return None
        words = atoms(q)[:MAX_QUERY_WORDS]
        forms = [match_form(w) for w in words]
        out: dict[str, Alternatives] = {}
        matched: set[int] = set()
        for i in range(len(words)):
            for j in range(i + 1, min(len(words), i + self._longest) + 1):
                found = self._alts.get(tuple(forms[i:j]))
                if found is not None:
                    out[" ".join(words[i:j])] = found
                    matched.update(range(i, j))
        if typo and self._near:
            for i, form in enumerate(forms):
                if i in matched or form.isdigit() or len(form) < max(min_one_typo, MIN_TYPO_WORD):
                    continue
                distance = 2 if len(form) >= min_two_typos else 1
                near = self._near_seen.get((form, distance), "")
                if near == "":
                    near = self._nearest(form, distance)
                    if len(self._near_seen) > 50_000:
                        self._near_seen.clear()
                    self._near_seen[(form, distance)] = near
                if near is not None:
                    out["~" + words[i]] = ((near,), *self._alts[(near,)])
        return out or None

    def _nearest(self, form: str, distance: int) -> str | None:
        best: tuple[int, str] | None = None
        for variant in deletes(form, distance):
            for key in self._near.get(variant, ()):
                if key[0] != form[0]:  # a typo on the first letter counts as two
                    continue
                d = osa_distance(form, key, distance)
                if d <= distance and (best is None or (d, key) < best):
                    best = (d, key)
        return None if best is None else best[1]

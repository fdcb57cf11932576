"""Query words as merchandising sees them: synonyms and rule conditions match on these.

The cut follows the engine's atoms (``search_workers.engine.analysis``): case-folded, accents
folded, split at every non-word character and at letter/digit boundaries (``"iPhone8"`` ->
``iphone 8``), so a phrase the control plane hands to the engine lines up with the engine's own
clauses. ``match_form`` adds a light plural folding, so ``"phones"`` meets a synonym or rule
written ``"phone"`` (the engine then stems properly).
"""

from __future__ import annotations

import re
import unicodedata

_ATOM = re.compile(r"\d+|[^\W\d_]+")


def fold(text: str) -> str:
    """Lower case and accents folded (``"Écran"`` -> ``ecran``)."""
    text = text.casefold()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def query_text(q: str) -> str:
    """A search text in the one form that every consumer receives (the engine, synonyms, rules, the
    answer caches): NFKC, case-folded, words separated by one space, and one trailing space kept
    when the text ends with whitespace, since that says the last word is complete (``"iph "`` finds
    no "iphone"; ``"iph"`` does). Two texts with one form always get one answer."""
    words = unicodedata.normalize("NFKC", q).casefold().split()
    if not words:
        return ""
    return " ".join(words) + (" " if q[-1:].isspace() else "")


def atoms(text: str) -> list[str]:
    """The words of ``text`` cut like the engine's query atoms."""
    return _ATOM.findall(fold(text))


def match_form(atom: str) -> str:
    """``atom`` with a plural ``s``/``es`` folded (``phones`` -> ``phone``; ``glass`` stays)."""
    if len(atom) > 3 and atom.endswith("s") and not atom.endswith("ss") and not atom.isdigit():
        return atom[:-1]
    return atom


def match_key(text: str) -> tuple[str, ...]:
    return tuple(match_form(a) for a in atoms(text))


def osa_distance(a: str, b: str, limit: int) -> int:
    """Optimal string alignment distance (an adjacent transposition counts 1), ``limit + 1`` past ``limit``."""
    la, lb = len(a), len(b)
    if abs(la - lb) > limit:
        return limit + 1
    prev2: list[int] | None = None
    prev = list(range(lb + 1))
    for i in range(1, la + 1):
        cur = [i] + [0] * lb
        rowmin = cur[0]
        for j in range(1, lb + 1):
            v = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if prev2 is not None and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                v = min(v, prev2[j - 2] + 1)
            cur[j] = v
            rowmin = min(rowmin, v)
        if rowmin > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[lb]


def deletes(word: str, distance: int) -> set[str]:
    """Every string ``word`` gives with up to ``distance`` characters deleted (``word`` included)."""
    out = {word}
    frontier = {word}
    for _ in range(distance):
        frontier = {w[:i] + w[i + 1:] for w in frontier for i in range(len(w))}
        out |= frontier
    return out

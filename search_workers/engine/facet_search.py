"""Facet value search: the values of a keyword field whose words start with the words a shopper
typed in a facet's search box (``"sam"`` -> Samsung, Samsonite), or are one typo from them.

Words are cut as merchandising cuts them (``shared.text.atoms``: case- and accent-folded, split at
non-word characters and letter/digit boundaries). Every typed word must meet a word of the value:
as a prefix, or (typed words of four letters or more) within one edit of a prefix of the same
length, one shorter or one longer (the first letter typed right, or swapped with the second). The words of the field's dictionary (append-only) are indexed
once per dictionary size: sorted, each with the ordinals of the values holding it (a prefix is two
binary searches and one slice, whatever the number of values), and as a table of letters that the
typo check compares column by column (:func:`near`).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from shared.text import atoms

from .memindex import MemIndex

#: typed words shorter than this match by prefix only (as the profiles' minWordSizeOneTypo)
MIN_TYPO_WORD = 4
#: letters of each dictionary word compared for typos (a longer typed word matches by prefix only)
WIDTH = 24


@dataclass(frozen=True)
class ValueWords:
    words: list[str]  # sorted
    starts: np.ndarray  # words[i]'s ordinals are ords[starts[i]:starts[i + 1]]
    ords: np.ndarray
    letters: np.ndarray  # (words x WIDTH) code points, 0 past a word's end
    values: int  # the dictionary's size


def value_words(values: list[str]) -> ValueWords:
    by_word: dict[str, list[int]] = {}
    for ordinal, value in enumerate(values):
        for word in set(atoms(value)):
            by_word.setdefault(word, []).append(ordinal)
    words = sorted(by_word)
    lists = [by_word[w] for w in words]
    starts = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=starts[1:])
    ords = np.fromiter((o for x in lists for o in x), dtype=np.int64, count=int(starts[-1]))
    letters = np.zeros((len(words), WIDTH), dtype=np.uint32)
    for i, w in enumerate(words):
        codes = [ord(c) for c in w[:WIDTH]]
        letters[i, : len(codes)] = codes
    return ValueWords(words, starts, ords, letters, len(values))


def near(letters: np.ndarray, typed: str) -> np.ndarray:
    """Rows of ``letters`` (words) that start with ``typed`` give or take one edit: a letter
    substituted, two neighbours swapped, one letter too many or one missing. Vectorized: a few
    comparisons of the (words x letters) table per position of ``typed``."""
    n = len(typed)
    t = np.asarray([ord(c) for c in typed], dtype=np.uint32)
    head = letters[:, :n]
    neq = head != t
    wrong = neq.sum(axis=1)
    found = (wrong == 1) & (letters[:, n - 1] != 0)  # one substituted (the word is long enough)
    for i in range(n - 1):  # two neighbours swapped
        found |= ((wrong == 2) & neq[:, i] & neq[:, i + 1] & (head[:, i] == t[i + 1]) & (head[:, i + 1] == t[i]))
    for i in range(n):  # one letter too many in what was typed: the word has typed minus letter i
        shorter = np.delete(t, i)
        found |= (letters[:, : n - 1] == shorter).all(axis=1)
    for i in range(n + 1):  # one letter missing in what was typed, at i
        found |= ((letters[:, :i] == t[:i]).all(axis=1) & (letters[:, i + 1: n + 1] == t[i:]).all(axis=1)
                  & (letters[:, n] != 0))
    return found


class FacetSearch:
    """Matching values of a shard's keyword fields, the word index cached per dictionary size."""

    def __init__(self, mem: MemIndex) -> None:
        self.mem = mem
        self._words: dict[str, ValueWords] = {}

    def _index(self, field: str) -> ValueWords:
        values = self.mem.kw_vals[field]
        hit = self._words.get(field)
        if hit is not None and hit.values == len(values):
            return hit
        built = self._words[field] = value_words(values)
        return built

    def matching(self, field: str, typed: str, typo: bool = True) -> np.ndarray | None:
        """A mask over the field's value ordinals: the values every word of ``typed`` meets (None:
        no words typed, every value)."""
        words = atoms(typed)
        if not words:
            return None
        vw = self._index(field)
        result = np.ones(vw.values, dtype=bool)
        for w in dict.fromkeys(words):
            met = np.zeros(vw.values, dtype=bool)
            lo = bisect.bisect_left(vw.words, w)
            hi = bisect.bisect_left(vw.words, w + "\U0010ffff")
            met[vw.ords[int(vw.starts[lo]): int(vw.starts[hi])]] = True  # by prefix: one slice
            if typo and MIN_TYPO_WORD <= len(w) < WIDTH:
                # a typo keeps the first letter, or swaps it with the second: two runs of the table
                for first in dict.fromkeys(w[:2]):
                    flo = bisect.bisect_left(vw.words, first)
                    fhi = bisect.bisect_left(vw.words, first + "\U0010ffff")
                    for i in (flo + np.flatnonzero(near(vw.letters[flo:fhi], w))).tolist():
                        met[vw.ords[int(vw.starts[i]): int(vw.starts[i + 1])]] = True
            result &= met
        return result

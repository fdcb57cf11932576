"""The in-memory suggestion index of one index: prefix matching and a small typo path.

Built from a rebuild's output in each serving process and answered without the database:

* every suggestion is entered under its normalized text starting at each of its first
  ``START_WORDS`` words (``"samsung galaxy s7"``, ``"galaxy s7"``, ``"s7"``) in one sorted list of
  byte strings; a query's words joined the same way find their range by bisection, and the best
  scores of the range are picked with numpy (a one-letter prefix may cover the whole list);
* typos: when the typed words find few suggestions, the last query word (4 characters or more)
  is compared with the prefixes of every distinct suggestion word at once (a code-point matrix, one edit: substitution, transposition,
  insertion or deletion); the corrected prefixes are then looked up like typed ones;
* highlights mark the typed words in the original text the way search does (``<em>``, the rest
  escaped): the whole of each completed word and the typed part of the last.
"""

from __future__ import annotations

import bisect
import html
import re
import unicodedata
from dataclasses import dataclass

import numpy as np

START_WORDS = 3
KEY_BYTES = 96
TYPO_MIN_CHARS = 4
TYPO_WIDTH = 16  # word characters the typo path compares (longer last words skip it)
MAX_CORRECTIONS = 8
POSITION_FACTOR = (1.0, 0.6, 0.5)  # matching from the first word ranks above a later word
TYPO_FACTOR = 0.5
BIG_RANGE = 2000  # a prefix matching more entries has its best BIG_TAKE kept
BIG_TAKE = 20 * START_WORDS + 20
TYPO_FILL = 4  # the typo path runs when the typed prefix finds fewer suggestions than this (or the limit)
_WORD = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """Lower case without accents (``É`` -> ``e``), as the engine folds."""
    text = text.lower()
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def words_of(text: str) -> list[str]:
    if text.isascii():  # (most texts) its words are its lower-cased ones
        return _WORD.findall(text.lower())
    out = []
    for token in _WORD.findall(text):
        folded = fold(token)
        if folded:
            out.append(folded)
    return out


@dataclass(frozen=True)
class Item:
    text: str
    score: float
    source: str
    norm: str | None = None  # ``" ".join(words_of(text))`` when known (a rebuild stores it)


@dataclass(frozen=True)
class Match:
    item: int
    position: int  # the suggestion word the query's first word matched
    words: int  # query words matched
    last_chars: int  # folded characters of the last matched word that were typed (or corrected)
    score: float


class SuggestionIndex:
    def __init__(self, items: list[Item]) -> None:
        self.items = items
        self.scores = np.array([i.score for i in items], dtype=np.float64)
        entries: list[tuple[bytes, int, int]] = []
        vocab: dict[str, int] = {}
        for n, item in enumerate(items):
            words = item.norm.split(" ") if item.norm else words_of(item.text)
            for p in range(min(START_WORDS, len(words))):
                entries.append((" ".join(words[p:]).encode()[:KEY_BYTES], n, p))
            for w in words:
                vocab[w] = vocab.get(w, 0) + 1
        entries.sort()
        self.keys = [e[0] for e in entries]
        self.key_item = np.array([e[1] for e in entries], dtype=np.int32)
        self.key_factor = np.array([POSITION_FACTOR[e[2]] for e in entries], dtype=np.float64)
        self.key_pos = np.array([e[2] for e in entries], dtype=np.int8)
        # each entry's score as matched there (the item's score by the position's factor)
        self.key_eff = self.scores[self.key_item] * self.key_factor if entries else np.zeros(0)
        # the typo path: words by frequency (corrections prefer common words), as a code-point matrix
        self.vocab = sorted(vocab, key=lambda w: (-vocab[w], w))
        matrix = np.zeros((len(self.vocab), TYPO_WIDTH + 1), dtype=np.uint32)
        for row, w in enumerate(self.vocab):
            codes = [ord(c) for c in w[:TYPO_WIDTH + 1]]
            matrix[row, :len(codes)] = codes
        self.matrix = matrix
        # rows by their first and by their second character: one edit keeps one of them in place
        # (or moves w[0] to second / w[1] to first), so only those rows are compared
        self._by_char: list[dict[int, np.ndarray]] = []
        for col in (0, 1):
            order = np.argsort(matrix[:, col], kind="stable")
            chars, starts = np.unique(matrix[order, col], return_index=True)
            bounds = [*starts[1:], len(order)] if len(starts) else []
            self._by_char.append({int(c): order[a:b] for c, a, b in zip(chars, starts, bounds, strict=True)})
        self._corrections: dict[str, list[str]] = {}
        self._big: dict[tuple[int, int], np.ndarray] = {}  # best entries of large ranges

    def __len__(self) -> int:
        return len(self.items)

    # ------------------------------------------------------------------ matching
    def top(self, limit: int) -> list[Match]:
        """The best suggestions for an empty query."""
        order = np.argsort(-self.scores, kind="stable")[:limit]
        return [Match(int(i), 0, 0, 0, float(self.scores[i])) for i in order]

    def _range(self, words: list[str], want: int, factor: float, seen: set[int], last_chars: int,
               out: list[Match]) -> None:
        full = " ".join(words).encode()
        long = len(full) > KEY_BYTES  # keys are cut there: check the whole text of what they find
        prefix = full[:KEY_BYTES]
        lo = bisect.bisect_left(self.keys, prefix)
        hi = bisect.bisect_left(self.keys, prefix + b"\xff", lo)
        if hi <= lo:
            return
        items = self.key_item[lo:hi]
        eff = self.key_eff[lo:hi]
        take = want * START_WORDS + len(seen)
        if hi - lo > BIG_RANGE and not long and take <= BIG_TAKE:
            picked = self._big.get((lo, hi))  # short prefixes: many entries, asked by many shoppers
            if picked is None:
                picked = self._best(eff, BIG_TAKE)
                if len(self._big) > 10_000:
                    self._big.clear()
                self._big[(lo, hi)] = picked
        elif hi - lo > take and not long:
            picked = self._best(eff, take)
        else:
            picked = np.argsort(-eff, kind="stable")
        for k in picked:
            item = int(items[k])
            if item in seen:
                continue
            position = int(self.key_pos[lo + k])
            if long and not " ".join(words_of(self.items[item].text)[position:]).encode().startswith(full):
                continue
            seen.add(item)
            out.append(Match(item, position, len(words), last_chars, float(eff[k]) * factor))

    @staticmethod
    def _best(eff: np.ndarray, take: int) -> np.ndarray:
        picked = np.argpartition(-eff, take)[:take]
        return picked[np.argsort(-eff[picked], kind="stable")]

    def match(self, query: str, limit: int, typo: bool) -> list[Match]:
        words = words_of(query)
        if not words:
            return self.top(limit)
        seen: set[int] = set()
        out: list[Match] = []
        self._range(words, limit, 1.0, seen, len(words[-1]), out)
        last = words[-1]
        if typo and len(out) < min(limit, TYPO_FILL) and TYPO_MIN_CHARS <= len(last) <= TYPO_WIDTH:
            typo_out: list[Match] = []
            for corrected in self.corrections(last):
                self._range([*words[:-1], corrected], limit, TYPO_FACTOR, seen, len(corrected), typo_out)
            out.extend(sorted(typo_out, key=lambda m: -m.score))
        out.sort(key=lambda m: (-m.score, self.items[m.item].text))
        return out[:limit]

    def corrections(self, word: str) -> list[str]:
        """Prefixes of suggestion words one edit away from ``word`` (not ``word`` itself), cached."""
        hit = self._corrections.get(word)
        if hit is None:
            hit = self._find_corrections(word)
            if len(self._corrections) > 20_000:
                self._corrections.clear()
            self._corrections[word] = hit
        return hit

    def _find_corrections(self, word: str) -> list[str]:
        if not len(self.matrix):
            return []
        n = len(word)
        w = np.array([ord(c) for c in word], dtype=np.uint32)
        first, second = self._by_char
        pick = np.zeros(len(self.matrix), dtype=bool)
        for rows_with in (first.get(int(w[0])), first.get(int(w[1])), second.get(int(w[1])), second.get(int(w[0]))):
            if rows_with is not None:
                pick[rows_with] = True
        rows_of = np.flatnonzero(pick)
        if not len(rows_of):
            return []
        m = self.matrix[rows_of]
        rows = np.zeros(len(m), dtype=bool)
        found: dict[int, int] = {}  # row -> length of the corrected prefix
        both = np.logical_and.accumulate
        # substitution or transposition: the word's first n characters
        eq = m[:, :n] == w
        mismatches = n - eq.sum(axis=1)
        swapped = (m[:, : n - 1] == w[1:]) & (m[:, 1:n] == w[:-1]) & ~eq[:, : n - 1] & ~eq[:, 1:]
        self._note((mismatches == 1) | ((mismatches == 2) & swapped.any(axis=1)), n, rows, found)
        # the typed word has an extra character (at i): its first n - 1 characters equal it without w[i]
        pre = both(eq, axis=1)  # pre[:, i]: the first i + 1 characters equal
        shifted = m[:, : n - 1] == w[1:]
        suf = both(shifted[:, ::-1], axis=1)[:, ::-1]  # suf[:, i]: characters i.. equal w shifted by one
        extra = suf[:, 0] | pre[:, n - 2] | (pre[:, : n - 2] & suf[:, 1 : n - 1]).any(axis=1)
        self._note(extra & (m[:, n - 2] != 0), n - 1, rows, found)
        # the typed word lacks a character (at i): the first n + 1 characters equal it with one more
        if n + 1 <= m.shape[1]:
            ahead = m[:, 1 : n + 1] == w
            suf_ahead = both(ahead[:, ::-1], axis=1)[:, ::-1]
            missing = suf_ahead[:, 0] | (pre[:, : n - 1] & suf_ahead[:, 1:n]).any(axis=1)
            self._note(missing & (m[:, n] != 0), n + 1, rows, found)
        out: list[str] = []
        for row in sorted(found):  # vocabulary order (rows_of is sorted): the most common words first
            prefix = self.vocab[int(rows_of[row])][: found[row]]
            if prefix != word and not prefix.startswith(word) and prefix not in out:
                out.append(prefix)
                if len(out) >= MAX_CORRECTIONS:
                    break
        return out

    @staticmethod
    def _note(mask: np.ndarray, length: int, rows: np.ndarray, found: dict[int, int]) -> None:
        for row in np.flatnonzero(mask & ~rows)[: MAX_CORRECTIONS * 4]:
            found[int(row)] = length
            rows[row] = True

    # ------------------------------------------------------------------ highlights
    def highlight(self, match: Match) -> str:
        text = self.items[match.item].text
        if match.words == 0:
            return html.escape(text, quote=False)
        tokens = [(t.start(), t.end()) for t in _WORD.finditer(text) if fold(t.group())]
        first = match.position
        last = first + match.words - 1
        if last >= len(tokens):
            return html.escape(text, quote=False)
        out: list[str] = []
        pos = 0
        for i in range(first, last + 1):
            start, end = tokens[i]
            if i == last:
                token = text[start:end]
                cut = len(token)
                for t in range(1, len(token) + 1):
                    if len(fold(token[:t])) >= match.last_chars:
                        cut = t
                        break
                end = start + cut
            out.append(html.escape(text[pos:start], quote=False))
            out.append("<em>" + html.escape(text[start:end], quote=False) + "</em>")
            pos = end
        out.append(html.escape(text[pos:], quote=False))
        return "".join(out)

"""Text analysis shared by indexing (ours and Whoosh's) and querying.

Tokenization keeps product codes and numbers findable in all their spellings:

* a *chunk* is a run of letters/digits joined by ``- . / ' & +`` (``SM-G930``, ``4.5-inch``,
  ``AT&T``); a chunk yields its *parts* (split at the joiners), the *atoms* of each part (split
  at letter/digit boundaries) and, when it has several parts, the *compound* (parts glued
  together).  ``"SM-G930"`` -> ``sm g930 g 930 smg930``; ``"iPhone8"`` -> ``iphone8 iphone 8``;
  ``"128GB"`` -> ``128gb 128 gb``.
* every term is case-folded, alphabetic terms are stemmed with the field's language's Snowball
  stemmer (the field's ``analyzer``, else the index language; the ``plain`` analyzer does not
  stem), then accents are folded (``"Écrans"`` -> ``ecran``).
* nothing is dropped: no stop words, single letters and digits are real terms.

At query time the text is cut into the same atoms, in order; adjacent atoms are also tried
glued together (``"sm g930"`` -> ``smg930``, ``"iphone 8"`` -> ``iphone8``), see ``clauses.py``.
Everything is cached per distinct chunk, so analysing a catalog costs a dict lookup per word
for words already seen.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from whoosh.analysis import Token, Tokenizer
from whoosh.fields import TEXT
from whoosh.lang import stemmer_for_language, stopwords_for_language
from whoosh.system import pack_uint

CHUNK_RE = re.compile(r"[^\W_]+(?:[-./'\u2019&+][^\W_]+)*")
PART_RE = re.compile(r"[^\W_]+")
ATOM_RE = re.compile(r"\d+|[^\W\d_]+")
_MAX_CACHE = 400_000
#: comparatives shoppers type ("phone under 200", "cheap case"): dropped before real words
_EXTRA_STOP_EN = frozenset({"less", "cheap", "cheaper", "cheapest", "around", "upto", "within", "without", "best"})


def fold(text: str) -> str:
    """Accent folding: NFKD and drop combining marks (``é`` -> ``e``, ``ё`` -> ``е``)."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@dataclass(frozen=True)
class QueryAtom:
    raw: str       # case-folded surface form (unstemmed, accents kept)
    norm: str      # the index term for it (stemmed + folded)
    numeric: bool  # all digits
    chunk: int     # index of the chunk (query word) it came from
    part: int = 0  # index of the part (within the query) it came from: "sm-g930" = parts sm, g930


class TextAnalyzer:
    """Language-specific analyzer. Thread-safe enough: caches are plain dicts (GIL)."""

    def __init__(self, language: str = "en", stem: bool = True) -> None:
        self.language = language
        self._stem = stemmer_for_language(language) if stem else None
        self._norm_cache: dict[str, str] = {}
        self._chunk_cache: dict[str, tuple[str, ...]] = {}
        self._main_cache: dict[str, str] = {}
        self._surf_cache: dict[str, tuple[tuple[str, str], ...]] = {}

    # -- single terms ---------------------------------------------------------------------
    def normalize(self, word: str) -> str:
        """Case-fold, stem (alphabetic words only) and accent-fold one word."""
        cached = self._norm_cache.get(word)
        if cached is not None:
            return cached
        w = word.casefold()
        if self._stem is not None and w.isalpha() and len(w) > 2:
            try:
                w = self._stem(w)
            except Exception:  # noqa: SIM105  # pragma: no cover - stemmer bug on odd input
                w = w
        w = fold(w)
        if len(self._norm_cache) > _MAX_CACHE:
            self._norm_cache.clear()
        self._norm_cache[word] = w
        return w

    def chunk_terms(self, chunk: str) -> tuple[str, ...]:
        cached = self._chunk_cache.get(chunk)
        if cached is not None:
            return cached
        low = chunk.casefold()
        parts = PART_RE.findall(low)
        terms: list[str] = []
        seen: set[str] = set()

        def add(t: str) -> None:
            n = self.normalize(t)
            if n and n not in seen:
                seen.add(n)
                terms.append(n)

        for p in parts:
            add(p)
            atoms = ATOM_RE.findall(p)
            if len(atoms) > 1:
                for a in atoms:
                    add(a)
        if 1 < len(parts) <= 8:
            add("".join(parts))
        out = tuple(terms)
        if len(self._chunk_cache) > _MAX_CACHE:
            self._chunk_cache.clear()
        self._chunk_cache[chunk] = out
        return out

    def chunk_main(self, chunk: str) -> str:
        """The one term standing for the whole chunk (proximity): the part, or the compound."""
        cached = self._main_cache.get(chunk)
        if cached is not None:
            return cached
        parts = PART_RE.findall(chunk.casefold())
        m = self.normalize("".join(parts)) if parts else ""
        if len(self._main_cache) > _MAX_CACHE:
            self._main_cache.clear()
        self._main_cache[chunk] = m
        return m

    def chunk_surfaces(self, chunk: str) -> tuple[tuple[str, str], ...]:
        """(surface, term) for the chunk's alphabetic words whose term differs from the folded
        surface form ("memory" -> "memori"): lets typo matching compare unstemmed words."""
        cached = self._surf_cache.get(chunk)
        if cached is not None:
            return cached
        out = []
        for p in PART_RE.findall(chunk.casefold()):
            for a in ATOM_RE.findall(p):
                if a.isalpha() and len(a) >= 3:
                    n = self.normalize(a)
                    f = fold(a)
                    if n != f:
                        out.append((f, n))
        res = tuple(out)
        if len(self._surf_cache) > _MAX_CACHE:
            self._surf_cache.clear()
        self._surf_cache[chunk] = res
        return res

    # -- documents ------------------------------------------------------------------------
    def chunk_spans(self, text: str) -> Iterator[tuple[int, int, tuple[str, ...]]]:
        """(start, end, terms) per chunk; used for highlighting."""
        for m in CHUNK_RE.finditer(text):
            yield m.start(), m.end(), self.chunk_terms(m.group())

    # -- queries --------------------------------------------------------------------------
    def query_atoms(self, text: str) -> list[QueryAtom]:
        atoms: list[QueryAtom] = []
        pi = 0
        for ci, chunk in enumerate(CHUNK_RE.findall(text)):
            low = chunk.casefold()
            for p in PART_RE.findall(low):
                for a in ATOM_RE.findall(p):
                    atoms.append(QueryAtom(raw=a, norm=self.normalize(a), numeric=a.isdigit(), chunk=ci, part=pi))
                pi += 1
        return atoms

    def phrase_terms(self, text: str) -> tuple[str, ...]:
        """The terms a phrase given as words (a synonym) must all match: one per chunk, the
        chunk's own term (``"wi-fi"`` -> ``wifi``, ``"s8"`` -> ``s8``, not ``s`` and ``8``)."""
        return tuple(t for t in (self.chunk_main(c) for c in CHUNK_RE.findall(text)) if t)

    @property
    def stop_words(self) -> frozenset[str]:
        """Words a query can lose first when all its words find nothing ("under", "for", "the"):
        the language's stop words (Whoosh's lists) plus a few shopping comparatives, as typed
        (case-folded, unstemmed)."""
        sw = self.__dict__.get("_stop_words")
        if sw is None:
            try:
                base = set(stopwords_for_language(self.language))
            except Exception:  # pragma: no cover - a language without a list
                base = set()
            if self.language.startswith("en"):
                base |= _EXTRA_STOP_EN
            sw = self.__dict__["_stop_words"] = frozenset(fold(w) for w in base)
        return sw


_ANALYZERS: dict[tuple[str, bool], TextAnalyzer] = {}
_LOCK = threading.Lock()


def get_analyzer(language: str, stem: bool = True) -> TextAnalyzer:
    key = (language, stem)
    an = _ANALYZERS.get(key)
    if an is None:
        with _LOCK:
            an = _ANALYZERS.get(key)
            if an is None:
                an = _ANALYZERS[key] = TextAnalyzer(language, stem)
    return an


class PreAnalyzed(tuple):
    """Terms already produced by :class:`TextAnalyzer` (the engine analyses each document once
    and hands the same terms to Whoosh and to its in-memory structures)."""

    __slots__ = ()


class ShopTokenizer(Tokenizer):
    """Whoosh tokenizer running :class:`TextAnalyzer`, so the Whoosh index holds the very same
    terms as the engine's in-memory structures (and a plain Whoosh parser can query it)."""

    def __init__(self, language: str = "en", stem: bool = True) -> None:
        self.language = language
        self.stem = stem

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ShopTokenizer)
            and other.language == self.language
            and other.stem == self.stem
        )

    def __hash__(self) -> int:
        return hash((self.language, self.stem))

    def __call__(  # type: ignore[override]
        self,
        value: Any,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        mode: str = "",
        **kwargs: Any,
    ) -> Iterator[Token]:
        t = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        if isinstance(value, PreAnalyzed):
            for i, term in enumerate(value):
                t.text = term
                t.boost = 1.0
                t.stopped = False
                if positions:
                    t.pos = start_pos + i
                if chars:
                    t.startchar = t.endchar = start_char
                yield t
            return
        if isinstance(value, (list, tuple)):
            value = " ".join(str(v) for v in value)
        an = get_analyzer(self.language, self.stem)
        pos = start_pos
        for start, end, terms in an.chunk_spans(value):
            for term in terms:
                t.text = term
                t.boost = 1.0
                t.stopped = False
                if keeporiginal:
                    t.original = term  # type: ignore[attr-defined]
                if positions:
                    t.pos = pos
                if chars:
                    t.startchar = start_char + start
                    t.endchar = start_char + end
                yield t
            pos += 1


_TERM_BYTES: dict[str, bytes] = {}
_FREQ_BYTES = [pack_uint(i) for i in range(64)]


class ShopText(TEXT):
    """Whoosh TEXT field (frequencies, no positions) that indexes :class:`PreAnalyzed` terms
    directly - no token objects - and falls back to :class:`ShopTokenizer` for plain text."""

    def index(self, value: Any, **kwargs: Any) -> Iterator[tuple[bytes, int, float, bytes]]:  # type: ignore[override]
        if isinstance(value, PreAnalyzed):
            fb = self.format.field_boost if self.format is not None else 1.0
            tb = _TERM_BYTES
            if len(tb) > _MAX_CACHE:
                tb.clear()
            for term, freq in Counter(value).items():
                b = tb.get(term)
                if b is None:
                    b = tb[term] = term.encode("utf-8")  # shared: one bytes object per term
                yield b, freq, freq * fb, _FREQ_BYTES[freq] if freq < 64 else pack_uint(freq)
            return
        yield from super().index(value, **kwargs)

"""Stage 1 of a shard's search: the query text as clauses, each a query word with its alternatives.

* the query text is cut into atoms (``analysis.QueryAtom``); each atom is a *clause*.
* a clause's alternatives: the exact term (factor 1.0), adjacent atoms glued together
  (``"iphone 7"`` -> ``iphone7``, factor 1.0, satisfies every clause of the span), synonyms
  (0.9; a key of one or more words satisfies every clause of its span), prefix expansions of
  the last atom (0.8), 1-typo (0.55) and 2-typo (0.35) expansions (``expansions.py``).
* a word found in fewer than TYPO_WORD_THRESHOLD documents as typed is also tried as two
  consecutive words ("applewatch": "Apple Watch", :func:`split_alternatives`, factor 0.9).
* the atoms of a model code ("s8", "sm-g930", "6s": :func:`code_atoms`) have no exact
  alternative of their own: the code matches glued, or as consecutive words ("S 5", from the
  proximity rows: ``candidates.phrase_postings``), never as the ``8`` of "8GB".
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from shared.contract import Typo

from .analysis import QueryAtom, TextAnalyzer, fold
from .errors import NO_DEADLINE, Deadline
from .expansions import prefix_candidates, typo_candidates
from .memindex import MemIndex

F_EXACT = 1.0
F_JOIN = 1.0
F_PHRASE = 0.95  # a code spelled apart ("S 5" for "s5"): just below the code as typed
F_SYN = 0.9
F_SPLIT = 0.9  # a word typed glued, found as two ("applewatch": "Apple Watch")
F_PREFIX = 0.8
F_TYPO1 = 0.55
F_TYPO2 = 0.35
MAX_ATOMS = 16
MAX_PREFIX_EXPANSIONS = 40
MAX_TYPO_EXPANSIONS = 24
MAX_TYPO_EXPANSIONS_KNOWN = 8
PREFIX_LIMIT_BY_LEN = {1: 8, 2: 20}
#: a word whose exact form (or glued/prefix alternatives) finds this many documents gets no typo
#: variants ...
TYPO_WORD_THRESHOLD = 8
#: a model code of up to this many atoms also matches them as consecutive words ("s5": "S 5")
MAX_PHRASE = 3
#: a word of this many letters found rarely as typed is also tried as two words ("applewatch"),
#: each of at least SPLIT_MIN_PART letters, the MAX_SPLITS most frequent pairs
SPLIT_MIN_LEN = 5
SPLIT_MIN_PART = 2
MAX_SPLITS = 2
#: letters a model code starts with ("s8", "sm-g930", "j1"), see :func:`code_atoms`
CODE_MAX_LETTERS = 2


@dataclass
class Alt:
    terms: tuple[str, ...]  # one term, or several (multi-word synonym: all must match)
    factor: float
    kind: str  # exact | join | syn | prefix | typo | phrase (consecutive words, see phrase_postings) | split
    # (a word typed glued, as two consecutive words: a guess at what was meant, like a typo)


@dataclass
class Clause:
    word: str
    alts: list[Alt] = field(default_factory=list)
    stop: bool = False  # a stop word ("under", "for"): the first to go when all words find nothing
    numeric: bool = False
    group: int = -1  # a stop phrase ("under 200"): its words are dropped together



def code_atoms(atoms: Sequence[QueryAtom]) -> set[int]:
    """Atoms of model codes ("s8", "j1", "g930", "6s", "4k"): a part mixing digits and a short
    run of letters (at most CODE_MAX_LETTERS, at its start, or a single letter after digits).
    Their pieces do not match alone: "s8" must not find the ``s`` of "Apple's" and the ``8`` of
    "8GB"; the code matches as a whole (glued, or its atoms as consecutive words) or not at all."""
    out: set[int] = set()
    by_part: dict[int, list[int]] = {}
    for k, a in enumerate(atoms):
        by_part.setdefault(a.part, []).append(k)
    for ks in by_part.values():
        # the code ends before a word glued to it ("s7edge": s7 + edge)
        cut = next((j for j, k in enumerate(ks) if j and not atoms[k].numeric and len(atoms[k].raw) > CODE_MAX_LETTERS),
                   len(ks))
        ks = ks[:cut]
        if len(ks) < 2:
            continue
        kinds = [atoms[k].numeric for k in ks]
        if all(kinds) or not any(kinds):
            continue
        first = atoms[ks[0]]
        letters = [atoms[k].raw for k in ks if not atoms[k].numeric]
        if (not first.numeric and len(first.raw) <= CODE_MAX_LETTERS) or (first.numeric and all(len(x) == 1 for x in letters)):
            out.update(ks)
    return out


def build_clauses(idx: MemIndex, text: str, typo: Typo, synonyms: Mapping[str, Sequence[Sequence[str]]] | None,
                  allow_prefix: bool, an: TextAnalyzer | None = None, deadline: Deadline = NO_DEADLINE) -> list[Clause]:
    """The clauses of ``text`` as analysed by ``an`` (default: the index language's). Every
    analyzer cuts a text into the same atoms, so clause ``i`` is the same word for all of them."""
    an = an or idx.analyzer
    atoms = an.query_atoms(text)[:MAX_ATOMS]
    if not atoms:
        return []
    td = idx.term_df
    typo_on = typo.enabled
    min1 = typo.min_word_size_one_typo
    min2 = typo.min_word_size_two_typos
    codes = code_atoms(atoms)
    trailing_space = text[-1:].isspace()
    clauses: list[Clause] = []
    last = len(atoms) - 1
    raw_forms = [fold(a.raw) for a in atoms]
    stops = an.stop_words
    for i, a in enumerate(atoms):
        deadline.check()  # typo expansion of a long word walks thousands of deletion keys
        # a stop word is a query word of its own ("for"), not a piece of one ("AT&T", "Apple's")
        alone = (i == 0 or atoms[i - 1].chunk != a.chunk) and (i == last or atoms[i + 1].chunk != a.chunk)
        c = Clause(word=a.raw, stop=alone and fold(a.raw) in stops, numeric=a.numeric)
        if c.stop:
            c.group = i
        elif a.numeric and i > 0 and clauses[i - 1].stop:  # "under 200": a price, not a word
            c.stop, c.group = True, clauses[i - 1].group
        raw_f = fold(a.raw)
        exact = {a.norm, raw_f}
        if i not in codes:
            for t in exact:
                c.alts.append(Alt((t,), F_EXACT, "exact"))
        if (i == last and allow_prefix and not trailing_space and not (a.numeric and len(a.raw) < 2)
                and sum(1 for x in atoms if x.chunk == a.chunk) == 1):
            limit = PREFIX_LIMIT_BY_LEN.get(len(a.raw), MAX_PREFIX_EXPANSIONS)
            for t in prefix_candidates(idx, [a.norm, raw_f], limit):
                if t not in exact:
                    c.alts.append(Alt((t,), F_PREFIX, "prefix"))
        if typo_on and not a.numeric and len(a.raw) >= min1 and i not in codes:
            max_d = 2 if len(a.raw) >= min2 else 1
            cands = typo_candidates(idx, sorted(exact), max_d)
            # a word that is itself in the dictionary needs fewer typo alternatives
            cap = MAX_TYPO_EXPANSIONS_KNOWN if any(t in td for t in exact) else MAX_TYPO_EXPANSIONS
            # the closest and most frequent first, ties by the term: every process keeps (and
            # orders) the same expansions
            cands = dict(heapq.nsmallest(cap, cands.items(), key=lambda kv: (kv[1], -td.get(kv[0], 0), kv[0])))
            have = {x.terms[0] for x in c.alts if len(x.terms) == 1}
            for t, d in cands.items():
                if t not in have:
                    c.alts.append(Alt((t,), F_TYPO1 if d == 1 else F_TYPO2, "typo"))
        clauses.append(c)
    # last word typed as a code ("sm-g9", "6s"): prefix of the whole chunk, for all its atoms
    chunk_atoms = [k for k, x in enumerate(atoms) if x.chunk == atoms[last].chunk]
    if allow_prefix and not trailing_space and len(chunk_atoms) > 1:
        compound = fold("".join(atoms[k].raw for k in chunk_atoms))
        for t in prefix_candidates(idx, [compound], PREFIX_LIMIT_BY_LEN.get(len(compound), MAX_PREFIX_EXPANSIONS)):
            if t != compound:
                for k in chunk_atoms:
                    clauses[k].alts.append(Alt((t,), F_PREFIX, "prefix"))
    # glue adjacent atoms: "sm g930" -> smg930, "iphone 8" -> iphone8, "128 gb" -> 128gb
    for i in range(len(atoms)):
        for span in (2, 3):
            j = i + span
            if j > len(atoms):
                break
            joined = an.normalize("".join(x.raw for x in atoms[i:j]))
            if joined in td and joined not in {x.norm for x in atoms[i:j]}:
                for k in range(i, j):
                    clauses[k].alts.append(Alt((joined,), F_JOIN, "join"))
    # a word typed glued ("applewatch", "earbuds" typed for "ear buds"): its two halves as
    # consecutive words, when the word as typed is rare (Meilisearch's word splitting)
    for i, a in enumerate(atoms):
        if (i not in codes and not a.numeric and len(a.raw) >= SPLIT_MIN_LEN
                and max(td.get(a.norm, 0), td.get(raw_forms[i], 0)) < TYPO_WORD_THRESHOLD):
            clauses[i].alts.extend(split_alternatives(td, an, raw_forms[i]))
    # a model code: its atoms as adjacent words too ("s5" finds "Galaxy S 5"), and the whole part
    # it is in ("a1b2c3", "k8pin4fb": more atoms than the glued spans reach)
    parts: dict[int, list[int]] = {}
    for k in sorted(codes):
        parts.setdefault(atoms[k].part, []).append(k)
    for pi, ks in parts.items():
        if len(ks) <= MAX_PHRASE:
            phrase = Alt(tuple(atoms[k].norm for k in ks), F_PHRASE, "phrase")
            for k in ks:
                clauses[k].alts.append(phrase)
        whole = [k for k, x in enumerate(atoms) if x.part == pi]
        if len(whole) > 3:
            joined = an.normalize("".join(atoms[k].raw for k in whole))
            if joined in td:
                for k in whole:
                    clauses[k].alts.append(Alt((joined,), F_JOIN, "join"))
    if synonyms:
        add_synonyms(clauses, atoms, synonyms, an, td)
    return clauses


def split_alternatives(td: Mapping[str, int], an: TextAnalyzer, word: str) -> list[Alt]:
    """A word as two consecutive words of the shard ("applewatch": "apple watch"): the splits
    into two words of SPLIT_MIN_PART+ letters that are both terms, the most frequent pair
    first (by the rarer word), at most MAX_SPLITS. They match as a phrase (consecutive words,
    :func:`phrase_postings`), so a split whose halves are never found together finds nothing."""
    found = []
    for k in range(SPLIT_MIN_PART, len(word) - SPLIT_MIN_PART + 1):
        left, right = an.normalize(word[:k]), an.normalize(word[k:])
        df = min(td.get(left, 0), td.get(right, 0))
        if df:
            found.append((-df, k, left, right))
    return [Alt((left, right), F_SPLIT, "split") for _, _, left, right in heapq.nsmallest(MAX_SPLITS, found)]


def add_synonyms(clauses: list[Clause], atoms: Sequence[QueryAtom],
                 synonyms: Mapping[str, Sequence[Sequence[str]]], an: TextAnalyzer,
                 known: Mapping[str, int] | None = None) -> None:
    """The merchant's synonyms as alternatives: a key of one or more words matching consecutive
    atoms (compared as the analyzer normalises them) gives each of its alternatives (one or more
    words, all to be found in one field) to every clause of the span, like a glued alternative.
    They are never pruned as typo variants are (see :func:`gate_typos`).

    A key ``"~word"`` is the control plane's guess that ``word`` is a typo of a synonym entry: it
    applies only where ``word`` as typed is not a term of the shard (``known``), so a real word
    never takes the synonyms of its neighbour."""
    spans: dict[tuple[str, ...], list[Sequence[str]]] = {}
    for key, alts in synonyms.items():
        text = str(key)
        fallback = text.startswith("~")
        atoms_of_key = an.query_atoms(text[1:] if fallback else text)
        if fallback and known is not None and any(x.norm in known or fold(x.raw) in known for x in atoms_of_key):
            continue
        kw = tuple(x.norm for x in atoms_of_key)
        if kw:
            spans.setdefault(kw, []).extend(alts)
    if not spans:
        return
    longest = max(len(k) for k in spans)
    norms = [a.norm for a in atoms]
    for i in range(len(atoms)):
        for j in range(i + 1, min(len(atoms), i + longest) + 1):
            span = tuple(norms[i:j])
            found = spans.get(span)
            if not found:
                continue
            own = {span, tuple(an.phrase_terms(" ".join(a.raw for a in atoms[i:j])))}
            seen: set[tuple[str, ...]] = set()
            for syn in found:
                words = an.phrase_terms(" ".join(str(w) for w in syn))
                if not words or words in own or words in seen:
                    continue
                seen.add(words)
                for k in range(i, j):
                    clauses[k].alts.append(Alt(words, F_SYN, "syn"))

"""Vectorised query evaluation over :class:`MemIndex` (no per-document Python loops).

Evaluation follows the matches, not the shard: :func:`plan_clauses` finds each clause's posting
lists per field, :func:`candidate_slots` takes the rarest clause's docs and keeps those every
other clause has (binary search of few candidates in long lists, a slot map otherwise, masks for
broad words), and :func:`score_plans` scores only those candidates. When all words find nothing
(the candidates or the filters say so before anything is scored), :func:`relax_clauses` decides
which words to drop by counting on membership masks and only the survivors are scored.

Scoring (per shard, comparable across shards, see ``search.py``):

* the query text is cut into atoms (``analysis.QueryAtom``); each atom is a *clause*.
* a clause's alternatives: the exact term (factor 1.0), adjacent atoms glued together
  (``"iphone 7"`` -> ``iphone7``, factor 1.0, satisfies every clause of the span), synonyms
  (0.9; a key of one or more words satisfies every clause of its span), prefix expansions of
  the last atom (0.8), 1-typo (0.55) and 2-typo (0.35) expansions (Damerau/OSA distance
  through the term dictionary's deletion index; a typo on the first letter counts as two).
* a word found in fewer than TYPO_WORD_THRESHOLD documents as typed is also tried as two
  consecutive words ("applewatch": "Apple Watch", :func:`split_alternatives`, factor 0.9).
* the atoms of a model code ("s8", "sm-g930", "6s": :func:`code_atoms`) have no exact
  alternative of their own: the code matches glued, or as consecutive words ("S 5", from the
  proximity rows: :func:`phrase_postings`), never as the ``8`` of "8GB".
* typo discipline (:func:`plan_candidates`): a word whose exact/glued/prefix forms find
  TYPO_WORD_THRESHOLD documents loses its typo variants ("iphone" does not find every
  "phone"), unless the query then finds fewer than TYPO_QUERY_THRESHOLD documents; synonyms
  are never pruned.
* per field: BM25 (k1=1.2, b=0.75) of the best alternative, using one idf per clause and field
  (that of the clause's most frequent alternative) so that a rare misspelt term never outranks
  the exact word; the field score is multiplied by the field weight.  A clause scores its best
  field plus 20 % of the other fields (a word in the name and the description is not worth
  twice a word in the name); the clause scores are summed.
* docs whose every clause matched inside one field get a bonus (up to +50 % for the heaviest
  field): ``iphone 7`` in the name beats ``iphone`` in the name and ``7`` in the description.
* proximity: among the PROXIMITY_WINDOW best documents (a fixed window, so paging stays
  consistent), up to +30 % for the share of adjacent query words found adjacent, in order, in
  the first 24 words of a field (the best field, whatever its weight): "iphone 6s 16gb" ranks
  "iPhone 6s 16GB" above "iPhone 6s Plus 16GB"; and up to 3 % more (COVERAGE_SHARE) for the
  share of the heaviest field's words that are query words (exactness: "Case for iPhone 6"
  above "Wrap Case for iPhone 6").
* a query naming a value of a queried keyword field (a brand, a category) multiplies the
  score of the documents holding it by ``1 + KEYWORD_VALUE_BONUS * share**2`` (the share of the
  query's words the value covers): :func:`keyword_value_bonus`.
* ``boosts`` multiply by ``1 + sum(weight * modifier(value))``; each matching ``boost_filters``
  entry multiplies by ``max(0, 1 + weight)`` (weight -1 sinks a document to score 0).
"""

from __future__ import annotations

import bisect
import heapq
import html
import math
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from shared.contract import FieldWeight, Typo
from shared.text import osa_distance

from .analysis import CHUNK_RE, QueryAtom, TextAnalyzer, fold
from .errors import NO_DEADLINE, Deadline, EngineError
from .memindex import MemIndex, Postings, keyword_values, text_of, to_bool, to_number

K1 = 1.2
B = 0.75
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
#: ... unless the query finds fewer documents than this without them
TYPO_QUERY_THRESHOLD = 8
#: a query naming a value of a searchable keyword field (a brand, a category): documents holding
#: it get up to this much more score (the share of the query's words the value covers)
KEYWORD_VALUE_BONUS = 1.0
#: a model code of up to this many atoms also matches them as consecutive words ("s5": "S 5")
MAX_PHRASE = 3
#: a word of this many letters found rarely as typed is also tried as two words ("applewatch"),
#: each of at least SPLIT_MIN_PART letters, the MAX_SPLITS most frequent pairs
SPLIT_MIN_LEN = 5
SPLIT_MIN_PART = 2
MAX_SPLITS = 2
#: letters a model code starts with ("s8", "sm-g930", "j1"), see :func:`code_atoms`
CODE_MAX_LETTERS = 2
SAME_FIELD_BONUS = 0.5
PROXIMITY_BONUS = 0.3
PROXIMITY_WINDOW = 1000
#: part of the proximity bonus for the share of a field's words that are query words
COVERAGE_SHARE = 0.1
OTHER_FIELDS_FACTOR = 0.2
#: masks of long posting lists kept per shard (broad words: candidates and relaxation)
MASK_CACHE_BYTES = 16 << 20
#: characters of a field value highlighted: the rest of a longer value is left out of the highlight
HIGHLIGHT_MAX_CHARS = 10_000
_EMPTY_SLOTS = np.zeros(0, dtype=np.int32)
_GUESSES = ("typo", "split")  # alternatives guessing what was meant (relaxation drops them first)


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


# ----------------------------------------------------------------------------- distances
def _deletes(word: str) -> set[str]:
    return {word[:i] + word[i + 1:] for i in range(len(word))}


def _cached(idx: MemIndex, key: tuple) -> tuple[dict, object]:
    """Expansion cache, valid until the next change to the shard (``MemIndex.version``)."""
    cache = idx.expansion_cache
    if cache.get("__version__") != idx.version or len(cache) > 20000:
        cache.clear()
        cache["__version__"] = idx.version
    return cache, cache.get(key)


def typo_candidates(idx: MemIndex, words: list[str], max_d: int) -> dict[str, int]:
    """Terms within ``max_d`` (OSA) of any of ``words``, found via the deletion index."""
    cache, hit = _cached(idx, ("typo", tuple(words), max_d))
    if hit is not None:
        return hit  # type: ignore[return-value]
    out = _typo_candidates(idx, words, max_d)
    cache[("typo", tuple(words), max_d)] = out
    return out


def _typo_candidates(idx: MemIndex, words: list[str], max_d: int) -> dict[str, int]:
    out: dict[str, int] = {}
    di = idx.del_index
    surfaces = idx.surfaces
    td = idx.term_df
    for w in dict.fromkeys(words):
        keys = {w} | _deletes(w)
        if max_d >= 2:
            keys |= {d2 for d1 in _deletes(w) for d2 in _deletes(d1)}
        cands: set[str] = set()
        for k in keys:
            found = di.get(k)
            if found is None:
                continue
            if isinstance(found, str):
                cands.add(found)
            else:
                cands.update(found)
        for c in cands:
            if c == w or c[0:1].isdigit() != w[0:1].isdigit():
                continue
            d = osa_distance(w, c, max_d)
            if c[:1] != w[:1]:  # a typo on the first letter counts as two (Meilisearch)
                d += 1
            if 0 < d <= max_d:
                targets = [c] if c in td else []
                surf = surfaces.get(c)
                if surf is not None:
                    targets.extend((surf,) if isinstance(surf, str) else surf)
                for t in targets:
                    if t not in words and d < out.get(t, 99):
                        out[t] = d
    return out


def prefix_candidates(idx: MemIndex, prefixes: list[str], limit: int) -> list[str]:
    cache, hit = _cached(idx, ("prefix", tuple(prefixes), limit))
    if hit is not None:
        return hit  # type: ignore[return-value]
    out = _prefix_candidates(idx, prefixes, limit)
    cache[("prefix", tuple(prefixes), limit)] = out
    return out


def _prefix_candidates(idx: MemIndex, prefixes: list[str], limit: int) -> list[str]:
    terms = idx.sorted_terms
    found: set[str] = set()
    for p in dict.fromkeys(prefixes):
        if not p:
            continue
        i = bisect.bisect_left(terms, p)
        j = bisect.bisect_left(terms, p + "\U0010ffff")
        found.update(terms[i:j])
    df = idx.term_df
    # the most frequent first, ties by the term: every process picks (and orders) the same terms
    return heapq.nsmallest(limit, found, key=lambda t: (-df.get(t, 0), t))


# ----------------------------------------------------------------------------- clauses
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


# ----------------------------------------------------------------------------- scoring
def tf_norm(p: Postings, lens: np.ndarray, avg: float) -> np.ndarray:
    """BM25 tf part of a posting list, cached on it while the average field length stays within
    1 % (it moves slowly as documents come and go)."""
    key = int(round(math.log(avg) / 0.01))
    if p.tfn is None or p.tfn_key != key:
        a = math.exp(key * 0.01)
        tfs = p.tfs
        p.tfn = ((K1 + 1.0) * tfs / (tfs + K1 * (1.0 - B + B * (lens[p.docs] / a)))).astype(np.float32)
        p.tfn_key = key
    return p.tfn


def _idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


class Scored:
    __slots__ = ("clause_scores", "clause_field_hit", "matched_terms")

    def __init__(self) -> None:
        self.clause_scores: list[np.ndarray] = []
        self.clause_field_hit: list[dict[str, np.ndarray]] = []
        self.matched_terms: set[str] = set()


@dataclass
class FieldPlan:
    """One clause in one field: the alternatives found there and the clause's idf in that field."""

    field: str
    weight: float
    idf: float
    present: list[tuple[Alt, list[Postings]]]


def plan_clauses(idx: MemIndex, clauses: list[Clause], fields: Mapping[str, FieldWeight],
                 field_clauses: dict[str, list[Clause]] | None = None) -> list[list[FieldPlan]]:
    """Per clause, per queried field: the posting lists of the alternatives present there.
    ``field_clauses``: a field's own clauses (from its analyzer) instead of ``clauses``."""
    n_live = max(idx.n_live, 1)
    plans: list[list[FieldPlan]] = []
    for i, base_clause in enumerate(clauses):
        fps: list[FieldPlan] = []
        for fname, fcfg in fields.items():
            plist = idx.postings.get(fname)
            if not plist:
                continue
            c = field_clauses[fname][i] if field_clauses and fname in field_clauses else base_clause
            use_typo = fcfg.typo
            use_prefix = fcfg.prefix
            present: list[tuple[Alt, list[Postings]]] = []
            for a in c.alts:
                if (not use_typo and a.kind == "typo") or (not use_prefix and a.kind == "prefix"):
                    continue
                if a.kind in ("phrase", "split"):
                    ph = phrase_postings(idx, fname, a.terms)
                    if ph is not None:
                        present.append((a, [ph]))
                    continue
                got = [plist.get(t) for t in a.terms]
                if all(p is not None and len(p.docs) for p in got):
                    present.append((a, cast(list[Postings], got)))
            if not present:
                continue
            fps.append(FieldPlan(fname, float(fcfg.weight), _plan_idf(n_live, present), present))
        plans.append(fps)
    return plans


def _plan_idf(n_live: int, present: list[tuple[Alt, list[Postings]]]) -> float:
    """The clause's idf in a field: that of its most frequent (single-word) alternative."""
    singles = [len(ps[0].docs) for a, ps in present if len(a.terms) == 1]
    # posting lists still hold deleted docs until compaction: df never above the live count
    max_df = max(singles) if singles else max(len(ps[0].docs) for _, ps in present)
    return _idf(n_live, min(max_df, n_live))


def _plain_docs(idx: MemIndex, fps: list[FieldPlan], enough: int) -> int:
    """Documents a clause finds without typos (exact, glued, prefix alternatives), counted
    exactly only below ``enough``."""
    arrays = [ps[0].docs for fp in fps if fp.weight > 0 for a, ps in fp.present
              if a.kind in ("exact", "join", "prefix", "phrase", "split")]
    if not arrays:
        return 0
    sizes = [len(d) for d in arrays]
    if max(sizes) >= enough or sum(sizes) < enough:
        return max(max(sizes), min(sum(sizes), enough - 1))
    return len(_union(idx, arrays))


def gate_typos(idx: MemIndex, plans: list[list[FieldPlan]], enough: int = TYPO_WORD_THRESHOLD) -> list[list[FieldPlan]] | None:
    """The plans without the typo variants of the words whose exact form (or glued or prefix
    alternatives) finds ``enough`` documents (Typesense's ``typo_tokens_threshold``, per word):
    "iphone" must not find every "phone". ``None``: no word has typo variants to lose.
    Synonyms stay (the merchant's explicit intent)."""
    n_live = max(idx.n_live, 1)
    out: list[list[FieldPlan]] = []
    changed = False
    for fps in plans:
        if not any(a.kind == "typo" for fp in fps for a, _ in fp.present) or _plain_docs(idx, fps, enough) < enough:
            out.append(fps)
            continue
        changed = True
        kept: list[FieldPlan] = []
        for fp in fps:
            present = [(a, ps) for a, ps in fp.present if a.kind != "typo"]
            if present:
                kept.append(FieldPlan(fp.field, fp.weight, _plan_idf(n_live, present), present))
        out.append(kept)
    return out if changed else None


def plan_candidates(idx: MemIndex, clauses: list[Clause], fields: Mapping[str, FieldWeight],
                    field_clauses: dict[str, list[Clause]] | None, any_clause: bool, base: np.ndarray | None,
                    deadline: Deadline = NO_DEADLINE) -> tuple[list[list[FieldPlan]], np.ndarray]:
    """The plans and candidate slots of a query: first without the typo variants of words
    found often enough as typed (:func:`gate_typos`); with them all when that finds fewer
    than TYPO_QUERY_THRESHOLD documents within ``base`` (then typos come before dropping words)."""
    plans = plan_clauses(idx, clauses, fields, field_clauses)
    deadline.check()
    gated = gate_typos(idx, plans)
    if gated is not None:
        cands = candidate_slots(idx, gated, any_clause)
        found = len(cands) if base is None else int(np.count_nonzero(np.take(base, cands)))
        if found >= TYPO_QUERY_THRESHOLD:
            return gated, cands
        deadline.check()
    return plans, candidate_slots(idx, plans, any_clause)


def phrase_postings(idx: MemIndex, fname: str, terms: tuple[str, ...]) -> Postings | None:
    """Postings of the documents holding ``terms`` as consecutive words of ``fname`` (its first
    POSITIONS words: the proximity rows), tf = times found; ``None``: nowhere. Cached until the
    shard changes."""
    key = ("phrase", fname, terms)
    cache, hit = _cached(idx, key)
    if hit is not None:
        return hit or None  # type: ignore[return-value]
    out: Postings | None = None
    plist = idx.postings.get(fname) or {}
    got = [plist.get(t) for t in terms]
    ids = [idx.chunk_ids.get(t, -2) for t in terms]
    pos = idx.pos.get(fname)
    if pos is not None and all(p is not None and len(p.docs) for p in got) and min(ids) >= 0:
        docs = cast(Postings, got[0]).docs
        for p in got[1:]:
            docs = np.intersect1d(docs, cast(Postings, p).docs, assume_unique=True)
        if len(docs):
            rows = np.take(pos, docs, axis=0)
            width = rows.shape[1]
            k = len(terms)
            hit_at = np.ones((len(docs), width - k + 1), dtype=bool)
            for j, cid in enumerate(ids):
                hit_at &= rows[:, j:width - k + 1 + j] == cid
            tf = np.count_nonzero(hit_at, axis=1)
            keep = tf > 0
            if keep.any():
                out = Postings()
                out.docs = docs[keep].astype(np.int32)
                out.tfs = tf[keep].astype(np.float32)
    cache[key] = out if out is not None else False
    return out


def _union(idx: MemIndex, arrays: list[np.ndarray]) -> np.ndarray:
    """Sorted live slots found in any of ``arrays`` (sorted posting doc lists)."""
    if not arrays:
        return _EMPTY_SLOTS
    if len(arrays) == 1:
        c = arrays[0]
    elif sum(len(d) for d in arrays) * 16 > idx.n:  # a large union: through a mask over the shard
        mask = np.zeros(idx.n, dtype=bool)
        for d in arrays:
            mask[d] = True
        return np.flatnonzero(mask & idx.live[: idx.n]).astype(np.int32)
    else:
        c = np.concatenate(arrays)
        c.sort()
        c = c[np.concatenate(([True], c[1:] != c[:-1]))]
    return c[idx.live[c]]


def _locate(docs: np.ndarray, cands: np.ndarray, s2c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions in ``cands``, indices in ``docs``) of the candidates found in a posting list.

    Few candidates against a long list: binary search them in it; else look every posting up in
    the slot -> position map (``s2c`` must hold ``cands``)."""
    n_docs = len(docs)
    if len(cands) * 16 < n_docs:
        j = np.searchsorted(docs, cands)
        np.minimum(j, n_docs - 1, out=j)
        ok = docs[j] == cands
        return np.flatnonzero(ok), j[ok]
    pos = np.take(s2c, docs)
    sel = np.flatnonzero(pos >= 0)
    return pos[sel], sel


def candidate_slots(idx: MemIndex, plans: list[list[FieldPlan]], any_clause: bool) -> np.ndarray:
    """Sorted live slots that can match.  Any word: every clause's docs.  All words: the docs of
    the clause with the fewest postings, kept when every other clause has them too."""
    groups = [[ps[0].docs for fp in fps for _, ps in fp.present] for fps in plans]
    if any_clause:
        return _union(idx, [d for g in groups for d in g])
    groups.sort(key=lambda g: sum(len(d) for d in g))
    n = idx.n
    if sum(len(d) for d in groups[0]) * 16 > n:  # broad words: masks over the shard
        return np.flatnonzero(and_masks(n, [clause_mask(idx, fps) for fps in plans])).astype(np.int32)
    cands = _union(idx, groups[0])
    s2c = idx.slot_positions()
    for g in groups[1:]:
        if not len(cands):
            break
        s2c[cands] = np.arange(len(cands), dtype=np.int32)
        try:
            member = np.zeros(len(cands), dtype=bool)
            for d in g:
                member[_locate(d, cands, s2c)[0]] = True
        finally:
            s2c[cands] = -1
        cands = cands[member]
    return cands


def clause_mask(idx: MemIndex, fps: list[FieldPlan]) -> np.ndarray:
    """The live slots a clause scores above zero in (see :func:`score_plans`), as a mask."""
    n = idx.n
    m = np.zeros(n, dtype=bool)
    for fp in fps:
        if fp.weight <= 0:  # scores nothing, so matches nothing
            continue
        for a, ps in fp.present:
            if len(ps) == 1:
                if len(ps[0].docs) * 16 > n:
                    m |= _posting_mask(idx, fp.field, " ".join(a.terms), ps[0])
                else:
                    m[ps[0].docs] = True
            else:  # a multi-word synonym matches where every word is in this field
                every = np.zeros(n, dtype=bool)
                every[ps[0].docs] = True
                for p in ps[1:]:
                    has = np.zeros(n, dtype=bool)
                    has[p.docs] = True
                    every &= has
                m |= every
    return m & idx.live[:n]


def _posting_mask(idx: MemIndex, fname: str, term: str, p: Postings) -> np.ndarray:
    """The slots of a long posting list as a mask over the shard, kept with the expansions until
    the shard changes (OR-ing it costs a tenth of scattering its int32 slots), within
    MASK_CACHE_BYTES."""
    key = ("mask", fname, term)
    cache, hit = _cached(idx, key)
    if hit is not None:
        return hit  # type: ignore[return-value]
    m = np.zeros(idx.n, dtype=bool)
    m[p.docs] = True
    held = cache.get(("mask bytes",), 0)
    if held + idx.n <= MASK_CACHE_BYTES:
        cache[key] = m
        cache[("mask bytes",)] = held + idx.n
    return m


def relax_clauses(idx: MemIndex, plans: list[list[FieldPlan]], base: np.ndarray | None,
                  deadline: Deadline = NO_DEADLINE, clauses: Sequence[Clause] | None = None) -> tuple[list[int], np.ndarray]:
    """All words found nothing: drop the least informative words until something matches in
    ``base``.

    Words matching nothing go first; then stop words ("under", "for"; with a number right after
    one, both at once: "under 200" is a price), then bare numbers found only as typed (no glued or
    synonym alternative) and words found mostly as typo variants or split ("applewatch"), then the
    most common words. Returns the clauses kept and the live slots matching all of them (filters
    aside: facets count disjunctively). Word membership is a mask over the shard
    per clause, exactly the docs the clause scores above zero in: which words to drop is decided
    by counting, and only the survivors get scored."""
    masks = []
    for fps in plans:
        deadline.check()
        masks.append(clause_mask(idx, fps))
    counts = [int(np.count_nonzero(m if base is None else m & base)) for m in masks]
    kept = [i for i in range(len(plans)) if counts[i] > 0]
    rank = []
    for i, fps in enumerate(plans):
        r = _drop_class(clauses[i] if clauses else None, fps)
        if r == 0 and counts[i] and any(a.kind in _GUESSES for fp in fps for a, _ in fp.present):
            plain = [FieldPlan(fp.field, fp.weight, fp.idf, [(a, ps) for a, ps in fp.present if a.kind not in _GUESSES])
                     for fp in fps]
            m = clause_mask(idx, plain)
            if int(np.count_nonzero(m if base is None else m & base)) * 2 < counts[i]:
                r = 1  # found mostly as typo variants or split: a guess at what was meant
        rank.append(r)
    while kept:
        both = masks[kept[0]].copy()
        for i in kept[1:]:
            both &= masks[i]
        if (both if base is None else both & base).any():
            return kept, np.flatnonzero(both).astype(np.int32)
        drop = max(kept, key=lambda i: (rank[i], counts[i], i))
        group = clauses[drop].group if clauses and rank[drop] == 2 else -1
        kept = [i for i in kept if i != drop and (group < 0 or not clauses or clauses[i].group != group)]
    return kept, _EMPTY_SLOTS


def _drop_class(clause: Clause | None, fps: list[FieldPlan]) -> int:
    """How little a word tells (dropped first: the highest): 2 a stop word, 1 a bare number
    found only as typed, 0 any other word."""
    if clause is None:
        return 0
    if clause.stop:
        return 2
    if clause.numeric and not any(a.kind != "exact" for fp in fps for a, _ in fp.present):
        return 1
    return 0


def score_plans(idx: MemIndex, plans: list[list[FieldPlan]], cands: np.ndarray, dense: bool | None = None,
                deadline: Deadline = NO_DEADLINE) -> Scored:
    """Clause scores over ``cands`` (positions aligned with it), see the module docstring.

    Work follows the candidates and the posting lists, never the shard size.  When the candidates
    are a large share of the shard, scores are accumulated by slot (no per-posting lookups) and
    gathered at the candidates once per clause and field."""
    m = len(cands)
    out = Scored()
    if dense is None:
        dense = m * 16 > idx.n
    size = idx.n if dense else m
    s2c = idx.slot_positions()
    if not dense:
        s2c[cands] = np.arange(m, dtype=np.int32)
    try:
        for fps in plans:
            deadline.check()
            total = np.zeros(m, dtype=np.float32)
            best = np.zeros(m, dtype=np.float32)
            hits: dict[str, np.ndarray] = {}
            for fp in fps:
                lens = idx.lengths[fp.field]
                avg = idx.avg_len(fp.field)
                fs = np.zeros(size, dtype=np.float32)
                first = True
                for a, ps in fp.present:
                    out.matched_terms.update(a.terms)
                    if len(ps) == 1:
                        p = ps[0]
                        if dense:  # (intp: an int32 index is converted on each use, twice below)
                            at, s = p.docs.astype(np.intp), tf_norm(p, lens, avg) * np.float32(fp.idf * a.factor)
                        else:
                            at, j = _locate(p.docs, cands, s2c)
                            if not len(at):
                                continue
                            s = tf_norm(p, lens, avg)[j] * np.float32(fp.idf * a.factor)
                        if first:  # fs is all zeros: plain scatter
                            fs[at] = s
                        else:
                            fs[at] = np.maximum(fs[at], s)
                        first = False
                    else:  # multi-word synonym: every word in this field, mean of their scores
                        acc = np.zeros(size, dtype=np.float32)
                        cnt = np.zeros(size, dtype=np.int8)
                        for p in ps:
                            if dense:
                                at, s = p.docs, tf_norm(p, lens, avg) * np.float32(fp.idf)
                            else:
                                at, j = _locate(p.docs, cands, s2c)
                                s = tf_norm(p, lens, avg)[j] * np.float32(fp.idf)
                            acc[at] += s
                            cnt[at] += 1
                        ok = cnt == len(ps)
                        np.maximum(fs, np.where(ok, acc / len(ps) * a.factor, 0).astype(np.float32), out=fs)
                        first = False
                if dense and m != idx.n:  # (m == n: every slot is a candidate, in order)
                    fs = np.take(fs, cands)  # (int32 slots: a third of the cost of fs[cands])
                hit = fs > 0
                if hit.any():
                    hits[fp.field] = hit
                    fs *= fp.weight
                    total += fs
                    np.maximum(best, fs, out=best)
            # best field counts fully, the other fields a little (a word found in the name and the
            # description is not worth twice a word found in the name)
            total = best + OTHER_FIELDS_FACTOR * (total - best)
            out.clause_scores.append(total)
            out.clause_field_hit.append(hits)
    finally:
        if not dense:
            s2c[cands] = -1
    return out


def proximity_bonus(idx: MemIndex, text: str, cands: np.ndarray, fields: Mapping[str, FieldWeight]) -> np.ndarray | None:
    """Per candidate in [0, 1 + COVERAGE_SHARE], the best of the queried fields (with a weight
    above 0): the share of adjacent query-word pairs found adjacent and in order in the field (its
    first POSITIONS words); in the heaviest fields (the product's name), plus COVERAGE_SHARE times
    the share of the field's words that are query words (Meilisearch's exactness, Typesense's
    verbatim match, as a degree: of two names holding the query as a phrase, the one with fewer
    other words - "Case for iPhone 6" over "Wrap Case for iPhone 6" - is the closer match; the
    lighter fields are left out: a third of the cost, no figure of ``benchmarks.relevance`` moves).

    How closely the words are found together does not depend on the field's weight (Algolia's
    proximity: the best attribute), the field scores do: a document holding "Wireless Chargers"
    as its category is as close a match of that query as one naming "Wireless Charger"."""
    chunks = CHUNK_RE.findall(text)[:MAX_ATOMS]
    if len(chunks) < 2 or not len(cands):
        return None
    best = np.zeros(len(cands), dtype=np.float32)
    npairs = len(chunks) - 1
    wmax = max(float(c.weight) for c in fields.values())
    for fname, fc in fields.items():
        pos = idx.pos.get(fname)
        if pos is None or fc.weight <= 0:
            continue
        an = idx.field_an.get(fname, idx.analyzer)
        qids = [idx.chunk_ids.get(an.chunk_main(c), -2) for c in chunks]  # -2: a word in no document
        pairs = [(a, b) for a, b in zip(qids, qids[1:], strict=False) if a >= 0 and b >= 0]
        if not pairs:
            continue
        # rows laid end to end: word b right after word a, not across two rows
        width = pos.shape[1]
        rows = np.take(pos, cands, axis=0)
        flat = rows.ravel()
        eqs = {q: flat == q for q in {q for pair in pairs for q in pair}}
        cnt = np.zeros(len(cands), dtype=np.float32)
        adj = np.zeros(len(flat), dtype=bool)
        for a, b in pairs:
            np.logical_and(eqs[a][:-1], eqs[b][1:], out=adj[:-1])
            adj[width - 1::width] = False
            cnt += _rows_any(adj, width)
        cnt *= np.float32(1.0 / npairs)
        if COVERAGE_SHARE and float(fc.weight) >= wmax:
            # the field's words that are query words, of its words (a row ends at its first -1)
            qset = {q for q in qids if q >= 0}
            for q in qset - eqs.keys():
                eqs[q] = flat == q
            inq = np.logical_or.reduce([eqs[q] for q in qset])
            own = _rows_count(inq, width).astype(np.float32)
            cnt += np.float32(COVERAGE_SHARE) * own / np.take(_row_words(idx, fname), cands)
        np.maximum(best, cnt, out=best)
    return best


def keyword_value_bonus(idx: MemIndex, text: str, cands: np.ndarray, fields: Mapping[str, FieldWeight]) -> np.ndarray | None:
    """Per candidate, the factor of documents holding a value of a queried keyword field that
    the query names (Algolia's attribute and exact criteria): "samsung" ranks Samsung's own
    products above cases "for Samsung Galaxy"; "iphone 7 case" the category "iPhone 7 Cases".
    ``1 + KEYWORD_VALUE_BONUS * share**2``, ``share``: of the query's words covered (the
    longest value of any field; squared: a value named by a few words of a long query is weak
    evidence); ``None`` when the query names no value."""
    if not len(cands):
        return None
    cover: np.ndarray | None = None
    n_words = 0
    for fname, fc in fields.items():
        spec = idx.fields.get(fname)
        if (fc.weight <= 0 or spec is None or spec.type not in ("keyword", "keyword[]") or fname not in idx.kw_ord
                or len(idx.kw_vals[fname]) > MAX_NAMED_VALUES):
            continue
        an = idx.field_an.get(fname, idx.analyzer)
        table, longest = _value_table(idx, fname, an)
        if not table:
            continue
        norms = [a.norm for a in an.query_atoms(text)[:MAX_ATOMS]]
        n_words = max(n_words, len(norms))
        fcover: np.ndarray | None = None
        for i in range(len(norms)):
            for j in range(min(len(norms), i + longest), i, -1):
                ords = table.get(tuple(norms[i:j]))
                if ords is None:
                    continue
                held = _holds(idx, fname, np.asarray(ords, dtype=np.int32), cands) * np.float32(j - i)
                fcover = held if fcover is None else np.maximum(fcover, held)
                break
        if fcover is not None:
            cover = fcover if cover is None else np.maximum(cover, fcover)
    if cover is None or not n_words:
        return None
    share = np.minimum(cover / np.float32(n_words), 1.0)
    return (1.0 + KEYWORD_VALUE_BONUS * share * share).astype(np.float32)


def _holds(idx: MemIndex, fname: str, ords: np.ndarray, cands: np.ndarray) -> np.ndarray:
    """Per candidate: holds one of the value ordinals ``ords`` of keyword field ``fname`` (work
    follows the candidates: a keyword's one value, or the candidates' runs of (slot, ordinal)
    pairs; a large share of the shard through a mask)."""
    if len(cands) * 8 > idx.n:  # the value's mask over the shard, kept until the shard changes
        key = ("held", fname, ords.tobytes())
        cache, mask = _cached(idx, key)
        if mask is None:
            mask = _kw_mask(idx, fname, ords)
            held = cache.get(("mask bytes",), 0)
            if held + idx.n <= MASK_CACHE_BYTES:  # (shares the posting masks' budget)
                cache[key] = mask
                cache[("mask bytes",)] = held + idx.n
        return np.take(cast(np.ndarray, mask), cands)
    if idx.fields[fname].type == "keyword":
        first = np.take(idx.kw_first[fname], cands)
        return first == ords[0] if len(ords) == 1 else np.isin(first, ords)
    ps, po = idx.kw_ps[fname], idx.kw_po[fname]
    lo = np.searchsorted(ps, cands, "left")
    cnt = np.searchsorted(ps, cands, "right") - lo
    out = np.zeros(len(cands), dtype=bool)
    total = int(cnt.sum())
    if total:
        at = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt) + np.arange(total)
        owner = np.repeat(np.arange(len(cands)), cnt)
        out[owner[np.isin(po[at], ords)]] = True
    return out


_VALUE_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
MAX_VALUE_WORDS = 6
#: a keyword field of more distinct values (SKUs, not brands or categories) is not read for names
MAX_NAMED_VALUES = 20_000  # (its table takes ~10 us a value to build, once per shard)


def _value_table(idx: MemIndex, fname: str, an: TextAnalyzer) -> tuple[dict[tuple[str, ...], list[int]], int]:
    """A keyword field's values as query atoms (normalised words) -> their ordinals, and the
    most words of a value; kept per shard and extended as values are added (ordinals only
    grow: a rebuilt value list starts the table over)."""
    per = _VALUE_TABLES.get(idx)
    if per is None:
        per = _VALUE_TABLES[idx] = {}
    vals = idx.kw_vals[fname]
    hit = per.get(fname)
    if hit is None or hit[0] is not vals or hit[1] > len(vals) or hit[4] is not an:
        hit = [vals, 0, {}, 0, an]
        per[fname] = hit
    if hit[1] < len(vals):
        table: dict[tuple[str, ...], list[int]] = hit[2]
        longest = hit[3]
        for o in range(hit[1], len(vals)):
            words = tuple(a.norm for a in an.query_atoms(vals[o][:200]))
            if 0 < len(words) <= MAX_VALUE_WORDS:
                table.setdefault(words, []).append(o)
                longest = max(longest, len(words))
        hit[1], hit[3] = len(vals), longest
    return hit[2], hit[3]


def _row_words(idx: MemIndex, fname: str) -> np.ndarray:
    """Per slot, the words of field ``fname`` in its proximity row (at least 1, as float32), kept
    until the shard changes."""
    key = ("row words", fname)
    cache, hit = _cached(idx, key)
    if hit is None:
        pos = idx.pos[fname]
        hit = cache[key] = np.maximum(_rows_count((pos >= 0).ravel(), pos.shape[1]), 1).astype(np.float32)
    return cast(np.ndarray, hit)


def _rows_count(flags: np.ndarray, width: int) -> np.ndarray:
    """Per row of ``width`` booleans laid end to end: how many are set (8 at a time when rows
    allow: a row's uint64 words added, then their bytes, a tenth of ``count_nonzero(axis=1)``)."""
    if width % 8 or width > 255:
        return np.count_nonzero(flags.reshape(-1, width), axis=1)
    w = flags.view(np.uint64).reshape(-1, width // 8)
    s = w[:, 0].copy()
    for j in range(1, width // 8):
        s += w[:, j]  # (each byte of the sum counts at most width / 8: no carry)
    return (s * np.uint64(0x0101010101010101)) >> np.uint64(56)  # type: ignore[no-any-return]


def _rows_any(flags: np.ndarray, width: int) -> np.ndarray:
    """Per row of ``width`` booleans laid end to end: any set (8 at a time when rows allow)."""
    if width % 8 == 0:
        return flags.view(np.uint64).reshape(-1, width // 8).any(axis=1)  # type: ignore[return-value]
    return flags.reshape(-1, width).any(axis=1)  # type: ignore[return-value]


# ----------------------------------------------------------------------------- filters
def _field_mask(idx: MemIndex, fname: str, cond: Any, id_field: str) -> np.ndarray:
    n = idx.n
    if fname in ("id", id_field) and fname not in idx.fields or fname == id_field:
        mask = np.zeros(n, dtype=bool)
        vals = cond if isinstance(cond, list) else [cond]
        slots = [idx.id_to_slot.get(str(v)) for v in vals]
        slots = [s for s in slots if s is not None]
        if slots:
            mask[np.asarray(slots, dtype=np.int64)] = True
        return mask
    spec = idx.fields.get(fname)
    if spec is None:
        raise EngineError(f"unknown filter field {fname!r}", "FIELD_UNKNOWN", [{"path": f"filters.{fname}", "message": "unknown field"}])
    if not (spec.filterable or spec.facetable):
        raise EngineError(f"field {fname!r} is not filterable", "FIELD_NOT_FILTERABLE",
                          [{"path": f"filters.{fname}", "message": "field is not filterable"}])
    if isinstance(cond, dict):
        ops = {k: v for k, v in cond.items() if k in ("gt", "gte", "lt", "lte")}
        bad = [k for k in cond if k not in ("gt", "gte", "lt", "lte")]
        if bad or not ops:
            raise EngineError("bad range filter", "FILTER_INVALID", [{"path": f"filters.{fname}", "message": "use gt/gte/lt/lte"}])
        if spec.is_numeric:
            col = idx.num[fname][:n]
            mask = ~np.isnan(col)
            for op, v in ops.items():
                x = to_number(v, spec.type)
                if math.isnan(x):
                    raise EngineError("bad range value", "FILTER_INVALID", [{"path": f"filters.{fname}.{op}", "message": "not a number/date"}])
                mask &= {"gt": col > x, "gte": col >= x, "lt": col < x, "lte": col <= x}[op]
            return mask
        if spec.type in ("keyword", "keyword[]", "text"):
            return _kw_mask(idx, fname, _kw_range_ords(idx, fname, ops))
        raise EngineError("range on boolean", "FILTER_INVALID", [{"path": f"filters.{fname}", "message": "range not supported"}])
    vals = cond if isinstance(cond, list) else [cond]
    if spec.is_numeric:
        col = idx.num[fname][:n]
        xs = [to_number(v, spec.type) for v in vals]
        xs = [x for x in xs if not math.isnan(x)]
        return np.isin(col, np.asarray(xs, dtype=np.float64)) if xs else np.zeros(n, dtype=bool)
    if spec.type == "boolean":
        col = idx.boo[fname][:n]
        bs = [to_bool(v) for v in vals]
        return np.isin(col, np.asarray([b for b in bs if b >= 0], dtype=np.int8))
    ords = idx.kw_ord[fname]
    wanted = [ords[s] for v in vals for s in keyword_values(v) if s in ords]
    return _kw_mask(idx, fname, np.asarray(wanted, dtype=np.int32))


def _kw_range_ords(idx: MemIndex, fname: str, ops: dict[str, Any]) -> np.ndarray:
    """Ordinals of the keyword values inside a range (code-point order): two binary searches in
    the sorted dictionary, whatever its size."""
    ordered, ords = idx.kw_sorted(fname)
    lo, hi = 0, len(ordered)
    for op, v in ops.items():
        s = str(v)
        if op == "gt":
            lo = max(lo, bisect.bisect_right(ordered, s))
        elif op == "gte":
            lo = max(lo, bisect.bisect_left(ordered, s))
        elif op == "lt":
            hi = min(hi, bisect.bisect_left(ordered, s))
        else:
            hi = min(hi, bisect.bisect_right(ordered, s))
    return ords[lo:hi] if lo < hi else ords[:0]


def _kw_mask(idx: MemIndex, fname: str, ords: np.ndarray) -> np.ndarray:
    mask = np.zeros(idx.n, dtype=bool)
    if len(ords):
        po = idx.kw_po[fname]
        if len(ords) == 1:
            sel = po == ords[0]
        else:  # a lookup table over the dictionary: linear in the postings, whatever the ordinals
            wanted = np.zeros(len(idx.kw_vals[fname]), dtype=bool)
            wanted[ords] = True
            sel = wanted[po]
        mask[idx.kw_ps[fname][sel]] = True
    return mask


def compile_filters(idx: MemIndex, flt: dict | None, id_field: str,
                    deadline: Deadline = NO_DEADLINE) -> list[tuple[str | None, np.ndarray]]:
    """Top-level clauses as (field or None, mask); AND them all for the result set."""
    out: list[tuple[str | None, np.ndarray]] = []
    if not flt:
        return out
    if not isinstance(flt, dict):
        raise EngineError("filters must be an object", "FILTER_INVALID", [{"path": "filters", "message": "must be an object"}])
    n = idx.n
    for key, cond in flt.items():
        deadline.check()
        if key == "not":
            sub = compile_filters(idx, cond, id_field, deadline)
            m = np.ones(n, dtype=bool)
            for _, sm in sub:
                m &= sm
            out.append((None, ~m))
        elif key in ("and", "or") and isinstance(cond, list):
            acc = np.ones(n, dtype=bool) if key == "and" else np.zeros(n, dtype=bool)
            for sub_f in cond:
                m = np.ones(n, dtype=bool)
                for _, sm in compile_filters(idx, sub_f, id_field, deadline):
                    m &= sm
                acc = (acc & m) if key == "and" else (acc | m)
            out.append((None, acc))
        else:
            out.append((key, _field_mask(idx, key, cond, id_field)))
    return out


def and_masks(n: int, masks: Sequence[np.ndarray | None]) -> np.ndarray:
    """AND of boolean arrays of length ``n`` (``None`` entries skipped; none at all: all true)."""
    m = np.ones(n, dtype=bool)
    for x in masks:
        if x is not None:
            m &= x
    return m


# ----------------------------------------------------------------------------- highlight
def highlight_text(idx: MemIndex, value: Any, terms: set[str], fname: str | None = None,
                   seen: dict[str, bool] | None = None) -> str:
    """``value`` with the chunks holding any of ``terms`` in ``<em>``, analysed as field ``fname``.

    ``seen``: chunk -> highlighted, shared by the hits of one query and field (product names
    repeat their words: most chunks are then one dict lookup)."""
    text = text_of(value) if not isinstance(value, list) else ", ".join(text_of(v) for v in value)
    text = text[:HIGHLIGHT_MAX_CHARS]  # a 9 MB description took 3.7 s to highlight
    an = idx.field_an.get(fname, idx.analyzer) if fname is not None else idx.analyzer
    if seen is None:
        seen = {}
    out: list[str] = []
    pos = 0
    end = 0
    for chunk in CHUNK_RE.findall(text):  # (half the time of finditer's match objects)
        # what lies between two chunks can't start one: the next occurrence is the chunk
        start = text.find(chunk, end)
        end = start + len(chunk)
        hit = seen.get(chunk)
        if hit is None:
            hit = seen[chunk] = not terms.isdisjoint(an.chunk_terms(chunk))
        if hit:
            out.append(text[pos:start])
            out.append("<em>")
            out.append(chunk)
            out.append("</em>")
            pos = end
    if not out:
        return html.escape(text, quote=False)
    out.append(text[pos:])
    if "&" in text or "<" in text or ">" in text:  # (escaping is per character, so per piece)
        out = [x if i % 4 in (1, 3) else html.escape(x, quote=False) for i, x in enumerate(out)]
    return "".join(out)

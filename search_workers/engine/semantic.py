"""The vector stage of a shard's search (``Query.semantic``): the documents nearest the query's vector
join the keyword matches, and the score blends both (``shared.contract.Semantic``).

**Why a blend of normalized scores, not reciprocal rank fusion.** A shard sees only its own
documents, and the coordinator merges shard answers by score. Rank fusion needs each document's
rank in the whole index (a shard's 3rd is not the index's 3rd), so it would need a second round
trip; so would normalizing by the best keyword score of the index. The score here is
``(1 - ratio) * k + ratio * max(cosine, 0) * clip(1 - k, 0, 1)`` with ``k = s / ideal``:
``ideal`` (:func:`ideal_score`) is what a document matching every query word in the heaviest field
scores, from the query's words and the idf of each (near-identical on every shard, see
``search.py``), so every shard computes the final score and the merge stays exact.

``k`` is linear, so the keyword ranking keeps its margins; the vector side counts less the better
the words match, and not at all for a document matching them as well as ``ideal``: among strong
keyword matches (a known item and its look-alikes in other colours) the keyword order stands,
while a query whose words match poorly or not at all (a paraphrase, a relaxed query) is ranked by
meaning. Measured on the relevance benchmark at ``ratio`` 0.3: the known-item rates are those of
the keyword search exactly (a plain blend lost 6 of 3,291 to near-identical products).

**Finding the nearest** is ``vectors.py``'s: every row compared below 20k vectors per shard, an
inverted file (faiss) above, exact again for filters that leave few documents.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import numpy as np

from shared.contract import FieldWeight, Semantic

from .candidates import FieldPlan, idf
from .embedding import embed_query
from .errors import EngineError
from .mapping import FieldSpec
from .memindex import MemIndex
from .vectors import VectorColumn


def query_vector(spec: FieldSpec, sem: Semantic) -> np.ndarray | None:
    """The query's unit vector; None when there is none (no vector sent for a shop-supplied field,
    or a text without words): the search is then the keyword search alone."""
    if sem.vector is not None:
        if len(sem.vector) != spec.dimensions:
            raise EngineError(f"{spec.name} holds vectors of {spec.dimensions} numbers", "VECTOR_INVALID",
                              [{"path": "vector", "message": f"expected {spec.dimensions} numbers, got {len(sem.vector)}"}])
        v = np.asarray(sem.vector, dtype=np.float32)
    elif sem.text and spec.embed_from:
        v = embed_query(spec.model, sem.text)
    else:
        return None
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 and np.isfinite(norm) else None


def vector_field(fields: dict[str, FieldSpec], name: str) -> FieldSpec:
    spec = fields.get(name)
    if spec is None or spec.type != "vector":
        raise EngineError(f"field {name!r} is not a vector field", "FIELD_NOT_VECTOR",
                          [{"path": "semantic.field", "message": "not a vector field"}])
    return spec


def nearest(mem: MemIndex, spec: FieldSpec, qv: np.ndarray, base: np.ndarray | None, depth: int) -> np.ndarray:
    """The ``depth`` live slots with a vector nearest ``qv``, and the ``depth`` nearest within
    ``base`` (the filters), in slot order. Those outside ``base`` are no hits: they let a facet
    count the values its own filter leaves out, as it does for keyword matches."""
    column = mem.vectors[spec.name]
    live = mem.live[: mem.n]
    # the nearest overall are kept in the shard's query cache until its next change: a popular
    # query, and the same query again with a facet value picked, search the lists once (keyed by a
    # digest: a shop's query vectors of 2,048 numbers would make 8 KB keys)
    key = ("nearest", spec.name, hashlib.blake2b(qv.tobytes(), digest_size=16).digest(), depth)
    cache, held = mem.cached(key)
    if isinstance(held, np.ndarray):
        near = held
    else:
        near = column.nearest(qv, live, None, depth)
        near.flags.writeable = False
        cache[key] = near
    if base is not None:
        near = merged(near, column.nearest(qv, live, base, depth))
    return near


def merged(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The union of two sorted arrays of distinct slots, sorted."""
    return union_at(a, b)[0]


def union_at(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of two sorted arrays of distinct slots, sorted, and where each of ``a`` and of
    ``b`` sits in it. Linear in ``a`` (a broad query's candidates, tens of thousands) and
    ``len(b) log len(a)`` for the few nearest: ``np.union1d`` and a ``searchsorted`` of the
    candidates in the union each sort or search every candidate (0.8 ms for a broad query); for
    a few hundred candidates they are the fewer numpy calls."""
    if len(a) <= GATHER_ALL:
        union = np.union1d(a, b).astype(a.dtype, copy=False)
        return union, np.searchsorted(union, a), np.searchsorted(union, b)
    ins = np.searchsorted(a, b)
    dup = (ins < len(a)) & (a[np.minimum(ins, len(a) - 1)] == b) if len(a) else np.zeros(len(b), bool)
    new, ins_new = b[~dup], ins[~dup]
    union = np.insert(a, ins_new, new.astype(a.dtype, copy=False)) if len(new) else a
    at_a = np.arange(len(a)) + np.cumsum(np.bincount(ins_new, minlength=len(a) + 1))[: len(a)]
    at_b = np.empty(len(b), np.intp)
    at_b[dup] = at_a[ins[dup]]
    at_b[~dup] = ins_new + np.arange(len(new))
    return union, at_a, at_b


def ideal_score(mem: MemIndex, plans: list[list[FieldPlan]], fields: Mapping[str, FieldWeight]) -> float:
    """The keyword score that counts as 1: per query word, its best field's weight x idf (a word
    found nowhere: the heaviest field and the idf of a word in one document)."""
    heaviest = max((f.weight for f in fields.values()), default=1.0)
    unseen = heaviest * idf(max(mem.n_live, 1), 1)
    total = sum(max((fp.weight * fp.idf for fp in fps), default=unseen) for fps in plans)
    return max(total, 1e-6)


#: past this many weak keyword matches, only the nearest and the COSINES_ALL best of them get a
#: cosine: a broad query's other matches (thousands) rank by their words, and the whole column is
#: not read for them
COSINES_ALL = 2000
#: up to this many keyword matches and nearest, every one gets a cosine
GATHER_ALL = 512


def blended(cands: np.ndarray, score: np.ndarray, match: np.ndarray, near: np.ndarray, column: VectorColumn,
            qv: np.ndarray, ratio: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of the keyword candidates (``cands``, their normalized ``score`` and ``match``)
    and the nearest slots ``near``: (slots, blended score, match), aligned and in slot order."""
    union, at_cands, at_near = union_at(cands, near)
    keyword = np.zeros(len(union), dtype=np.float32)
    matched = np.zeros(len(union), dtype=bool)
    keyword[at_cands] = np.where(match, score, 0)
    matched[at_cands] = match
    matched[at_near] = True
    # a cosine counts only where the words match less well than ideal: a gather of those rows (of
    # all when they are few: picking them out costs more than it saves), and for a broad query of
    # the nearest and the COSINES_ALL best of them (not the whole column)
    if len(union) <= GATHER_ALL:
        cosine = column.cosines(union, qv)
    else:
        some = keyword < 1
        if np.count_nonzero(some) > COSINES_ALL:
            weak = np.flatnonzero(some)
            some = np.zeros(len(union), dtype=bool)
            some[weak[np.argpartition(-keyword[weak], COSINES_ALL - 1)[:COSINES_ALL]]] = True
        some[at_near] = True
        at_some = np.flatnonzero(some)
        cosine = np.zeros(len(union), dtype=np.float32)
        cosine[at_some] = column.cosines(union[at_some], qv)
    blend = (1 - ratio) * keyword + ratio * cosine * np.clip(1 - keyword, 0, 1)
    return union, blend.astype(np.float32), matched

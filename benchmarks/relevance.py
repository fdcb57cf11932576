"""Relevance measurement on the Best Buy catalog (run: ``python -m benchmarks.relevance``).

* exact: brand + the model words of a product name ("Samsung Galaxy S7 32GB"); success when the
  first hit is the product - or a product the query cannot tell apart from it (same brand +
  model words, e.g. the same phone in another colour).
* typo: the same query with one typo (substitution, deletion, insertion or transposition of
  neighbours, random kind and position) in one word of 5+ letters; success = in the top 10.
* prefix: the last word cut to 3-5 letters; success = in the top 10.
* nonempty: 2-4 words taken from one product's name + description must never answer empty.
"""

from __future__ import annotations

import json
import random
import re
import sys
import tempfile
import time

from benchmarks.common import FIELDS, MAPPING, PRODUCTS, QUERIES  # noqa: E402,F401 - re-exported
from search_workers.engine import ShardEngine
from search_workers.engine.analysis import fold
from shared.contract import Change, FieldWeight, Query

# FIELDS as the engine takes them
ENGINE_FIELDS = {name: FieldWeight(weight=float(c["weight"])) for name, c in FIELDS.items()}

_WORD = re.compile(r"[^\W_]+(?:[-.'&+/][^\W_]+)*")
_COLORS = None


def load_products() -> list[dict]:
    return json.loads(PRODUCTS.read_text())


def model_query(p: dict) -> str | None:
    """brand + model words: the name without its brand and colour segments."""
    name, brand = p["name"], p.get("brand") or ""
    segs = [s.strip() for s in name.split(" - ")]
    if segs and segs[0].lower() == brand.lower():
        segs = segs[1:]
    if len(segs) >= 2:
        segs = segs[:-1]  # trailing " - Black" / " - Silver" / variant
    model = " ".join(segs)
    model = re.sub(r"[®™]", "", model)
    words = _WORD.findall(model)
    if not words:
        return None
    bwords = _WORD.findall(brand)
    words = [w for w in words if w.lower() not in {b.lower() for b in bwords}]
    q = " ".join(bwords + words)
    return q or None


def key_of(q: str) -> str:
    return " ".join(sorted(fold(w.lower()) for w in _WORD.findall(q)))


def make_typo(word: str, rng: random.Random) -> tuple[str, str]:
    kind = rng.choice(["substitution", "deletion", "insertion", "transposition"])
    i = rng.randrange(1, len(word) - 1)  # keep first and last letters, like most real typos
    letters = "abcdefghijklmnopqrstuvwxyz"
    if kind == "substitution":
        c = rng.choice([x for x in letters if x != word[i].lower()])
        return word[:i] + c + word[i + 1:], kind
    if kind == "deletion":
        return word[:i] + word[i + 1:], kind
    if kind == "insertion":
        return word[:i] + rng.choice(letters) + word[i:], kind
    if word[i] == word[i + 1]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:] if i + 2 <= len(word) else word, kind
    return word[:i] + word[i + 1] + word[i] + word[i + 2:], kind


def build_engine(products: list[dict], path: str) -> ShardEngine:
    e = ShardEngine(path, MAPPING)
    for i in range(0, len(products), 1000):
        e.apply([Change(j + 1, "upsert", str(j), products[j]) for j in range(i, min(i + 1000, len(products)))])
    return e


def measure(engine, products: list[dict], sample: int | None = None, seed: int = 7, verbose: bool = False) -> dict:
    rng = random.Random(seed)
    idx = list(range(len(products)))
    if sample and sample < len(idx):
        idx = rng.sample(idx, sample)
    keys = {}
    queries = {}
    for i, p in enumerate(products):
        q = model_query(p)
        if q:
            queries[i] = q
            keys[i] = key_of(q)

    def equivalent(hit_id: str, target: int) -> bool:
        j = int(hit_id)
        return j == target or keys.get(j) == keys[target]

    res = {"exact": [0, 0], "typo": [0, 0], "prefix": [0, 0], "nonempty": [0, 0]}
    fails: dict[str, list] = {k: [] for k in res}
    lat = []
    for i in idx:
        if i not in queries:
            continue
        q = queries[i]
        t = time.perf_counter()
        r = engine.search(Query(q=q, fields=ENGINE_FIELDS, limit=10))
        lat.append(time.perf_counter() - t)
        ok = bool(r.hits) and equivalent(r.hits[0].id, i)
        res["exact"][0] += ok
        res["exact"][1] += 1
        if not ok:
            fails["exact"].append((q, [h.document["name"] for h in r.hits[:2]], products[i]["name"]))
        words = q.split()
        cand = [k for k, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
        if cand:
            k = rng.choice(cand)
            tw, kind = make_typo(words[k], rng)
            tq = " ".join(words[:k] + [tw] + words[k + 1:])
            r = engine.search(Query(q=tq, fields=ENGINE_FIELDS, limit=10))
            ok = any(equivalent(h.id, i) for h in r.hits[:10])
            res["typo"][0] += ok
            res["typo"][1] += 1
            if not ok:
                fails["typo"].append((tq, kind, products[i]["name"]))
        if len(words) >= 2 and len(words[-1]) >= 5 and words[-1].isalpha():
            cut = rng.randint(3, min(5, len(words[-1]) - 1))
            pq = " ".join(words[:-1] + [words[-1][:cut]])
            r = engine.search(Query(q=pq, fields=ENGINE_FIELDS, limit=10))
            ok = any(equivalent(h.id, i) for h in r.hits[:10])
            res["prefix"][0] += ok
            res["prefix"][1] += 1
            if not ok:
                fails["prefix"].append((pq, products[i]["name"]))
        ws = _WORD.findall(products[i]["name"] + " " + products[i].get("description", ""))
        if len(ws) >= 4:
            nq = " ".join(rng.sample(ws, rng.randint(2, 4)))
            r = engine.search(Query(q=nq + " ", fields=ENGINE_FIELDS, limit=1))
            ok = r.total > 0 and not r.relaxed
            res["nonempty"][0] += ok
            res["nonempty"][1] += 1
            if not ok:
                fails["nonempty"].append(nq)
    out = {k: (v[0] / v[1] if v[1] else 1.0, v[0], v[1]) for k, v in res.items()}
    lat.sort()
    out["latency_ms_p50"] = lat[len(lat) // 2] * 1000 if lat else 0
    if verbose:
        for k, fl in fails.items():
            print(f"-- {k} failures ({len(fl)}):")
            for f in fl[:15]:
                print("   ", f)
    return out


def real_queries_empty(engine) -> tuple[int, int, list[str]]:
    empty = []
    n = 0
    for line in QUERIES.read_text().splitlines():
        q = json.loads(line)["query"]
        n += 1
        r = engine.search(Query(q=q, fields=ENGINE_FIELDS, limit=1))
        if r.total == 0:
            empty.append(q)
    return len(empty), n, empty


def report(verbose: bool = False, indent: str = "") -> None:
    """Build a shard of the catalog and print the four relevance rates and the empty real queries."""
    products = load_products()
    with tempfile.TemporaryDirectory() as d:
        t = time.time()
        e = build_engine(products, d)
        print(f"{indent}built {e.doc_count} docs in {time.time() - t:.1f}s")
        m = measure(e, products, verbose=verbose)
        for k in ("exact", "typo", "prefix", "nonempty"):
            rate, ok, tot = m[k]
            print(f"{indent}{k:9s} {rate * 100:6.2f}%  ({ok}/{tot})")
        ne, n, empty = real_queries_empty(e)
        print(f"{indent}real shopper queries answering empty: {ne}/{n}  e.g. {empty[:10]}")
        e.close()


def main() -> None:
    report(verbose="-v" in sys.argv)

if __name__ == "__main__":
    main()

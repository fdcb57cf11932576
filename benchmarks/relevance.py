"""Relevance measurement on the Best Buy catalog (run: ``python -m benchmarks.relevance``;
``--semantic 0.3``: the same queries as hybrid searches over a built-in vector of name, categories
and description, the profile setting ``semantic: {ratio: 0.3}``).

* exact: brand + the model words of a product name ("Samsung Galaxy S7 32GB"); success when the
  first hit is the product - or a product the query cannot tell apart from it (same brand +
  model words, e.g. the same phone in another colour).
* typo: the same query with one typo (substitution, deletion, insertion or transposition of
  neighbours, random kind and position) in one word of 5+ letters; success = in the top 10.
* prefix: the last word cut to 3-5 letters; success = in the top 10.
* nonempty: 2-4 words taken from one product's name + description must never answer empty.

Relevance defaults (issue #12 item 3), each a class of queries built from the catalog:

* brand: a brand's name alone (brands of 5+ products); success = share of the top 10 (or of
  the top n for a brand of n < 10 products) whose brand is the queried one (any case), averaged
  over brands; brand_storefront: the same with the storefront profile's fields (no categories).
* category: a category's name alone (categories of 5 to 500 products); share of the top 10 (top
  n) in that category.
* typo discipline: a word alone as typed (every word of 5+ letters found in 20+ products, then
  a space: no prefix); success = the total is at most the number of products holding the word
  (as the analyzer reads it) plus 10 %: typo variants must not fill the total when exact
  matches are plenty.
* model codes: "brand family code" with a code (letters + digits: "S7", "J1", "G930") that is in
  no product name (the code's digits changed); success = no strict match (the answer is
  relaxed or empty: no "8" of "8GB" standing for "S8"). And "brand code" with a real code;
  success = every top-10 hit names the code (also spelled apart: "S 5").
* word dropping: two words of a product's name + "under <number>" where all words together find
  nothing; success = neither name word is dropped and the top hit holds both.
* glued words: the exact query with two neighbouring words (3+ letters each, no stop word) typed
  as one ("Apple AppleWatch" -> "applewatch"), where the glued word is in fewer than 8 products
  as typed; success = the product (or one the query cannot tell apart) in the top 10.
"""

from __future__ import annotations

import json
import random
import re
import sys
import tempfile
import time
from collections import Counter

from benchmarks.common import FIELDS, MAPPING, PRODUCTS, QUERIES, STOREFRONT_PROFILE  # noqa: E402,F401 - re-exported
from search_workers.engine import ShardEngine
from search_workers.engine.analysis import fold
from shared.contract import Change, FieldWeight, Semantic
from shared.contract import Query as _Query

# FIELDS as the engine takes them
ENGINE_FIELDS = {name: FieldWeight(weight=float(c["weight"])) for name, c in FIELDS.items()}
# the storefront profile's (name x10, brand x5, description x1 without typos or prefixes)
STOREFRONT_FIELDS = {name: FieldWeight(weight=float(c["weight"]), typo=c.get("typo", True), prefix=c.get("prefix", True))
                     for name, c in STOREFRONT_PROFILE["queryFields"].items()}

_WORD = re.compile(r"[^\W_]+(?:[-.'&+/][^\W_]+)*")
_COLORS = None


#: ``--semantic RATIO``: every query is a hybrid search at that ratio
SEMANTIC_RATIO: float | None = None
SEMANTIC_MAPPING = {**MAPPING, "fields": {**MAPPING["fields"], "meaning": {
    "type": "vector", "embed": {"from": ["name", "categories", "description"]}}}}


def Query(q: str = "", **kw) -> _Query:  # noqa: N802 - stands in for the contract's Query
    """The query as measured: with ``--semantic``, hybrid over the built-in vector."""
    if SEMANTIC_RATIO is not None and q.strip():
        kw["semantic"] = Semantic("meaning", SEMANTIC_RATIO, text=q)
    return _Query(q=q, **kw)


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
    e = ShardEngine(path, MAPPING if SEMANTIC_RATIO is None else SEMANTIC_MAPPING)
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


def _top_share(engine, q: str, ok, k: int, fields=None) -> float:
    """Share of the top ``k`` hits of ``q`` that are ``ok``."""
    r = engine.search(Query(q=q + " ", fields=fields or ENGINE_FIELDS, limit=k))
    return sum(1 for h in r.hits if ok(h.document)) / k


def measure_defaults(engine, products: list[dict], verbose: bool = False) -> dict[str, tuple[float, int, int]]:
    """The relevance-default classes (see the module docstring): (rate, successes, queries)."""
    from whoosh.lang import stopwords_for_language

    from search_workers.engine.analysis import CHUNK_RE, get_analyzer

    an = get_analyzer("en")
    stops = set(stopwords_for_language("en"))
    rng = random.Random(11)
    fails: dict[str, list] = {k: [] for k in ("brand", "category", "typo_discipline", "codes_absent",
                                              "codes_present", "word_dropping", "glued_words")}
    out: dict[str, tuple[float, int, int]] = {}
    # brand-only and category-only queries
    brands = Counter(p["brand"] for p in products if p.get("brand"))
    for label, fields in (("brand", None), ("brand_storefront", STOREFRONT_FIELDS)):
        shares = []
        for b, n in sorted(brands.items()):
            if n >= 5:
                sh = _top_share(engine, b, lambda d, b=b: (d.get("brand") or "").lower() == b.lower(), min(n, 10), fields)
                shares.append(sh)
                if sh < 1:
                    fails["brand"].append((label, b, sh))
        out[label] = (sum(shares) / len(shares), round(sum(shares)), len(shares))
    cats = Counter(c for p in products for c in p.get("categories", []))
    shares = []
    for c, n in sorted(cats.items()):
        if 5 <= n <= 500:
            sh = _top_share(engine, c, lambda d, c=c: c in d.get("categories", []), min(n, 10))
            shares.append(sh)
            if sh < 1:
                fails["category"].append((c, sh))
    out["category"] = (sum(shares) / len(shares), round(sum(shares)), len(shares))
    # typo discipline: a word alone, total vs the products holding it
    holders: dict[str, set[int]] = {}
    words_of: dict[str, str] = {}
    for i, p in enumerate(products):
        text = " ".join([p["name"], p.get("brand") or "", " ".join(p.get("categories", [])), p.get("description", "")])
        for chunk in CHUNK_RE.findall(text):
            for t in an.chunk_terms(chunk):
                holders.setdefault(t, set()).add(i)
            low = chunk.lower()
            if low.isalpha() and len(low) >= 5:
                words_of.setdefault(an.normalize(low), low)
    ok = n_q = 0
    for term, word in sorted(words_of.items()):
        n = len(holders.get(term, ()))
        if n < 20:
            continue
        r = engine.search(Query(q=word + " ", fields=ENGINE_FIELDS, limit=0))
        n_q += 1
        if r.total <= n * 1.1:
            ok += 1
        else:
            fails["typo_discipline"].append((word, n, r.total))
    out["typo_discipline"] = (ok / n_q if n_q else 1.0, ok, n_q)
    # model codes
    code_re = re.compile(r"\b([A-Za-z]{1,2})(\d{1,4})\b")
    names_lower = " ".join(p["name"].lower() for p in products)
    present: dict[str, tuple[str, str]] = {}
    absent: dict[str, str] = {}
    for p in products:
        brand = p.get("brand") or ""
        for m in code_re.finditer(p["name"]):
            code = m.group(0)
            if code.lower() == brand.lower() or not brand:
                continue
            words_before = p["name"][: m.start()].split()
            family = words_before[-1] if words_before and words_before[-1].isalpha() else ""
            present.setdefault(code.lower(), (brand, code))
            for d in range(10):
                fake = m.group(1) + str((int(m.group(2)) + d + 1) % 10) + m.group(2)[1:]
                if not re.search(r"\b" + re.escape(fake.lower()) + r"\b", names_lower) and fake.lower() not in absent:
                    absent[fake.lower()] = f"{brand} {family} {fake}".replace("  ", " ")
                    break
    ok = 0
    for _fake, q in sorted(absent.items()):
        r = engine.search(Query(q=q + " ", fields=ENGINE_FIELDS, limit=3))
        if r.relaxed or r.total == 0:
            ok += 1
        else:
            fails["codes_absent"].append((q, [h.document["name"][:60] for h in r.hits[:2]]))
    out["codes_absent"] = (ok / len(absent) if absent else 1.0, ok, len(absent))
    ok = 0
    for _code, (brand, shown) in sorted(present.items()):
        letters, digits = code_re.match(shown).groups()  # type: ignore[union-attr]
        spelled = re.compile(r"\b" + re.escape(letters) + r"[ -]?" + digits + r"\b", re.I)
        r = engine.search(Query(q=f"{brand} {shown} ", fields=ENGINE_FIELDS, limit=10))
        good = bool(r.hits) and not r.relaxed and all(spelled.search(h.document["name"] + " " + h.document.get("description", ""))
                                                      for h in r.hits)
        ok += good
        if not good:
            fails["codes_present"].append((f"{brand} {shown}", [h.document["name"][:60] for h in r.hits[:2]]))
    out["codes_present"] = (ok / len(present) if present else 1.0, ok, len(present))
    # word dropping: two name words + "under <number>"
    ok = n_q = 0
    for i in rng.sample(range(len(products)), 300):
        ws = [w for w in _WORD.findall(products[i]["name"]) if w.isalpha() and len(w) >= 4 and w.lower() not in stops]
        if len(ws) < 2:
            continue
        pair = rng.sample(ws, 2)
        q = f"{pair[0]} {pair[1]} under {rng.choice([20, 50, 100, 200, 300, 500])}"
        r = engine.search(Query(q=q + " ", fields=ENGINE_FIELDS, limit=1))
        if not r.relaxed:
            continue  # all words together found something: not this class
        n_q += 1
        kept = not ({pair[0].lower(), pair[1].lower()} & {w.lower() for w in r.dropped_words})
        top = r.hits[0].document["name"].lower() if r.hits else ""
        good = kept and all(w.lower() in top for w in pair)
        ok += good
        if not good:
            fails["word_dropping"].append((q, r.dropped_words, top[:60]))
    out["word_dropping"] = (ok / n_q if n_q else 1.0, ok, n_q)
    out["glued_words"] = _glued_words(engine, products, stops, an, holders, fails)
    if verbose:
        for k, fl in fails.items():
            print(f"-- {k} failures ({len(fl)}):")
            for f in fl[:12]:
                print("   ", f)
    return out


def _glued_words(engine, products: list[dict], stops: set[str], an, holders: dict[str, set[int]],
                 fails: dict[str, list]) -> tuple[float, int, int]:
    """The glued-words class (see the module docstring): (rate, successes, queries)."""
    rng = random.Random(13)
    keys: dict[int, str] = {}
    queries: dict[int, str] = {}
    for i, p in enumerate(products):
        q = model_query(p)
        if q:
            queries[i], keys[i] = q, key_of(q)
    ok = n_q = 0
    for i in rng.sample(sorted(queries), 400):
        words = queries[i].split()
        pairs = [k for k in range(len(words) - 1)
                 if all(w.isalpha() and len(w) >= 3 and w.lower() not in stops for w in words[k:k + 2])]
        if not pairs:
            continue
        k = rng.choice(pairs)
        glued = words[k] + words[k + 1]
        if len(holders.get(an.normalize(glued.lower()), ())) >= 8:
            continue  # a word of its own ("smartwatch"): not this class
        q = " ".join(words[:k] + [glued] + words[k + 2:])
        r = engine.search(Query(q=q + " ", fields=ENGINE_FIELDS, limit=10))
        n_q += 1
        good = any(int(h.id) == i or keys.get(int(h.id)) == keys[i] for h in r.hits)
        ok += good
        if not good:
            fails["glued_words"].append((q, [h.document["name"][:60] for h in r.hits[:2]], products[i]["name"][:60]))
    return (ok / n_q if n_q else 1.0, ok, n_q)


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
        for k, (rate, ok, tot) in measure_defaults(e, products, verbose=verbose).items():
            print(f"{indent}{k:16s} {rate * 100:6.2f}%  ({ok}/{tot})")
        ne, n, empty = real_queries_empty(e)
        print(f"{indent}real shopper queries answering empty: {ne}/{n}  e.g. {empty[:10]}")
        e.close()


def main() -> None:
    global SEMANTIC_RATIO
    if "--semantic" in sys.argv:
        SEMANTIC_RATIO = float(sys.argv[sys.argv.index("--semantic") + 1])
    report(verbose="-v" in sys.argv)

if __name__ == "__main__":
    main()

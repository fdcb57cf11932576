"""What synonyms and ranking rules cost a search (issue #12: at most 1.2x p50 and p99).

    python -m benchmarks.merch_bench [--docs 100000] [--shards 2] [--seconds 8] [--rounds 3]
                                     [--synonyms 1000] [--rules 200] [--set merchant|dense] [--workers N]

1. Starts ``shopsearch serve``, loads the Best Buy catalog expanded to ``--docs`` products and saves
   the storefront profile (``common.STOREFRONT_PROFILE``), as ``search_bench`` does.
2. Builds ``--synonyms`` synonyms and ``--rules`` rules, one of two sets (``--set``):

   - ``merchant`` (default): what a shop writes. Synonyms between spellings of the same thing
     (two-word names glued and hyphenated, brand names without punctuation, shoppers'
     misspellings); rules on its most popular queries as typed ("is": pins, boosts, banners,
     redirects), on brand names ("contains": boost the brand) and on first words ("startsWith":
     added filters), some with validity windows.
   - ``dense``: a stress set. Multiway groups of random common query words (so "case" may reach
     "tv"), and rules on single popular words with every anchoring: nearly every query is
     rewritten, and each synonym makes a word search two or three unrelated common words.
3. Alternates rounds without and with them (deleting and importing the synonyms, disabling and
   enabling the rules) on uncached shopper-like word combinations at 4 clients, each round its own
   queries, and prints p50/p99 per round and the ratio of the medians.
4. In-process: the cost of matching one query against the compiled synonyms and rules (µs).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import time
from collections import Counter
from typing import Any

from shopsearch_client import Client

from benchmarks.common import (
    STOREFRONT_PROFILE,
    api,
    expand,
    make_tenant,
    running_server,
    storefront_index,
    weighted_queries,
)
from benchmarks.search_bench import ORIGIN, load, measured, report, word_combinations
from control_plane.rule.matching import RuleSet, compile_rule
from control_plane.synonym.matching import SynonymSet
from control_plane.synonym.solr import render
from shared.text import match_key

_WORD = re.compile(r"[a-z][a-z0-9'-]+")
STOP = {"with", "from", "your", "this", "that", "black", "white", "silver", "blue", "pink", "gold", "gray", "grey",
        "green", "purple", "orange", "yellow", "brown", "red"}


def merchant_synonyms(n: int, docs: list[dict[str, Any]], seed: int = 7) -> list[dict[str, Any]]:
    """What a shop writes: equivalent spellings, not related words. Two-word names of the catalog
    glued and hyphenated ("screen protector, screenprotector, screen-protector"), brand names spelled
    without their punctuation ("case-mate, casemate"), and misspellings its shoppers type, oneway
    ("samsng => samsung"); the most frequent first."""
    rng = random.Random(seed)
    catalog = docs[:3291]
    names = [_WORD.findall(d["name"].lower()) for d in catalog]
    bigrams = Counter((a, b) for ws in names for a, b in zip(ws, ws[1:], strict=False)
                      if a.isalpha() and b.isalpha() and len(a) > 2 and len(b) > 2 and STOP.isdisjoint((a, b)))
    df = Counter(w for ws in names for w in set(ws) if len(w) > 4 and w.isalpha())
    brands = sorted({b.lower() for d in catalog if (b := d.get("brand")) and re.search(r"[-'& .]", b)})
    out: list[dict[str, Any]] = []
    for brand in brands[: n // 10]:
        out.append({"type": "multiway", "terms": [brand, re.sub(r"[-'& .]", "", brand)]})
    for (a, b), _ in bigrams.most_common(n * 2 // 5):
        out.append({"type": "multiway", "terms": [f"{a} {b}", f"{a}{b}", f"{a}-{b}"]})
    for entry in out:  # spellings the analyzer already reads alike ("j5 create", "j5create") are one term
        entry["terms"] = list({match_key(t): t for t in entry["terms"]}.values())
    out = [e for e in out if len(e["terms"]) >= 2]
    for word, _ in df.most_common():
        if len(out) >= n:
            break
        at = rng.randrange(1, len(word) - 1)
        out.append({"type": "oneway", "input": word[:at] + word[at + 1:], "synonyms": [word]})
    return [dict(e, enabled=True) for e in out[:n]]


def merchant_rules(n: int, docs: list[dict[str, Any]], seed: int = 11) -> list[dict[str, Any]]:
    """What a shop writes: most rules on its popular queries as typed, some on brand names and first words."""
    rng = random.Random(seed)
    popular = list(dict.fromkeys(q.lower() for q in weighted_queries(20_000, seed)))[:400]
    catalog = docs[:3291]
    brands = sorted({d["brand"] for d in catalog if d.get("brand") and len(d["brand"]) > 2})
    out: list[dict[str, Any]] = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.65:
            q = popular[i % len(popular)]
            words = q.split()
            matching = [d for d in catalog if all(w in d["name"].lower() for w in words)] or catalog
            kind = rng.random()
            if kind < 0.4:
                consequence: dict[str, Any] = {"pin": [{"id": rng.choice(matching)["id"], "position": rng.randint(1, 3)}]}
            elif kind < 0.7:
                consequence = {"boost": [{"filters": {"brand": [rng.choice(matching)["brand"]]}, "weight": 2}]}
            elif kind < 0.9:
                consequence = {"userData": {"banner": f"promo {i}"}}
            else:
                consequence = {"redirect": f"https://shop.example/{q.replace(' ', '-')}"}
            condition = {"pattern": q, "anchoring": "is"}
        elif roll < 0.9:
            brand = rng.choice(brands)
            condition = {"pattern": brand.lower(), "anchoring": "contains"}
            consequence = {"boost": [{"filters": {"brand": [brand]}, "weight": 1.5}]}
        else:
            condition = {"pattern": rng.choice(popular).split()[0], "anchoring": "startsWith"}
            consequence = {"addFilters": {"price": {"lt": 2000}}, "userData": {"banner": f"sale {i}"}}
        rule: dict[str, Any] = {"name": f"rule {i}", "conditions": [condition], "consequence": consequence}
        if i % 10 == 0:
            rule["validity"] = [{"from": "2020-01-01T00:00:00Z", "until": "2100-01-01T00:00:00Z"}]
        out.append(rule)
    return out


def make_synonyms(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    words = sorted({w for q in weighted_queries(5_000, seed) for w in q.lower().split() if w.isalpha() and len(w) > 2})
    out: list[dict[str, Any]] = []
    while len(out) < n:
        kind = rng.random()
        if kind < 0.6:
            out.append({"type": "multiway", "terms": rng.sample(words, rng.choice((2, 3, 4)))})
        elif kind < 0.8:
            out.append({"type": "multiway", "terms": [" ".join(rng.sample(words, 2)), rng.choice(words)]})
        else:
            out.append({"type": "oneway", "input": rng.choice(words), "synonyms": rng.sample(words, 2)})
    return [dict(e, enabled=True) for e in out]


def make_rules(n: int, docs: list[dict[str, Any]], seed: int = 11) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    queries = [q.lower() for q in weighted_queries(5_000, seed)]
    brands = sorted({d["brand"] for d in docs[:3291] if d.get("brand")})
    out: list[dict[str, Any]] = []
    for i in range(n):
        q = rng.choice(queries).split()
        anchoring = rng.choice(("is", "startsWith", "endsWith", "contains", "contains"))
        pattern = " ".join(q if anchoring == "is" else q[:1] if anchoring == "startsWith" else q[-1:])
        consequence: dict[str, Any]
        roll = rng.random()
        if roll < 0.4:
            consequence = {"boost": [{"filters": {"brand": [rng.choice(brands)]}, "weight": 2}]}
        elif roll < 0.55:
            consequence = {"bury": [{"filters": {"brand": [rng.choice(brands)]}, "weight": 0.5}]}
        elif roll < 0.75:
            consequence = {"pin": [{"id": rng.choice(docs)["id"], "position": rng.randint(1, 5)}]}
        elif roll < 0.9:
            consequence = {"hide": [rng.choice(docs)["id"] for _ in range(3)]}
        else:
            consequence = {"addFilters": {"price": {"lt": 500}}, "userData": {"banner": f"b{i}"}}
        rule: dict[str, Any] = {"name": f"rule {i}", "conditions": [{"pattern": pattern, "anchoring": anchoring}],
                                "consequence": consequence}
        if i % 10 == 0:
            rule["validity"] = [{"from": "2020-01-01T00:00:00Z", "until": "2100-01-01T00:00:00Z"}]
        out.append(rule)
    return out


def matching_cost(synonyms: list[dict[str, Any]], rules: list[dict[str, Any]], queries: list[str]) -> str:
    syn = SynonymSet((s["type"], s.get("terms") or [], s.get("input"), s.get("synonyms") or []) for s in synonyms)
    compiled = RuleSet(compile_rule(f"r{i}", r["name"], True, i + 1, r) for i, r in enumerate(rules))
    started = time.perf_counter()
    touched = 0
    for q in queries:
        touched += bool(syn.for_query(q)) or bool(compiled.applying(q, None))
    per = (time.perf_counter() - started) / len(queries) * 1e6
    return (f"in-process matching: {per:.1f} µs per query against {len(syn)} synonym keys and {len(compiled)} rules "
            f"({touched / len(queries):.0%} of the queries touched by some)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds without and with (alternating)")
    parser.add_argument("--synonyms", type=int, default=1000)
    parser.add_argument("--rules", type=int, default=200)
    parser.add_argument("--set", choices=("merchant", "dense"), default="merchant",
                        help="which synonyms and rules (see above)")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()

    docs = expand(args.docs)
    if args.set == "dense":
        synonyms, rules = make_synonyms(args.synonyms), make_rules(args.rules, docs)
    else:
        synonyms, rules = merchant_synonyms(args.synonyms, docs), merchant_rules(args.rules, docs)
    per_round = max(1_500, int(300 * args.seconds))
    combos = word_combinations(per_round * (2 * args.rounds + 1))
    print(matching_cost(synonyms, rules, combos[:5_000]), flush=True)
    results: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    with running_server(workers=args.workers) as server:
        tenant = make_tenant(server.database_url, public_origins=[ORIGIN])
        public = {"Authorization": f"Bearer {tenant.public_key}", "Origin": ORIGIN}
        client = api(server.base, tenant)
        storefront = Client(server.base, tenant.public_key, headers={"Origin": ORIGIN})
        index = storefront_index(client, tenant, docs, name="bestbuy", shards=args.shards)
        profile = index.create_profile(STOREFRONT_PROFILE)
        url = f"{server.base}/v1/search/{profile.profile_key}"
        rule_ids = [index.create_rule(rule).id for rule in rules]
        load(url, public, combos[-per_round:], 4, 3)  # warm-up

        def switch(on: bool) -> None:
            index.import_synonyms(solr=render(synonyms) if on else "", mode="replace")
            for rule_id, rule in zip(rule_ids, rules, strict=True):
                index.update_rule(rule_id, {**rule, "enabled": on})

        for n in range(2 * args.rounds):
            on = n % 2 == 1
            switch(on)
            queries = combos[n * per_round:(n + 1) * per_round]
            applied = sum(1 for q in queries[:200] if storefront.search(profile.profile_key, q).applied_rules)
            result = measured(server.pid, lambda q=queries: load(url, public, q[200:], 4, args.seconds))
            results[on].append(result)
            name = f"round {n // 2 + 1} {'with' if on else 'without'} merchandising, 4 clients"
            print(report(name, result) + (f"  (rules applied to {applied / 2:.0f}% of the first 200)" if on else ""),
                  flush=True)
        client.close()
        storefront.close()
    without = {k: statistics.median(r[k] for r in results[False]) for k in ("p50", "p99")}
    with_ = {k: statistics.median(r[k] for r in results[True]) for k in ("p50", "p99")}
    print(f"\n== {len(docs)} products, {args.shards} shards, {len(synonyms)} synonyms, {len(rules)} rules ({args.set}); "
          f"uncached word combinations at 4 clients, median of {args.rounds} rounds each")
    for k in ("p50", "p99"):
        print(f"{k}: without {without[k]:.2f} ms, with {with_[k]:.2f} ms, ratio {with_[k] / without[k]:.2f} "
              f"(target <= 1.20)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

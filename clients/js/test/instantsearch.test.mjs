// The search client under InstantSearch's own helper (algoliasearch-helper), against the real server.
import assert from "node:assert/strict";

import algoliasearchHelper from "algoliasearch-helper";

import { shopsearch } from "../dist/shopsearch.mjs";
import { client, comparable, countingFetch, live, rest, restSearch, searchOnce, shop, treeNodes } from "./shop.mjs";

const LEVELS = [0, 1, 2, 3, 4].map((n) => `hierarchicalCategories.lvl${n}`);
const TREE = { name: LEVELS[0], attributes: LEVELS };

/** A helper on `made.searchClient` that also keeps the requests InstantSearch sent (`made.requests`). */
function helperOn(made, state = {}) {
  made.requests = [];
  const recording = {
    search: (requests) => {
      made.requests.push(requests);
      return made.searchClient.search(requests);
    },
    searchForFacetValues: (requests) => made.searchClient.searchForFacetValues(requests),
  };
  return algoliasearchHelper(recording, state.index ?? shop.profileKey, {
    disjunctiveFacets: ["brand", "price"],
    hierarchicalFacets: [TREE],
    ...state,
  });
}

/** Each request of a render answered alone by a fresh client: exactly what the server answers for it. */
async function alone(requests) {
  return Promise.all(requests.map(async (request) => (await client().searchClient.search([request])).results[0]));
}

/** The results of a render equal the server's answers to each of its requests alone; answered-from-another
 * facet-only results differ only in `nbHits` (the hits query's, flagged not exhaustive): InstantSearch reads
 * only their facets. */
function assertSameAsAlone(results, solo) {
  assert.equal(results.length, solo.length);
  results.forEach((result, i) => {
    if (result.exhaustiveNbHits === false) {
      assert.equal(result.hitsPerPage, 0, `request ${i} answered from another is facet-only`);
      const { nbHits, exhaustiveNbHits, exhaustive, ...rest } = comparable(result);
      const { nbHits: n2, exhaustiveNbHits: e2, exhaustive: x2, ...restSolo } = comparable(solo[i]);
      assert.deepEqual(rest, restSolo, `request ${i}`);
    } else {
      assert.deepEqual(comparable(result), comparable(solo[i]), `request ${i}`);
    }
  });
}

live("a render with two refined facets and a category three levels down is one multi-search of one query", async () => {
  const made = client();
  const helper = helperOn(made)
    .setQuery("case")
    .addDisjunctiveFacetRefinement("brand", "OtterBox")
    .addDisjunctiveFacetRefinement("brand", "Speck")
    .addNumericRefinement("price", ">=", 10)
    .addNumericRefinement("price", "<=", 60)
    .toggleFacetRefinement(LEVELS[0], "Cell Phones > Cell Phone Accessories > iPhone Accessories");
  const results = await searchOnce(helper);
  const requests = made.requests[0];
  // the helper asked: hits, brand, price, the tree without its refinement, and two parent levels
  assert.equal(requests.length, 6);
  assert.equal(made.calls.length, 1, "one HTTP request");
  assert.match(made.calls[0].url, /\/v1\/multi-search$/);
  assert.equal(made.calls[0].body.queries.length, 1, "the facet-only queries were answered from the hits query");
  assertSameAsAlone(results._rawResults, await alone(requests));

  // and what the shopper sees equals the REST API's answer for the same request
  const answer = await restSearch({
    q: "case",
    filters: { brand: ["OtterBox", "Speck"], price: { gte: 10, lte: 60 },
               hierarchicalCategories: ["Cell Phones > Cell Phone Accessories > iPhone Accessories"] },
    facets: ["brand", "hierarchicalCategories", "price"],
  });
  assert.equal(results.nbHits, answer.total);
  assert.deepEqual(results.hits.map((h) => h.objectID), answer.hits.map((h) => h.id));
  const brands = Object.fromEntries(results.getFacetValues("brand").map((v) => [v.name, v.count]));
  assert.deepEqual(brands, Object.fromEntries(answer.facets.brand.map((b) => [b.value, b.count])));
  const nodes = treeNodes(answer.facets.hierarchicalCategories);
  const shown = [];
  (function walk(node) {
    for (const child of node.data ?? []) {
      shown.push(child);
      walk(child);
    }
  })(results.getFacetValues(LEVELS[0]));
  assert.deepEqual(shown.map((n) => [n.path, n.count]).sort(), Object.values(nodes).map((n) => [n.path, n.count]).sort());
  assert.deepEqual(shown.filter((n) => n.isRefined).map((n) => n.path),
    ["Cell Phones", "Cell Phones > Cell Phone Accessories", "Cell Phones > Cell Phone Accessories > iPhone Accessories"]);
});

live("walking the category tree down and up: each render one request, results equal each request alone", async () => {
  const made = client();
  const helper = helperOn(made).setQuery("");
  const path = ["Cell Phones", "Cell Phone Accessories", "iPhone Accessories", "iPhone Cases & Clips"];
  for (const depth of [1, 2, 3, 4, 3, 2, 1, 0]) {
    helper.removeHierarchicalFacetRefinement(LEVELS[0]);
    if (depth) helper.toggleFacetRefinement(LEVELS[0], path.slice(0, depth).join(" > "));
    const before = made.calls.length;
    const results = await searchOnce(helper);
    assert.ok(made.calls.length - before <= 1, `depth ${depth}: at most one request`);
    if (made.calls.length > before) assert.equal(made.calls.at(-1).body.queries.length, 1, `depth ${depth}: the hits query alone`);
    assertSameAsAlone(results._rawResults, await alone(made.requests.at(-1)));
    assert.deepEqual(helper.getHierarchicalFacetBreadcrumb(LEVELS[0]), path.slice(0, depth));
    const shown = results.getFacetValues(LEVELS[0]).data.map((node) => node.path);
    assert.deepEqual(shown, ["Cell Phones"], "level 0 always");
  }
  assert.equal(made.calls.length, 5, "the way back up was answered from the cache");
});

live("a merchandising rule that holds only with the brand filter: facet-only queries go to the server too", async () => {
  const made = client();
  const helper = helperOn(made).setQuery("charger").addDisjunctiveFacetRefinement("brand", "Samsung");
  const results = await searchOnce(helper);
  assert.deepEqual(results.userData, [{ banner: "Chargers under $30" }]);
  assert.deepEqual(results.appliedRules, [shop.ruleId]);
  assert.equal(made.calls.length, 2, "the brand's facet-only query was sent after all");
  const solo = await alone(made.requests[0]);
  assert.deepEqual(results._rawResults.map(comparable), solo.map(comparable));
  // the brand's own query is the server's answer without the brand filter, so without the rule
  const plain = await restSearch({ q: "charger", facets: ["brand"], perPage: 0 });
  assert.deepEqual(results._rawResults[1].facets.brand, Object.fromEntries(plain.facets.brand.map((b) => [b.value, b.count])));
  assert.notDeepEqual(results._rawResults[0].facets.brand, results._rawResults[1].facets.brand);
});

live("sort by index name, pages from 0, hits per page, nbPages within the result window", async () => {
  const made = client();
  const helper = helperOn(made, { index: `${shop.profileKey}:price-asc` })
    .setQuery("charger")
    .setQueryParameter("hitsPerPage", 7)
    .setPage(2);
  const results = await searchOnce(helper);
  const answer = await restSearch({ q: "charger", sort: "price-asc", page: 3, perPage: 7, facets: ["brand", "hierarchicalCategories", "price"] });
  assert.deepEqual(results.hits.map((h) => h.objectID), answer.hits.map((h) => h.id));
  assert.deepEqual(results.hits.map((h) => h.price), [...results.hits.map((h) => h.price)].sort((a, b) => a - b));
  assert.equal(results.page, 2);
  assert.equal(results.hitsPerPage, 7);
  assert.equal(results.nbPages, Math.min(Math.ceil(answer.total / 7), Math.floor(1000 / 7)));
  assert.equal(results.index, `${shop.profileKey}:price-asc`);
  assert.ok(results.queryID, "the answer's queryId, for click events");

  const all = await searchOnce(helperOn(client()).setQuery("").setQueryParameter("hitsPerPage", 3));
  assert.equal(all.nbHits, (await restSearch({ q: "", perPage: 0, facets: [] })).total);
  assert.equal(all.nbPages, Math.floor(1000 / 3), "pages stop at the server's result window");
});

live("hits: objectID, the document's fields, _highlightResult with the request's tags and raw text", async () => {
  const { results } = await client().searchClient.search([{
    indexName: shop.profileKey,
    params: { query: "gophone prepaid", highlightPreTag: "__ais-highlight__", highlightPostTag: "__/ais-highlight__", hitsPerPage: 3 },
  }]);
  const answer = await restSearch({ q: "gophone prepaid", perPage: 3, facets: [] });
  const [first] = results[0].hits;
  assert.equal(first.objectID, answer.hits[0].id);
  for (const [field, value] of Object.entries(answer.hits[0].document)) assert.deepEqual(first[field], value, field);
  const name = first._highlightResult.name;
  assert.equal(name.value.replaceAll("__ais-highlight__", "").replaceAll("__/ais-highlight__", ""), first.name);
  assert.ok(name.value.includes("AT&T"), "text unescaped: InstantSearch escapes it itself");
  assert.ok(name.value.includes("__ais-highlight__GoPhone__/ais-highlight__"), name.value);
  assert.equal(name.matchLevel, "full");
  assert.ok(Array.isArray(first._highlightResult.categories));
  assert.deepEqual(first._highlightResult.categories.map((c) => c.value), first.categories);
  assert.equal(results[0].query, "gophone prepaid");
  assert.match(results[0].params, /query=gophone%20prepaid/);
  assert.equal(typeof results[0].processingTimeMS, "number");
});

live("facetFilters, numericFilters and filters strings reach the server as the same FILTER", async () => {
  const { results } = await client().searchClient.search([{
    indexName: shop.profileKey,
    params: {
      query: "case",
      facets: ["brand"],
      facetFilters: [["brand:OtterBox", "brand:Speck"], "brand:-Speck"],
      numericFilters: ["price>=20"],
      filters: 'hierarchicalCategories:"Cell Phones > Cell Phone Accessories" AND NOT price > 50',
    },
  }]);
  const answer = await restSearch({
    q: "case",
    facets: ["brand"],
    filters: { brand: ["OtterBox", "Speck"], price: { gte: 20 },
               and: [{ not: { brand: ["Speck"] } }, { hierarchicalCategories: ["Cell Phones > Cell Phone Accessories"] },
                     { not: { price: { gt: 50 } } }] },
  });
  assert.ok(answer.total > 0);
  assert.equal(results[0].nbHits, answer.total);
  assert.deepEqual(results[0].hits.map((h) => h.objectID), answer.hits.map((h) => h.id));
  assert.deepEqual(results[0].facets.brand, Object.fromEntries(answer.facets.brand.map((b) => [b.value, b.count])));
  assert.ok(results[0].hits.every((h) => h.brand === "OtterBox" && h.price >= 20 && h.price <= 50));
});

live("searchable facet lists: the helper's searchForFacetValues is the server's facet value search", async () => {
  const made = client();
  const helper = helperOn(made).setQuery("case").addDisjunctiveFacetRefinement("brand", "Samsung")
    .addNumericRefinement("price", "<", 40);
  const found = await helper.searchForFacetValues("brand", "sam", 10);
  assert.equal(made.calls.length, 1);
  assert.deepEqual(made.calls[0].body.queries[0].facetValues, { field: "brand", q: "sam", limit: 10 });
  const { body } = await rest(`/v1/search/${shop.profileKey}/facet-values`,
    { field: "brand", q: "sam", limit: 10, query: "case", filters: { price: { lt: 40 } } });
  assert.ok(body.values.length > 0);
  assert.deepEqual(found.facetHits.map(({ value, highlighted, count }) => ({ value, highlighted, count })), body.values);
  assert.deepEqual(found.facetHits.filter((f) => f.isRefined).map((f) => f.value), ["Samsung"]);
  // InstantSearch's own tags, the text raw
  const tagged = await client().searchClient.searchForFacetValues([{ indexName: shop.profileKey, params: {
    facetName: "brand", facetQuery: "at&", highlightPreTag: "<mark>", highlightPostTag: "</mark>" } }]);
  const att = tagged[0].facetHits.find((f) => f.value === "AT&T GoPhone");
  assert.ok(att, JSON.stringify(tagged[0].facetHits));
  assert.match(att.highlighted, /^<mark>AT<\/mark>&T GoPhone$|^<mark>AT&T<\/mark> GoPhone$/);
});

live("answers are cached: the same request again sends nothing; clearCache forgets; the key ignores parameter order", async () => {
  const made = client();
  const request = (params) => made.searchClient.search([{ indexName: shop.profileKey, params }]);
  const first = await request({ query: "speck", facets: ["brand"], facetFilters: [["brand:Speck"]] });
  const again = await request({ facetFilters: [["brand:Speck"]], facets: ["brand"], query: "speck" });
  assert.equal(made.calls.length, 1);
  assert.deepEqual(again, first);
  await made.searchClient.clearCache();
  await request({ query: "speck", facets: ["brand"], facetFilters: [["brand:Speck"]] });
  assert.equal(made.calls.length, 2);
  const uncached = client({ cache: false });
  await uncached.searchClient.search([{ indexName: shop.profileKey, params: { query: "speck" } }]);
  await uncached.searchClient.search([{ indexName: shop.profileKey, params: { query: "speck" } }]);
  assert.equal(uncached.calls.length, 2);
});

live("more than 20 queries go in as few multi-searches as fit, answered in request order", async () => {
  const made = client();
  const requests = Array.from({ length: 25 }, (_, i) => ({ indexName: shop.profileKey, params: { query: "", hitsPerPage: 1, page: i } }));
  const { results } = await made.searchClient.search(requests);
  assert.equal(made.calls.length, 2);
  assert.deepEqual(made.calls.map((c) => c.body.queries.length).sort(), [20, 5].sort());
  const all = await restSearch({ q: "", perPage: 25, facets: [] });
  assert.deepEqual(results.map((r) => r.hits[0].objectID), all.hits.map((h) => h.id));
});

live("the insights client sends clicks and conversions on a search's hits to /v1/events", async () => {
  const counted = countingFetch();
  const made = shopsearch({ host: shop.url, apiKey: shop.publicKey, headers: { Origin: shop.origin }, fetch: counted });
  const results = await searchOnce(helperOn(made).setQuery("iphone"));
  const accepted = [];
  const spy = async (url, init) => {
    const response = await counted(url, init);
    if (url.endsWith("/v1/events")) accepted.push([response.status, await response.clone().json()]);
    return response;
  };
  const insights = shopsearch({ host: shop.url, apiKey: shop.publicKey, headers: { Origin: shop.origin }, fetch: spy }).insightsClient;
  insights("setUserToken", "shopper-1");
  insights("clickedObjectIDsAfterSearch", { eventName: "Hit clicked", index: shop.profileKey, queryID: results.queryID,
    objectIDs: [results.hits[2].objectID], positions: [3] });
  insights("convertedObjectIDsAfterSearch", { eventName: "Bought", index: shop.profileKey, queryID: results.queryID,
    objectIDs: [results.hits[2].objectID] });
  insights("viewedObjectIDs", { eventName: "Seen", index: shop.profileKey, objectIDs: ["1"] }); // not recorded
  await new Promise((resolve) => setTimeout(resolve, 500));
  const events = counted.calls.filter((c) => c.url.endsWith("/v1/events")).map((c) => c.body.events);
  assert.deepEqual(events, [
    [{ type: "click", queryId: results.queryID, documentId: results.hits[2].objectID, position: 3, userToken: "shopper-1" }],
    [{ type: "conversion", queryId: results.queryID, documentId: results.hits[2].objectID, userToken: "shopper-1" }],
  ]);
  assert.deepEqual(accepted, [[200, { accepted: 1 }], [200, { accepted: 1 }]]);
  let tokenSeen;
  insights("getUserToken", null, (_error, token) => { tokenSeen = token; });
  assert.equal(tokenSeen, "shopper-1");

  // a failure to send goes to onError (a shop page carries on)
  const failures = [];
  insights.onError = (error) => failures.push(error);
  insights("clickedObjectIDsAfterSearch", { queryID: "not-a-query", objectIDs: ["1"], positions: [1] });
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(failures.length, 1);
  assert.equal(failures[0].status, 404);
  assert.equal(failures[0].code, "NOT_FOUND");
});

live("a facet-only query opening fewer category paths than the hits query gets only its own branches", async () => {
  const made = client();
  const paths = ["Cell Phones > iPhone", "Cell Phones > Samsung Galaxy"];
  const requests = [
    { indexName: shop.profileKey, params: { query: "", facets: [LEVELS[2]], facetFilters: [paths.map((p) => `${LEVELS[1]}:${p}`)] } },
    { indexName: shop.profileKey, params: { query: "", facets: [LEVELS[2]], hitsPerPage: 0, facetFilters: [[`${LEVELS[1]}:${paths[0]}`]] } },
  ];
  const { results } = await made.searchClient.search(requests);
  assert.equal(made.calls.length, 1);
  assert.equal(made.calls[0].body.queries.length, 1, "the second answered from the first");
  const level2 = (result) => Object.keys(result.facets[LEVELS[2]]);
  assert.ok(level2(results[0]).some((p) => p.startsWith(`${paths[1]} > `)));
  assert.ok(level2(results[1]).length > 0 && level2(results[1]).every((p) => p.startsWith(`${paths[0]} > `)));
  assertSameAsAlone(results, await alone(requests));
});

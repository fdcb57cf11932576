// Refusals surface as one error class, never as empty results.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";

import algoliasearchHelper from "algoliasearch-helper";

import { ShopsearchError, shopsearch } from "../dist/shopsearch.mjs";
import { client, live, searchOnce, shop } from "./shop.mjs";

/** Every way the client asks (REST methods, the search client, InstantSearch's helper) rejects with `expected`. */
async function allRefuse(made, profileKey, expected, { suggest = true } = {}) {
  const check = (error) => {
    assert.ok(error instanceof ShopsearchError, String(error));
    assert.equal(error.name, "ShopsearchError");
    for (const [key, value] of Object.entries(expected)) assert.deepEqual(error[key], value, key);
    assert.ok(error.message);
    return true;
  };
  await assert.rejects(made.search(profileKey, { q: "iphone" }), check);
  await assert.rejects(made.multiSearch([{ profileKey, q: "iphone" }]), check);
  await assert.rejects(made.facetValues(profileKey, { field: "brand", q: "sam" }), check);
  await assert.rejects(made.searchClient.search([{ indexName: profileKey, params: { query: "iphone" } }]), check);
  await assert.rejects(made.searchClient.searchForFacetValues([{ indexName: profileKey, params: { facetName: "brand", facetQuery: "s" } }]), check);
  await assert.rejects(searchOnce(algoliasearchHelper(made.searchClient, profileKey, { disjunctiveFacets: ["brand"] })), check);
  if (suggest) await assert.rejects(made.suggest(shop.suggestKey, { q: "sam" }), check);
}

live("an origin the public key does not allow: 403 ORIGIN_NOT_ALLOWED", async () => {
  const made = client({ headers: { Origin: "https://elsewhere.test" } });
  await allRefuse(made, shop.profileKey, { status: 403, code: "ORIGIN_NOT_ALLOWED" });
  await assert.rejects(made.sendEvents([{ type: "click", queryId: "q", documentId: "1" }]), { code: "ORIGIN_NOT_ALLOWED" });
});

live("a revoked key: 401 UNAUTHENTICATED", async () => {
  const made = client({ apiKey: shop.revokedKey });
  await allRefuse(made, shop.profileKey, { status: 401, code: "UNAUTHENTICATED" });
});

live("another tenant's profile key: 404 NOT_FOUND", async () => {
  await allRefuse(client(), shop.free.profileKey, { status: 404, code: "NOT_FOUND" }, { suggest: false });
  await assert.rejects(client().multiSearch([{ profileKey: shop.profileKey, q: "a" }, { profileKey: shop.free.profileKey, q: "b" }]),
    (error) => error.status === 404 && error.details.some((d) => d.path.startsWith("queries[1]")));
});

live("a request the server refuses: 400 with the paths of its details", async () => {
  const made = client();
  await assert.rejects(made.search(shop.profileKey, { q: "x", filters: { colour: ["red"] } }),
    (error) => error.status === 400 && error.code === "VALIDATION_ERROR" && error.details.length > 0 && Boolean(error.details[0].path));
  // a public key may not facet on a field its profile does not expose
  await assert.rejects(made.searchClient.search([{ indexName: shop.profileKey, params: { query: "", facets: ["popularity"] } }]),
    (error) => error.status === 400 && error.details.some((d) => d.path.includes("facets")));
  // an unknown sort option named by the index name
  await assert.rejects(made.searchClient.search([{ indexName: `${shop.profileKey}:cheapest`, params: { query: "" } }]),
    (error) => error.status === 400 && error.details.some((d) => d.path.includes("sort")));
});

live("a quota used up: 429 RATE_LIMITED with Retry-After, through the search client too", async () => {
  const made = shopsearch({ host: shop.url, apiKey: shop.free.publicKey, headers: { Origin: shop.origin }, cache: false });
  const batch = (n) => Array.from({ length: 20 }, (_, i) => ({ indexName: shop.free.profileKey, params: { query: `q${n}-${i}` } }));
  let refused;
  for (let n = 0; n < 10 && !refused; n++) {
    try {
      const { results } = await made.searchClient.search(batch(n));
      assert.equal(results.length, 20);
    } catch (error) {
      refused = error;
    }
  }
  assert.ok(refused instanceof ShopsearchError, "the free plan's storefront quota ends within 200 searches");
  assert.equal(refused.status, 429);
  assert.equal(refused.code, "RATE_LIMITED");
  assert.ok(refused.retryAfter > 0 && refused.retryAfter <= 10, String(refused.retryAfter));
});

test("no answer: NETWORK_ERROR or TIMEOUT with status 0", async () => {
  const closed = await new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
  const unreachable = shopsearch({ host: `http://127.0.0.1:${closed}`, apiKey: "ss_pk_x" });
  await assert.rejects(unreachable.search("pk", {}), { name: "ShopsearchError", status: 0, code: "NETWORK_ERROR" });
  const silent = shopsearch({ host: "http://127.0.0.1:1", apiKey: "ss_pk_x", timeout: 50,
    fetch: (_url, init) => new Promise((_resolve, reject) => init.signal.addEventListener("abort", () => reject(new Error("aborted")))) });
  await assert.rejects(silent.searchClient.search([{ indexName: "pk", params: {} }]), { status: 0, code: "TIMEOUT" });
  const notJson = shopsearch({ host: "h.test", apiKey: "k", fetch: async () => new Response("<html>", { status: 502, statusText: "Bad Gateway" }) });
  await assert.rejects(notJson.search("pk"), { status: 502, code: "HTTP_502", message: "502 Bad Gateway" });
});

test("what the client cannot translate fails before any request", async () => {
  let requests = 0;
  const made = shopsearch({ host: "https://search.example.com", apiKey: "ss_pk_x", fetch: async () => { requests++; throw new Error("no"); } });
  await assert.rejects(made.searchClient.search([{ indexName: "pk", params: { numericFilters: ["price>>3"] } }]),
    { status: 0, code: "VALIDATION_ERROR", details: [{ path: "requests[0].params.numericFilters[0]", message: '">3" is not a number' }] });
  await assert.rejects(made.searchClient.search([{ indexName: "", params: {} }]), { code: "VALIDATION_ERROR" });
  assert.equal(requests, 0);
  assert.throws(() => shopsearch({ host: "", apiKey: "k" }), TypeError);
  assert.throws(() => shopsearch({ host: "h", apiKey: "" }), TypeError);
});

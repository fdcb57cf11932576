// The client's REST methods answer exactly what the routes answer.
import assert from "node:assert/strict";

import { shopsearch } from "../dist/shopsearch.mjs";
import { client, live, rest, restSearch, shop } from "./shop.mjs";

const without = ({ tookMs, queryId, ...rest }) => rest;

live("search(profileKey, body): the storefront route's answer", async () => {
  const body = { q: "galaxy s7", filters: { brand: ["Samsung"] }, sort: "price-desc", perPage: 5, page: 2 };
  const answer = await client().search(shop.profileKey, body);
  assert.deepEqual(without(answer), without(await restSearch(body)));
  assert.ok(answer.queryId && typeof answer.tookMs === "number");
  assert.ok(answer.hits.every((h) => h.document.brand === "Samsung"));
  assert.deepEqual(answer.hits.map((h) => h.document.price), [...answer.hits.map((h) => h.document.price)].sort((a, b) => b - a));
  // a secret key searches the storefront routes too, and needs no Origin (a server's client)
  const server = shopsearch({ host: shop.url, apiKey: shop.secretKey });
  assert.deepEqual(without(await server.search(shop.profileKey, body)), without(answer));
});

live("multiSearch(queries): each result the single route's, a facet value search among them", async () => {
  const made = client();
  const queries = [
    { profileKey: shop.profileKey, q: "case", filters: { brand: ["OtterBox"] }, perPage: 3 },
    { profileKey: shop.profileKey, q: "case", perPage: 0, facets: ["brand"] },
    { profileKey: shop.profileKey, q: "case", facetValues: { field: "brand", q: "oter", limit: 5 } },
  ];
  const { results } = await made.multiSearch(queries);
  assert.equal(made.calls.length, 1);
  assert.equal(results.length, 3);
  const { profileKey: _a, ...first } = queries[0];
  const { profileKey: _b, ...second } = queries[1];
  assert.deepEqual(without(results[0]), without(await restSearch(first)));
  assert.deepEqual(without(results[1]), without(await restSearch(second)));
  assert.deepEqual(results[1].hits, []);
  const values = await rest(`/v1/search/${shop.profileKey}/facet-values`, { field: "brand", q: "oter", limit: 5, query: "case" });
  assert.deepEqual(without(results[2]), without(values.body));
  assert.equal(results[2].values[0].value, "OtterBox", "one typo away");
});

live("facetValues(profileKey, body): values matching what was typed, counted over the search", async () => {
  const body = { field: "brand", q: "sam", query: "charger", filters: { price: { lt: 50 } } };
  const answer = await client().facetValues(shop.profileKey, body);
  assert.deepEqual(without(answer), without((await rest(`/v1/search/${shop.profileKey}/facet-values`, body)).body));
  assert.equal(answer.values[0].value, "Samsung");
  assert.equal(answer.values[0].highlighted, "<em>Sam</em>sung");
  const search = await restSearch({ q: "charger", filters: { price: { lt: 50 } }, facets: ["brand"], perPage: 0 });
  assert.equal(answer.values[0].count, search.facets.brand.find((b) => b.value === "Samsung").count);
});

live("suggest(suggestKey, body): suggestions and the storefront's products", async () => {
  const answer = await client().suggest(shop.suggestKey, { q: "sams", limit: 5 });
  assert.deepEqual(without(answer), without((await rest(`/v1/suggest/${shop.suggestKey}`, { q: "sams", limit: 5 })).body));
  assert.ok(answer.suggestions.length > 0 && answer.suggestions.length <= 5);
  assert.ok(answer.suggestions.some((s) => s.text === "Samsung"), JSON.stringify(answer.suggestions));
  assert.ok(answer.products.length > 0 && answer.products.every((p) => p.id && p.document));
});

live("sendEvents(events): a click on a hit of a search is accepted", async () => {
  const made = client();
  const answer = await made.search(shop.profileKey, { q: "iphone", perPage: 3 });
  const accepted = await made.sendEvents([
    { type: "click", queryId: answer.queryId, documentId: answer.hits[1].id, position: 2, userToken: "u1" },
    { type: "conversion", queryId: answer.queryId, documentId: answer.hits[1].id },
  ]);
  assert.deepEqual(accepted, { accepted: 2 });
});

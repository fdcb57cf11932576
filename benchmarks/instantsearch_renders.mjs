// What InstantSearch renders send through the shopsearch client, for benchmarks/instantsearch_bench.py.
// For each query text (BENCH_QUERIES, a JSON list) it refines two brands (the text's two most
// frequent), a price range, and the category tree one level below its root (the text's most frequent
// child of "Cell Phones"), lets algoliasearch-helper build the render's requests (the hits query, a
// facet-only query per refined disjunctive facet, the tree without its refinement and its parent
// level), and prints one JSON line: the multi-search bodies the client sent, the helper's requests
// as the server would be asked each alone, and the hits query alone.
import algoliasearchHelper from "../clients/js/node_modules/algoliasearch-helper/index.js";
import { shopsearch } from "../clients/js/dist/shopsearch.mjs";

const { BENCH_URL: host, BENCH_KEY: apiKey, BENCH_PROFILE: profileKey } = process.env;
const queries = JSON.parse(process.env.BENCH_QUERIES);
const LEVELS = [0, 1, 2, 3, 4].map((n) => `hierarchicalCategories.lvl${n}`);

function capturing() {
  const bodies = [];
  const client = shopsearch({ host, apiKey, cache: false, fetch: (url, init) => {
    bodies.push(JSON.parse(init.body));
    return fetch(url, init);
  } });
  return { client, bodies };
}

const plain = shopsearch({ host, apiKey });
for (const q of queries) {
  const facets = await plain.search(profileKey, { q, perPage: 0, facets: ["brand"] });
  const tree = await plain.search(profileKey, { q, perPage: 0, facets: ["hierarchicalCategories"],
    filters: { hierarchicalCategories: ["Cell Phones"] } });
  const children = tree.facets.hierarchicalCategories[0]?.children ?? [];
  const brands = facets.facets.brand.slice(0, 2).map((b) => String(b.value));
  if (brands.length < 2 || !children.length) continue;

  const { client, bodies } = capturing();
  const requests = [];
  const recording = { search: (r) => (requests.push(...r), client.searchClient.search(r)) };
  const helper = algoliasearchHelper(recording, profileKey, {
    disjunctiveFacets: ["brand", "price"],
    hierarchicalFacets: [{ name: LEVELS[0], attributes: LEVELS }],
  }).setQuery(q)
    .addDisjunctiveFacetRefinement("brand", brands[0])
    .addDisjunctiveFacetRefinement("brand", brands[1])
    .addNumericRefinement("price", ">=", 10)
    .addNumericRefinement("price", "<=", 500)
    .toggleFacetRefinement(LEVELS[0], children[0].path);
  await new Promise((resolve, reject) => {
    helper.once("result", resolve);
    helper.once("error", ({ error }) => reject(error));
    helper.search();
  });
  const solo = [];
  for (const request of requests) {
    const alone = capturing();
    await alone.client.searchClient.search([request]);
    solo.push(...alone.bodies[0].queries);
  }
  console.log(JSON.stringify({ q, helperRequests: requests.length, batches: bodies, solo }));
}

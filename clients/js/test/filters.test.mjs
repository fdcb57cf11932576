// Algolia's filter parameters as FILTER JSON (no server needed).
import assert from "node:assert/strict";
import { test } from "node:test";

import { ShopsearchError, parseFilters, toFilter } from "../dist/shopsearch.mjs";

test("facetFilters: an OR group of one field is its top-level clause; strings and excludes go under `and`", () => {
  assert.deepEqual(toFilter({ facetFilters: [["brand:Sony", "brand:Apple"]] }), { brand: ["Apple", "Sony"] });
  assert.deepEqual(toFilter({ facetFilters: ["brand:Apple"] }), { and: [{ brand: ["Apple"] }] });
  assert.deepEqual(toFilter({ facetFilters: ["brand:-Apple", ["color:Red", "size:-XL"]] }), {
    and: [{ not: { brand: ["Apple"] } }, { or: [{ color: ["Red"] }, { not: { size: ["XL"] } }] }],
  });
  assert.deepEqual(toFilter({ facetFilters: [["brand:\\-dash"]] }), { brand: ["-dash"] }, "an escaped leading dash is a value");
  assert.deepEqual(toFilter({ facetFilters: [["name:a:b"]] }), { name: ["a:b"] }, "the attribute ends at the first colon");
  assert.deepEqual(toFilter({ facetFilters: [["brand:A"], ["brand:B"]] }), { brand: ["A"], and: [{ brand: ["B"] }] },
    "a second group on a field ANDs");
  assert.equal(toFilter({}), undefined);
  assert.equal(toFilter({ facetFilters: [], numericFilters: [], filters: "", tagFilters: "" }), undefined);
});

test("facetFilters: a category level names its tree's field, the path counted disjunctively", () => {
  assert.deepEqual(toFilter({ facetFilters: [["categories.lvl1:Cell Phones > iPhone"], ["brand:Apple"]] }), {
    categories: ["Cell Phones > iPhone"],
    brand: ["Apple"],
  });
  // the helper's parent-level query adds the parent as a plain string
  assert.deepEqual(toFilter({ facetFilters: ["categories.lvl0:Cell Phones"] }), { categories: ["Cell Phones"] });
});

test("numericFilters: bounds of one field make its range; =, !=, TO and OR groups", () => {
  assert.deepEqual(toFilter({ numericFilters: ["price>=10", "price<=100.5"] }), { price: { gte: 10, lte: 100.5 } });
  assert.deepEqual(toFilter({ numericFilters: ["price>10", "price<20", "rating=5"] }), { price: { gt: 10, lt: 20 }, and: [{ rating: [5] }] });
  assert.deepEqual(toFilter({ numericFilters: ["price!=3"] }), { and: [{ not: { price: [3] } }] });
  assert.deepEqual(toFilter({ numericFilters: ["price:10 TO 20"] }), { and: [{ price: { gte: 10, lte: 20 } }] });
  assert.deepEqual(toFilter({ numericFilters: [["price<10", "price>100"]] }), { and: [{ or: [{ price: { lt: 10 } }, { price: { gt: 100 } }] }] });
  assert.deepEqual(toFilter({ numericFilters: ["price>=10", "price>=20"] }), { price: { gte: 10 }, and: [{ price: { gte: 20 } }] });
});

test("filters strings: conditions, ranges, comparisons, NOT before AND before OR, quotes", () => {
  assert.deepEqual(parseFilters('brand:Apple AND (categories:"Cell Phones" OR price < 100) AND NOT brand:Samsung'), {
    and: [{ brand: ["Apple"] }, { or: [{ categories: ["Cell Phones"] }, { price: { lt: 100 } }] }, { not: { brand: ["Samsung"] } }],
  });
  assert.deepEqual(parseFilters("a:1 OR b:2 AND c:3"), { or: [{ a: ["1"] }, { and: [{ b: ["2"] }, { c: ["3"] }] }] });
  assert.deepEqual(parseFilters("price:10 TO 20"), { price: { gte: 10, lte: 20 } });
  assert.deepEqual(parseFilters("price >= 9.5 AND stock != 0"), { and: [{ price: { gte: 9.5 } }, { not: { stock: [0] } }] });
  assert.deepEqual(parseFilters("name:'it\\'s'"), { name: ["it's"] });
  assert.deepEqual(toFilter({ filters: "brand:Apple AND price>1", facetFilters: [["color:Red"]] }), {
    color: ["Red"],
    and: [{ brand: ["Apple"] }, { price: { gt: 1 } }],
  });
});

test("what cannot be read is a VALIDATION_ERROR naming where", () => {
  for (const [params, path] of [
    [{ filters: "brand:Apple AND" }, "params.filters"],
    [{ filters: "(brand:Apple" }, "params.filters"],
    [{ filters: "price > cheap" }, "params.filters"],
    [{ numericFilters: ["price~3"] }, "params.numericFilters[0]"],
    [{ facetFilters: [["brand"]] }, "params.facetFilters[0][0]"],
    [{ tagFilters: ["sale"] }, "params.tagFilters"],
  ]) {
    assert.throws(() => toFilter(params), (error) => {
      assert.ok(error instanceof ShopsearchError);
      assert.equal(error.code, "VALIDATION_ERROR");
      assert.equal(error.status, 0);
      assert.equal(error.details[0].path, path);
      return true;
    }, JSON.stringify(params));
  }
});

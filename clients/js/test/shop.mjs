// The shop the live tests run against: tests/clients/test_js_client.py starts `shopsearch serve`, sets
// the shop up (tests/clients/shop.py) and passes it as JSON in SHOPSEARCH_TEST_SHOP.
import { test } from "node:test";

import { shopsearch } from "../dist/shopsearch.mjs";

export const shop = process.env.SHOPSEARCH_TEST_SHOP ? JSON.parse(process.env.SHOPSEARCH_TEST_SHOP) : null;

/** A test that needs the server (skipped, and so failing the pytest run, without one). */
export function live(name, fn) {
  return test(name, { skip: shop ? false : "SHOPSEARCH_TEST_SHOP is not set: run tests/clients/test_js_client.py" }, fn);
}

/** fetch, counting the requests it makes (`.calls`: URL and parsed body of each). */
export function countingFetch() {
  const calls = [];
  const counted = (url, init) => {
    calls.push({ url, body: init?.body ? JSON.parse(init.body) : undefined });
    return fetch(url, init);
  };
  counted.calls = calls;
  return counted;
}

/** A client as the shop page's (public key, the shop's origin), with a counting fetch unless given one. */
export function client(options = {}) {
  const counted = options.fetch ?? countingFetch();
  const made = shopsearch({ host: shop.url, apiKey: shop.publicKey, headers: { Origin: shop.origin }, fetch: counted, ...options });
  return Object.assign(made, { calls: counted.calls });
}

/** The REST API answered directly: `{status, body}`. */
export async function rest(path, body, key = shop.publicKey) {
  const response = await fetch(shop.url + path, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", Origin: shop.origin },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** The REST storefront search's answer for `body` (asserting a 200). */
export async function restSearch(body, profileKey = shop.profileKey) {
  const { status, body: answer } = await rest(`/v1/search/${profileKey}`, body);
  if (status !== 200) throw new Error(`REST search answered ${status}: ${JSON.stringify(answer)}`);
  return answer;
}

/** The next `result` (or `error`) of an algoliasearch-helper after `search()`. */
export function searchOnce(helper) {
  return new Promise((resolve, reject) => {
    const onResult = ({ results }) => {
      helper.removeListener("error", onError);
      resolve(results);
    };
    const onError = ({ error }) => {
      helper.removeListener("result", onResult);
      reject(error);
    };
    helper.once("result", onResult);
    helper.once("error", onError);
    helper.search();
  });
}

/** Every node of a shopsearch category tree by path. */
export function treeNodes(nodes, out = {}) {
  for (const node of nodes) {
    out[node.path] = node;
    treeNodes(node.children, out);
  }
  return out;
}

/** A result without what differs between two identical searches (timings, the query's id). */
export function comparable(result) {
  const { processingTimeMS, queryID, ...rest } = result;
  return rest;
}

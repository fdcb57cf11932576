/** shopsearch answers in the shape of Algolia's search and facet-search results, as InstantSearch reads them. */

import { fieldOf } from "./filters";
import { highlightResult, retag } from "./highlight";
import type { FacetAnswer, FacetValuesAnswer, RangeBucket, SearchAnswer, TermsBucket, TreeNode } from "./types";

/** Pages a search may reach: page × perPage ≤ 1000 (the server's result window). */
export const RESULT_WINDOW = 1000;

export interface AlgoliaHit {
  objectID: string;
  _highlightResult: Record<string, unknown>;
  _snippetResult: Record<string, unknown>;
  [field: string]: unknown;
}

export interface AlgoliaResult {
  hits: AlgoliaHit[];
  nbHits: number;
  page: number;
  nbPages: number;
  hitsPerPage: number;
  facets: Record<string, Record<string, number>>;
  facets_stats: Record<string, { min: number; max: number; avg: number; sum: number }>;
  exhaustiveFacetsCount: boolean;
  exhaustiveNbHits: boolean;
  exhaustive: { facetsCount: boolean; nbHits: boolean };
  processingTimeMS: number;
  query: string;
  params: string;
  index: string;
  queryID?: string;
  renderingContent: { redirect?: { url: string } };
  userData?: unknown[];
  appliedRules?: string[];
}

export interface FacetHitsResult {
  facetHits: Array<{ value: string; highlighted: string; count: number }>;
  exhaustiveFacetsCount: boolean;
  processingTimeMS: number;
}

export interface Shaping {
  indexName: string;
  params: Record<string, unknown>;
  query: string;
  /** Facet attributes asked for, as InstantSearch names them (`brand`, `categories.lvl1`). */
  attributes: string[] | null;
  maxValuesPerFacet?: number;
  pre: string;
  post: string;
  /** Answered from another query's answer: `nbHits` is that query's, flagged not exhaustive. */
  derived?: boolean;
}

export function isTree(buckets: FacetAnswer): buckets is TreeNode[] {
  return buckets.length > 0 && "path" in buckets[0] && "children" in buckets[0];
}

function isRange(buckets: FacetAnswer): buckets is RangeBucket[] {
  return buckets.length > 0 && !("value" in buckets[0]);
}

function walk(nodes: TreeNode[], visit: (node: TreeNode) => void): void {
  for (const node of nodes) {
    visit(node);
    walk(node.children ?? [], visit);
  }
}

/** One attribute's `{value: count}`: a terms facet's values, or a tree's paths (of one level for `F.lvlN`). */
function facetCounts(buckets: FacetAnswer, level: number | null, max?: number): Record<string, number> | null {
  const counts: Record<string, number> = {};
  if (!buckets.length) return counts;
  if (isTree(buckets)) {
    walk(buckets, (node) => {
      if (level === null || node.level === level) counts[node.path] = node.count;
    });
    return counts;
  }
  if (isRange(buckets)) return null; // ranges are not values: Algolia's shape has no place for them
  const terms = buckets as TermsBucket[];
  for (const bucket of max !== undefined ? terms.slice(0, max) : terms) counts[String(bucket.value)] = bucket.count;
  return counts;
}

export function encodeParams(params: Record<string, unknown>): string {
  return Object.keys(params)
    .sort()
    .filter((key) => params[key] !== undefined)
    .map((key) => {
      const value = params[key];
      return `${encodeURIComponent(key)}=${encodeURIComponent(typeof value === "string" ? value : JSON.stringify(value))}`;
    })
    .join("&");
}

/** A search answer as Algolia's result for the request `shaping` describes. */
export function toAlgoliaResult(answer: SearchAnswer, shaping: Shaping): AlgoliaResult {
  const facets: AlgoliaResult["facets"] = {};
  const attributes = shaping.attributes ?? Object.keys(answer.facets ?? {});
  for (const attribute of attributes) {
    const { field, level } = fieldOf(attribute);
    const buckets = answer.facets?.[attribute] ?? answer.facets?.[field];
    if (!buckets) continue;
    const counts = facetCounts(buckets, answer.facets?.[attribute] ? null : level, shaping.maxValuesPerFacet);
    if (counts) facets[attribute] = counts;
  }
  const perPage = answer.perPage;
  const pages = perPage > 0 ? Math.min(Math.ceil(answer.total / perPage), Math.floor(RESULT_WINDOW / perPage)) : 0;
  const derived = shaping.derived === true;
  const result: AlgoliaResult = {
    hits: answer.hits.map((hit) => ({
      ...hit.document,
      objectID: hit.id,
      ...(hit.groupSize !== undefined ? { _groupSize: hit.groupSize } : {}),
      _highlightResult: highlightResult(hit.document, hit.highlights, shaping.query, shaping.pre, shaping.post),
      _snippetResult: highlightResult(hit.document, hit.highlights, shaping.query, shaping.pre, shaping.post),
    })),
    nbHits: answer.total,
    page: answer.page - 1,
    nbPages: pages,
    hitsPerPage: perPage,
    facets,
    facets_stats: {},
    exhaustiveFacetsCount: true,
    exhaustiveNbHits: !derived,
    exhaustive: { facetsCount: true, nbHits: !derived },
    processingTimeMS: derived ? 0 : Math.round(answer.tookMs ?? 0),
    query: shaping.query,
    params: encodeParams(shaping.params),
    index: shaping.indexName,
    renderingContent: answer.redirect ? { redirect: { url: answer.redirect } } : {},
  };
  if (!derived && answer.queryId) result.queryID = answer.queryId;
  if (answer.userData !== undefined && answer.userData !== null) {
    result.userData = Array.isArray(answer.userData) ? answer.userData : [answer.userData];
  }
  if (answer.appliedRules?.length) result.appliedRules = answer.appliedRules;
  return result;
}

export function toFacetHits(answer: FacetValuesAnswer, pre: string, post: string): FacetHitsResult {
  return {
    facetHits: answer.values.map((v) => ({ value: v.value, highlighted: retag(v.highlighted, pre, post), count: v.count })),
    exhaustiveFacetsCount: true,
    processingTimeMS: Math.round(answer.tookMs ?? 0),
  };
}

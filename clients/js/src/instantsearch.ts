/**
 * InstantSearch's search client on shopsearch: `search(requests)` → `{results}` in Algolia's shape,
 * `searchForFacetValues(requests)`, `clearCache()`. An `indexName` is a profile key, or
 * `profileKey:sortKey` for one of the profile's sort options.
 *
 * A render's requests become one `POST /v1/multi-search`. InstantSearch's helper asks, besides the
 * hits query, one facet-only query (`hitsPerPage: 0`) per refined disjunctive facet, without that
 * facet's own refinement, and more for the parent levels of a refined category menu. shopsearch
 * already counts each facet without its own field's filter, so such a query's facets are those of
 * the hits query whenever the two differ only in that field's top-level clause (and, for a category
 * tree, the hits query opens every path the other opens): those are answered from the hits query's
 * answer, not sent. Their `nbHits` is then the hits query's, flagged `exhaustiveNbHits: false`. When
 * merchandising rules applied to the hits query (a rule may hold only with the facet's own filter),
 * its facet-only queries are sent after all, in a second request.
 */

import { AnswerCache, stableKey } from "./cache";
import { ShopsearchError } from "./errors";
import { fieldOf, toFilter } from "./filters";
import { isTree, toAlgoliaResult, toFacetHits, type AlgoliaResult, type FacetHitsResult } from "./results";
import type { FacetValuesAnswer, Filter, MultiQuery, SearchAnswer, TreeNode } from "./types";

export interface AlgoliaRequest {
  indexName: string;
  params?: Record<string, unknown>;
  /** algoliasearch v5 style: `"facet"` for a facet value search, with `facet` its attribute. */
  type?: string;
  facet?: string;
  [param: string]: unknown;
}

export interface SearchClient {
  search(requests: AlgoliaRequest[] | { requests: AlgoliaRequest[] }): Promise<{ results: Array<AlgoliaResult | FacetHitsResult> }>;
  searchForFacetValues(requests: AlgoliaRequest[]): Promise<FacetHitsResult[]>;
  clearCache(): Promise<void>;
}

export type MultiSearch = (queries: MultiQuery[]) => Promise<{ results: Array<SearchAnswer | FacetValuesAnswer> }>;

const MAX_QUERIES = 20; // per multi-search
const DEFAULT_PRE = "<em>";
const DEFAULT_POST = "</em>";

interface Planned {
  kind: "search" | "facet";
  query: MultiQuery;
  key: string;
  indexName: string;
  params: Record<string, unknown>;
  attributes: string[] | null;
  maxValuesPerFacet?: number;
  pre: string;
  post: string;
  /** The hits query of the same batch whose answer holds this facet-only query's facets. */
  provider?: Planned;
}

function clamp(value: unknown, low: number, high: number): number | undefined {
  const n = Number(value);
  return value === undefined || value === null || !Number.isFinite(n) ? undefined : Math.min(high, Math.max(low, Math.trunc(n)));
}

function invalid(path: string, message: string): ShopsearchError {
  return new ShopsearchError({ status: 0, code: "VALIDATION_ERROR", message, details: [{ path, message }] });
}

/** What the server would be asked for one InstantSearch request, alone. */
function plan(request: AlgoliaRequest, i: number, forceFacet = false): Planned {
  const { indexName, params: nested, type, facet, ...flat } = request;
  const params: Record<string, unknown> = { ...flat, ...(nested ?? {}) };
  if (typeof indexName !== "string" || !indexName) throw invalid(`requests[${i}].indexName`, "an indexName (a profile key) is required");
  const colon = indexName.indexOf(":");
  const profileKey = colon < 0 ? indexName : indexName.slice(0, colon);
  const sort = colon < 0 ? undefined : indexName.slice(colon + 1) || undefined;
  const filters = toFilter(params, `requests[${i}].params`);
  const q = params.query === undefined || params.query === null ? "" : String(params.query);
  const pre = typeof params.highlightPreTag === "string" ? params.highlightPreTag : DEFAULT_PRE;
  const post = typeof params.highlightPostTag === "string" ? params.highlightPostTag : DEFAULT_POST;
  const userToken = typeof params.userToken === "string" && params.userToken ? params.userToken.slice(0, 200) : undefined;
  const base = { indexName, params, pre, post };

  const facetName = typeof facet === "string" ? facet : typeof params.facetName === "string" ? params.facetName : undefined;
  if (forceFacet || type === "facet") {
    if (!facetName) throw invalid(`requests[${i}].facet`, "a facet value search names its facet");
    const query: MultiQuery = {
      profileKey,
      q,
      ...(filters ? { filters } : {}),
      facetValues: {
        field: fieldOf(facetName).field,
        q: params.facetQuery === undefined ? "" : String(params.facetQuery),
        limit: clamp(params.maxFacetHits, 1, 100) ?? 10,
      },
    };
    return { kind: "facet", query, key: stableKey(query), attributes: [facetName], ...base };
  }

  const asked = params.facets === undefined ? [] : Array.isArray(params.facets) ? params.facets.map(String) : [String(params.facets)];
  const all = asked.includes("*");
  const fields = [...new Set(asked.map((a) => fieldOf(a).field))];
  const perPage = clamp(params.hitsPerPage, 0, 100);
  const query: MultiQuery = {
    profileKey,
    q,
    ...(sort ? { sort } : {}),
    ...(filters ? { filters } : {}),
    ...(all ? {} : { facets: fields }),
    page: (clamp(params.page, 0, 999) ?? 0) + 1,
    ...(perPage !== undefined ? { perPage } : {}),
    ...(userToken ? { userToken } : {}),
  };
  return {
    kind: "search",
    query,
    key: stableKey(query),
    attributes: all ? null : asked,
    maxValuesPerFacet: clamp(params.maxValuesPerFacet, 1, 1000),
    ...base,
  };
}

function without(filters: Filter | undefined, field: string): string {
  const rest = { ...(filters ?? {}) };
  delete rest[field];
  return stableKey(rest);
}

function paths(condition: unknown): string[] {
  return (Array.isArray(condition) ? condition : condition === undefined ? [] : [condition]).filter(
    (v): v is string => typeof v === "string",
  );
}

/**
 * Whether the facets of `sub` (a facet-only query) are those of `main`'s answer: the same profile
 * and text, `main` counts every field `sub` counts, and their filters differ at most in each such
 * field's top-level clause, where `main`'s category paths lie at or below `sub`'s.
 */
function answers(main: Planned, sub: Planned, separator: string): boolean {
  const m = main.query;
  const s = sub.query;
  if (main.kind !== "search" || sub.kind !== "search" || s.perPage !== 0 || m.perPage === 0) return false;
  if (m.profileKey !== s.profileKey || m.q !== s.q || !m.facets || !s.facets || !s.facets.length) return false;
  return s.facets.every((field) => {
    if (!m.facets!.includes(field) || without(m.filters, field) !== without(s.filters, field)) return false;
    const opened = paths(m.filters?.[field]);
    return paths(s.filters?.[field]).every((p) => opened.some((o) => o === p || o.startsWith(p + separator)));
  });
}

/** `answer`'s facets as `sub` would get them: its fields, each category tree opened only along `sub`'s paths. */
function derive(answer: SearchAnswer, sub: Planned, separator: string): SearchAnswer {
  const facets: SearchAnswer["facets"] = {};
  for (const field of sub.query.facets ?? []) {
    const buckets = answer.facets[field];
    if (!buckets) continue;
    if (!isTree(buckets)) {
      facets[field] = buckets;
      continue;
    }
    const wanted = paths(sub.query.filters?.[field]);
    const open = (path: string) => wanted.some((p) => p === path || p.startsWith(path + separator));
    const prune = (nodes: TreeNode[]): TreeNode[] =>
      nodes.map((node) => ({ ...node, children: open(node.path) ? prune(node.children) : [] }));
    facets[field] = prune(buckets);
  }
  return { ...answer, hits: [], page: 1, perPage: 0, facets, queryId: "", tookMs: 0 };
}

export function createSearchClient(
  multiSearch: MultiSearch,
  options: { cache?: { size?: number; ttl?: number } | false; hierarchySeparator?: string } = {},
): SearchClient {
  const separator = options.hierarchySeparator ?? " > ";
  const cache = new AnswerCache<SearchAnswer | FacetValuesAnswer>(
    options.cache === false ? 0 : options.cache?.size ?? 64,
    options.cache === false ? 0 : options.cache?.ttl ?? 120_000,
  );

  /** The server's answers for `queries` (keys), the cached ones from the cache, the rest in one request per 20. */
  async function fetchAnswers(planned: Planned[]): Promise<Map<string, SearchAnswer | FacetValuesAnswer>> {
    const found = new Map<string, SearchAnswer | FacetValuesAnswer>();
    const missing = new Map<string, MultiQuery>();
    for (const p of planned) {
      const cached = cache.get(p.key);
      if (cached) found.set(p.key, cached);
      else missing.set(p.key, p.query);
    }
    const keys = [...missing.keys()];
    const chunks: string[][] = [];
    for (let i = 0; i < keys.length; i += MAX_QUERIES) chunks.push(keys.slice(i, i + MAX_QUERIES));
    const answered = await Promise.all(chunks.map((chunk) => multiSearch(chunk.map((key) => missing.get(key)!))));
    chunks.forEach((chunk, c) =>
      chunk.forEach((key, i) => {
        const answer = answered[c].results[i];
        cache.set(key, answer);
        found.set(key, answer);
      }),
    );
    return found;
  }

  function shape(p: Planned, answer: SearchAnswer | FacetValuesAnswer, derived = false): AlgoliaResult | FacetHitsResult {
    if (p.kind === "facet") return toFacetHits(answer as FacetValuesAnswer, p.pre, p.post);
    return toAlgoliaResult(answer as SearchAnswer, {
      indexName: p.indexName,
      params: p.params,
      query: p.query.q ?? "",
      attributes: p.attributes,
      maxValuesPerFacet: p.maxValuesPerFacet,
      pre: p.pre,
      post: p.post,
      derived,
    });
  }

  async function run(planned: Planned[]): Promise<Array<AlgoliaResult | FacetHitsResult>> {
    // a facet-only query answered by a hits query of the same batch is not sent (unless cached as itself)
    for (const sub of planned) {
      if (sub.query.perPage !== 0 || cache.get(sub.key)) continue;
      sub.provider = planned.find((main) => main !== sub && answers(main, sub, separator));
    }
    const answers_ = await fetchAnswers(planned.filter((p) => !p.provider));
    // merchandising rules applied to the provider: a rule may hold only with the facet's own filter
    const unsure = planned.filter((p) => p.provider && (answers_.get(p.provider.key) as SearchAnswer).appliedRules?.length);
    if (unsure.length) {
      for (const p of unsure) p.provider = undefined;
      for (const [key, answer] of await fetchAnswers(unsure)) answers_.set(key, answer);
    }
    return planned.map((p) =>
      p.provider
        ? shape(p, derive(answers_.get(p.provider.key) as SearchAnswer, p, separator), true)
        : shape(p, answers_.get(p.key)!),
    );
  }

  return {
    async search(requests) {
      const list = Array.isArray(requests) ? requests : requests?.requests;
      if (!Array.isArray(list)) throw invalid("requests", "search takes a list of requests");
      const results = await run(list.map((request, i) => plan(request, i)));
      return { results };
    },
    async searchForFacetValues(requests) {
      const list = Array.isArray(requests) ? requests : [requests];
      return (await run(list.map((request, i) => plan(request, i, true)))) as FacetHitsResult[];
    },
    async clearCache() {
      cache.clear();
    },
  };
}

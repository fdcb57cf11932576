/**
 * shopsearch's JavaScript client (CONTRACT §9): the storefront routes, and `.searchClient` for
 * InstantSearch. No runtime dependency; runs in browsers and in Node 18+.
 *
 *     const client = shopsearch({ host: "https://search.example.com", apiKey: "ss_pk_…" });
 *     const answer = await client.search("pk_…", { q: "iphone", filters: { brand: ["Apple"] } });
 */

import { ShopsearchError } from "./errors";
import { createInsightsClient, type InsightsClient } from "./insights";
import { createSearchClient, type SearchClient } from "./instantsearch";
import { createTransport } from "./transport";
import type {
  ClientOptions,
  FacetValuesAnswer,
  FacetValuesBody,
  MultiQuery,
  MultiSearchAnswer,
  SearchAnswer,
  SearchBody,
  SearchEvent,
  SuggestAnswer,
  SuggestBody,
} from "./types";

export interface Client {
  /** `POST /v1/search/{profileKey}`. */
  search<TDocument = Record<string, unknown>>(profileKey: string, body?: SearchBody): Promise<SearchAnswer<TDocument>>;
  /** `POST /v1/multi-search`: 1 to 20 queries, answered in order; one refused query fails them all. */
  multiSearch(queries: MultiQuery[]): Promise<MultiSearchAnswer>;
  /** `POST /v1/search/{profileKey}/facet-values`: a facet's values matching what the shopper typed. */
  facetValues(profileKey: string, body: FacetValuesBody): Promise<FacetValuesAnswer>;
  /** `POST /v1/suggest/{suggestKey}`. */
  suggest(suggestKey: string, body: SuggestBody): Promise<SuggestAnswer>;
  /** `POST /v1/events`: clicks and conversions on hits, with the search answer's `queryId`. */
  sendEvents(events: SearchEvent[]): Promise<{ accepted: number }>;
  /** InstantSearch's search client (`instantsearch({ searchClient: client.searchClient, indexName: profileKey })`). */
  readonly searchClient: SearchClient;
  /** For InstantSearch's `insights` middleware: `insights: { insightsClient: client.insightsClient }`. */
  readonly insightsClient: InsightsClient;
}

const handle = (value: string, what: string): string => {
  if (typeof value !== "string" || !value) throw new TypeError(`shopsearch: a ${what} is required`);
  return encodeURIComponent(value);
};

export function shopsearch(options: ClientOptions): Client {
  const post = createTransport(options);
  const multiSearch = (queries: MultiQuery[]) => post<MultiSearchAnswer>("/v1/multi-search", { queries });
  const sendEvents = (events: SearchEvent[]) => post<{ accepted: number }>("/v1/events", { events }, { keepalive: true });
  return {
    search: (profileKey, body = {}) => post(`/v1/search/${handle(profileKey, "profile key")}`, body),
    multiSearch,
    facetValues: (profileKey, body) => post(`/v1/search/${handle(profileKey, "profile key")}/facet-values`, body),
    suggest: (suggestKey, body) => post(`/v1/suggest/${handle(suggestKey, "suggest key")}`, body),
    sendEvents,
    searchClient: createSearchClient(multiSearch as never, { cache: options.cache, hierarchySeparator: options.hierarchySeparator }),
    insightsClient: createInsightsClient(sendEvents),
  };
}

export default shopsearch;
export { ShopsearchError };
export { parseFilters, toFilter } from "./filters";
export type { ErrorDetail } from "./errors";
export type { AlgoliaRequest, SearchClient } from "./instantsearch";
export type { InsightsClient } from "./insights";
export type { AlgoliaHit, AlgoliaResult, FacetHitsResult } from "./results";
export * from "./types";

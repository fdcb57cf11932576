/** The shapes of shopsearch's storefront API (CONTRACT §5, §6, §9), as this client sends and reads them. */

/** A filter: values of one field OR, fields AND; `and`/`or` lists and `not` nest. */
export type Filter = { [field: string]: unknown };

export interface SearchBody {
  q?: string;
  filters?: Filter;
  /** Facets to count (default: the profile's); `[]` counts none. */
  facets?: string[];
  /** The `key` of one of the profile's sort options. */
  sort?: string;
  /** 1-based. */
  page?: number;
  /** 0: facets and `total` only. */
  perPage?: number;
  userToken?: string;
  /** The point a sort option `FIELD:near` (a geopoint field) orders by distance from. */
  near?: { lat: number; lng: number };
  /** The query's own vector (1-2048 finite numbers), for a profile whose `semantic.field` holds shop-supplied vectors. */
  vector?: number[];
  /** Rank by this document's vector; it is left out of the hits (404 when it does not exist; `q` must be empty). */
  similarTo?: string;
}

export interface Hit<TDocument = Record<string, unknown>> {
  id: string;
  score: number;
  document: TDocument;
  /** Field -> HTML-escaped text with the matched words in `<em>`. */
  highlights: Record<string, string>;
  /** With the profile's `distinct`: how many documents share this hit's value. */
  groupSize?: number;
  /** With a sort option `FIELD:near`: meters from `near` (`null`: the document has no point). */
  distanceM?: number | null;
}

export interface TermsBucket {
  value: string | number | boolean;
  count: number;
}

export interface RangeBucket {
  from: number | string | null;
  to: number | string | null;
  label: string | null;
  count: number;
}

/** A node of a category tree (a `hierarchy` facet). */
export interface TreeNode {
  value: string;
  path: string;
  level: number;
  count: number;
  children: TreeNode[];
}

export type FacetAnswer = TermsBucket[] | RangeBucket[] | TreeNode[];

export interface SearchAnswer<TDocument = Record<string, unknown>> {
  hits: Hit<TDocument>[];
  total: number;
  page: number;
  perPage: number;
  facets: Record<string, FacetAnswer>;
  sort: string | null;
  appliedRules: string[];
  queryId: string;
  tookMs: number;
  /** A merchandising rule's redirect. */
  redirect?: string;
  /** The applied rules' `userData`, in rule order. */
  userData?: unknown[];
}

export interface FacetValuesAsk {
  field: string;
  q?: string;
  /** 1-100, default 10. */
  limit?: number;
}

export interface FacetValuesBody extends FacetValuesAsk {
  /** The text of the current search: counts are over its matches. */
  query?: string;
  filters?: Filter;
}

export interface FacetValue {
  value: string;
  /** HTML-escaped, the typed part in `<em>`. */
  highlighted: string;
  count: number;
}

export interface FacetValuesAnswer {
  values: FacetValue[];
  tookMs: number;
}

/** One query of a multi-search: a search body naming its profile, or a facet value search. */
export interface MultiQuery extends SearchBody {
  profileKey: string;
  facetValues?: FacetValuesAsk;
}

export interface MultiSearchAnswer {
  results: Array<SearchAnswer | FacetValuesAnswer>;
}

export interface SuggestBody {
  q: string;
  limit?: number;
}

export interface Suggestion {
  text: string;
  highlighted: string;
  /** `custom`, `popular`, or the field it came from. */
  source: string;
}

export interface SuggestAnswer {
  suggestions: Suggestion[];
  products?: Hit[] | null;
  tookMs: number;
}

export interface SearchEvent {
  type: "click" | "conversion";
  /** The `queryId` of the search answer the shopper acted on. */
  queryId: string;
  documentId: string;
  /** 1-based position of the hit. */
  position?: number;
  userToken?: string;
}

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

export interface ClientOptions {
  /** Where the API answers, e.g. `https://search.example.com` (a path prefix is kept). */
  host: string;
  /** A public key (`ss_pk_…`) on shop pages, or a secret key on servers. */
  apiKey: string;
  /** Extra request headers (servers only: a browser sends Origin itself, and CORS allows no others). */
  headers?: Record<string, string>;
  /** The fetch to use (default: the global one). */
  fetch?: FetchLike;
  /** Milliseconds before a request is abandoned with a `TIMEOUT` error (default 15000). */
  timeout?: number;
  /** The search client's answer cache: entries and milliseconds (default 64 and 120000); `false`: none. */
  cache?: { size?: number; ttl?: number } | false;
  /** The separator of category paths in `hierarchy` facets (default `" > "`, as the server's). */
  hierarchySeparator?: string;
}

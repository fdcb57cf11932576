/**
 * Algolia's filter parameters (`facetFilters`, `numericFilters`, `filters`) as shopsearch's FILTER JSON.
 *
 * The server counts a facet without its own field's top-level clause (disjunctive counts). So what
 * InstantSearch means disjunctively goes top-level, one clause per field: an OR group of one field
 * (`[["brand:Apple", "brand:Sony"]]`), a category path (`categories.lvl1:A > B`), a numeric range
 * (`price>=10`, `price<=100`). What it means conjunctively (a plain string `brand:Apple`, an
 * exclusion `brand:-Apple`, a group across fields, a `filters` expression) goes under `and`, where
 * it narrows every facet's counts, as Algolia counts them.
 */

import { ShopsearchError } from "./errors";
import type { Filter } from "./types";

export interface FilterParams {
  facetFilters?: unknown;
  numericFilters?: unknown;
  filters?: unknown;
  tagFilters?: unknown;
}

/** `categories.lvl2` names level 2 of the category tree in field `categories`. */
export function fieldOf(attribute: string): { field: string; level: number | null } {
  const match = /^(.+)\.lvl(\d+)$/.exec(attribute);
  return match ? { field: match[1], level: Number(match[2]) } : { field: attribute, level: null };
}

const OPERATORS = new Set(["and", "or", "not"]);

function invalid(path: string, message: string): ShopsearchError {
  return new ShopsearchError({ status: 0, code: "VALIDATION_ERROR", message, details: [{ path, message }] });
}

function asList(value: unknown): unknown[] {
  if (value === undefined || value === null || value === "") return [];
  return Array.isArray(value) ? value : [value];
}

interface FacetTerm {
  field: string;
  hierarchy: boolean;
  value: string;
  negated: boolean;
}

/** `attr:value`, `attr:-value` (excluded), `attr:\-value` (a value starting with a dash). */
function facetTerm(text: unknown, path: string): FacetTerm {
  if (typeof text !== "string") throw invalid(path, "a facet filter is a string `attribute:value`");
  const at = text.indexOf(":");
  if (at <= 0) throw invalid(path, `${JSON.stringify(text)} is not \`attribute:value\``);
  let attribute = text.slice(0, at).trim();
  if (attribute.length > 1 && attribute.startsWith('"') && attribute.endsWith('"')) attribute = attribute.slice(1, -1);
  let value = text.slice(at + 1);
  let negated = false;
  if (value.startsWith("-")) {
    negated = true;
    value = value.slice(1);
  } else if (value.startsWith("\\-")) {
    value = value.slice(1);
  }
  const { field, level } = fieldOf(attribute);
  return { field, hierarchy: level !== null, value, negated };
}

function termFilter(term: FacetTerm): Filter {
  const clause = { [term.field]: [term.value] };
  return term.negated ? { not: clause } : clause;
}

type NumericOp = "gt" | "gte" | "lt" | "lte" | "eq" | "ne";

interface NumericTerm {
  field: string;
  op: NumericOp;
  value: number;
  upper?: number; // `attr:low TO high`
}

const NUMERIC = /^\s*"?([^"<>=!:]+?)"?\s*(<=|>=|!=|<|>|=|:)\s*(.+?)\s*$/;
const OP_NAMES: Record<string, NumericOp> = { "<": "lt", "<=": "lte", ">": "gt", ">=": "gte", "=": "eq", "!=": "ne" };

function number(text: string, path: string): number {
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value)) throw invalid(path, `${JSON.stringify(text)} is not a number`);
  return value;
}

/** `price>=10`, `price=5`, `price!=5`, `price:10 TO 100`. */
function numericTerm(text: unknown, path: string): NumericTerm {
  if (typeof text !== "string") throw invalid(path, "a numeric filter is a string such as `price>=10`");
  const match = NUMERIC.exec(text);
  if (!match) throw invalid(path, `${JSON.stringify(text)} is not \`attribute<op>number\``);
  const field = fieldOf(match[1].trim()).field;
  if (match[2] === ":") {
    const range = /^(\S+)\s+TO\s+(\S+)$/.exec(match[3]);
    if (!range) throw invalid(path, `${JSON.stringify(text)}: use \`attribute:low TO high\``);
    return { field, op: "gte", value: number(range[1], path), upper: number(range[2], path) };
  }
  return { field, op: OP_NAMES[match[2]], value: number(match[3], path) };
}

function numericFilter(term: NumericTerm): Filter {
  if (term.upper !== undefined) return { [term.field]: { gte: term.value, lte: term.upper } };
  if (term.op === "eq") return { [term.field]: [term.value] };
  if (term.op === "ne") return { not: { [term.field]: [term.value] } };
  return { [term.field]: { [term.op]: term.value } };
}

/** The FILTER for a request's parameters (undefined when it filters nothing). `path` prefixes error paths. */
export function toFilter(params: FilterParams, path = "params"): Filter | undefined {
  const top: Filter = {};
  const and: Filter[] = [];
  const putTop = (field: string, condition: unknown) => {
    if (field in top || OPERATORS.has(field)) and.push({ [field]: condition });
    else top[field] = condition;
  };

  asList(params.facetFilters).forEach((group, i) => {
    const at = `${path}.facetFilters[${i}]`;
    if (Array.isArray(group)) {
      const terms = group.map((item, j) => facetTerm(item, `${at}[${j}]`));
      if (!terms.length) return;
      const field = terms[0].field;
      if (terms.every((t) => t.field === field && !t.negated)) {
        putTop(field, [...new Set(terms.map((t) => t.value))].sort());
      } else {
        and.push(terms.length === 1 ? termFilter(terms[0]) : { or: terms.map(termFilter) });
      }
      return;
    }
    const term = facetTerm(group, at);
    if (term.hierarchy && !term.negated) putTop(term.field, [term.value]); // a category path: counted disjunctively
    else and.push(termFilter(term));
  });

  const numeric = new Map<string, NumericTerm[]>();
  asList(params.numericFilters).forEach((group, i) => {
    const at = `${path}.numericFilters[${i}]`;
    if (Array.isArray(group)) {
      const terms = group.map((item, j) => numericFilter(numericTerm(item, `${at}[${j}]`)));
      if (terms.length) and.push(terms.length === 1 ? terms[0] : { or: terms });
      return;
    }
    const term = numericTerm(group, at);
    numeric.set(term.field, [...(numeric.get(term.field) ?? []), term]);
  });
  for (const [field, terms] of numeric) {
    const range: Record<string, number> = {};
    for (const term of terms) {
      const bound = term.upper === undefined && ["gt", "gte", "lt", "lte"].includes(term.op);
      if (bound && !(term.op in range)) range[term.op] = term.value;
      else and.push(numericFilter(term));
    }
    if (Object.keys(range).length) putTop(field, range);
  }

  if (params.filters !== undefined && params.filters !== null && params.filters !== "") {
    if (typeof params.filters !== "string") throw invalid(`${path}.filters`, "`filters` is a string expression");
    const parsed = parseFilters(params.filters, `${path}.filters`);
    if (parsed) and.push(...(Array.isArray(parsed.and) && Object.keys(parsed).length === 1 ? (parsed.and as Filter[]) : [parsed]));
  }

  const tags = asList(params.tagFilters).filter((t) => !(Array.isArray(t) && t.length === 0));
  if (tags.length) throw invalid(`${path}.tagFilters`, "tagFilters are not supported: filter on a field with facetFilters");

  if (!Object.keys(top).length && !and.length) return undefined;
  return and.length ? { ...top, and } : top;
}

// --------------------------------------------------------------------------- `filters` expressions

type Token = { kind: "(" | ")" | "op" | "word" | "string" | "keyword"; text: string; at: number };

const KEYWORDS = new Set(["AND", "OR", "NOT", "TO"]);

function tokenize(source: string, path: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === "(" || c === ")") {
      tokens.push({ kind: c, text: c, at: i++ });
    } else if (c === '"' || c === "'") {
      const start = i++;
      let text = "";
      while (i < source.length && source[i] !== c) {
        if (source[i] === "\\" && i + 1 < source.length) i++;
        text += source[i++];
      }
      if (i >= source.length) throw invalid(path, `unclosed quote at ${start}`);
      i++;
      tokens.push({ kind: "string", text, at: start });
    } else if ("<>=!:".includes(c)) {
      const two = source.slice(i, i + 2);
      const op = ["<=", ">=", "!="].includes(two) ? two : c;
      if (op === "!") throw invalid(path, `unexpected "!" at ${i}`);
      tokens.push({ kind: "op", text: op, at: i });
      i += op.length;
    } else {
      const start = i;
      while (i < source.length && !/[\s()"'<>=!:]/.test(source[i])) i++;
      const text = source.slice(start, i);
      tokens.push({ kind: KEYWORDS.has(text) ? "keyword" : "word", text, at: start });
    }
  }
  return tokens;
}

/**
 * An Algolia `filters` expression as a FILTER: `attr:value`, `attr:"two words"`, `attr:low TO high`,
 * `attr >= n` (`<`, `<=`, `=`, `!=`, `>`), `AND`, `OR`, `NOT` and parentheses (NOT before AND before OR).
 */
export function parseFilters(source: string, path = "filters"): Filter | undefined {
  const tokens = tokenize(source, path);
  let at = 0;
  const peek = () => tokens[at];
  const fail = (message: string): never => {
    throw invalid(path, `${message} at ${peek()?.at ?? source.length} in ${JSON.stringify(source)}`);
  };
  const isKeyword = (word: string) => peek()?.kind === "keyword" && peek().text === word;

  const value = (): string => {
    const token = peek();
    if (!token || (token.kind !== "word" && token.kind !== "string")) return fail("expected a value");
    at++;
    return token.text;
  };

  const condition = (): Filter => {
    const field = fieldOf(value()).field;
    const op = peek();
    if (!op || op.kind !== "op") return fail("expected `:` or a comparison");
    at++;
    if (op.text === ":") {
      const first = value();
      if (isKeyword("TO")) {
        at++;
        return { [field]: { gte: number(first, path), lte: number(value(), path) } };
      }
      return { [field]: [first] };
    }
    const n = number(value(), path);
    return numericFilter({ field, op: OP_NAMES[op.text], value: n });
  };

  const unary = (): Filter => {
    if (isKeyword("NOT")) {
      at++;
      return { not: unary() };
    }
    if (peek()?.kind === "(") {
      at++;
      const inner = or();
      if (peek()?.kind !== ")") return fail("expected `)`");
      at++;
      return inner;
    }
    return condition();
  };

  const joined = (word: "AND" | "OR", next: () => Filter): Filter => {
    const items = [next()];
    while (isKeyword(word)) {
      at++;
      items.push(next());
    }
    const key = word.toLowerCase();
    const flat = items.flatMap((item) => (Object.keys(item).length === 1 && Array.isArray(item[key]) ? (item[key] as Filter[]) : [item]));
    return flat.length === 1 ? flat[0] : { [key]: flat };
  };
  const and = (): Filter => joined("AND", unary);
  const or = (): Filter => joined("OR", and);

  if (!tokens.length) return undefined;
  const result = or();
  if (at < tokens.length) fail("unexpected text");
  return result;
}

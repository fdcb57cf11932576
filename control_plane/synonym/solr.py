"""Solr synonyms text (``SynonymGraphFilter`` format), read and written.

* ``a, b, c`` — multiway: each term finds the others;
* ``a, b => c, d`` — oneway: ``a`` and ``b`` each also find ``c`` and ``d`` (one entry per input);
* blank lines and lines starting with ``#`` are skipped; ``\\,`` and ``\\=>`` escape a comma and
  an arrow inside a term, ``\\\\`` a backslash.

Export writes disabled entries as ``# disabled: …`` comments, so re-importing an export keeps
exactly the enabled ones.
"""

from __future__ import annotations

import re
from typing import Any

_ARROW = re.compile(r"(?<!\\)=>")
_COMMA = re.compile(r"(?<!\\),")
_UNESCAPE = re.compile(r"\\(.)")


class TooManyEntries(ValueError):
    """More entries than the caller allows: reading stopped there (its ``count`` at least)."""

    def __init__(self, count: int) -> None:
        super().__init__(f"more than {count - 1} entries")
        self.count = count


class SolrLineError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


def _terms(side: str, line: int, max_terms: int, max_chars: int) -> list[str]:
    # counted before anything is split: a line of a million terms costs one pass over its commas
    if side.count(",") - side.count("\\,") >= max_terms:
        raise SolrLineError(line, f"at most {max_terms} terms in an entry")
    terms = [_UNESCAPE.sub(r"\1", t).strip() for t in _COMMA.split(side)]
    if any(not t for t in terms):
        raise SolrLineError(line, "empty term (two commas in a row, or a comma at an end)")
    if any(len(t) > max_chars for t in terms):
        raise SolrLineError(line, f"a term of at most {max_chars} characters")
    return terms


def parse(text: str, *, max_terms: int = 50, max_chars: int = 100, max_entries: int | None = None,
          max_total_terms: int | None = None) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, entry)`` per entry; the first malformed line raises :class:`SolrLineError`
    (also the line where the terms in all pass ``max_total_terms``), an entry past ``max_entries``
    :class:`TooManyEntries`: a text past a limit is not read to its end."""
    out: list[tuple[int, dict[str, Any]]] = []
    total_terms = 0

    def add(number: int, entry: dict[str, Any]) -> None:
        out.append((number, entry))
        if max_entries is not None and len(out) > max_entries:
            raise TooManyEntries(len(out))

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        total_terms += line.count(",") + 1
        if max_total_terms is not None and total_terms > max_total_terms:
            raise SolrLineError(number, f"at most {max_total_terms} terms in one import")
        sides = _ARROW.split(line)
        if len(sides) > 2:
            raise SolrLineError(number, "more than one '=>'")
        if len(sides) == 2:
            if not sides[0].strip() or not sides[1].strip():
                raise SolrLineError(number, "'=>' needs terms on both sides")
            targets = _terms(sides[1], number, max_terms, max_chars)
            for term in _terms(sides[0], number, max_terms, max_chars):
                add(number, {"type": "oneway", "input": term, "synonyms": targets})
            continue
        terms = _terms(line, number, max_terms, max_chars)
        if len(terms) < 2:
            raise SolrLineError(number, "a line needs two or more terms separated by commas, or 'input => synonyms'")
        add(number, {"type": "multiway", "terms": terms})
    return out


def _escape(term: str) -> str:
    return term.replace("\\", "\\\\").replace(",", "\\,").replace("=>", "\\=>")


def line_of(entry: dict[str, Any]) -> str:
    if entry["type"] == "multiway":
        text = ", ".join(_escape(t) for t in entry["terms"])
    else:
        text = f"{_escape(entry['input'])} => " + ", ".join(_escape(t) for t in entry["synonyms"])
    return text if entry.get("enabled", True) else f"# disabled: {text}"


def render(entries: list[dict[str, Any]]) -> str:
    return "".join(line_of(e) + "\n" for e in entries)

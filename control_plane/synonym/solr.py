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


class SolrLineError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


def _terms(side: str, line: int) -> list[str]:
    terms = [_UNESCAPE.sub(r"\1", t).strip() for t in _COMMA.split(side)]
    if any(not t for t in terms):
        raise SolrLineError(line, "empty term (two commas in a row, or a comma at an end)")
    return terms


def parse(text: str) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, entry)`` per entry; the first malformed line raises :class:`SolrLineError`."""
    out: list[tuple[int, dict[str, Any]]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        sides = _ARROW.split(line)
        if len(sides) > 2:
            raise SolrLineError(number, "more than one '=>'")
        if len(sides) == 2:
            if not sides[0].strip() or not sides[1].strip():
                raise SolrLineError(number, "'=>' needs terms on both sides")
            targets = _terms(sides[1], number)
            for term in _terms(sides[0], number):
                out.append((number, {"type": "oneway", "input": term, "synonyms": targets}))
            continue
        terms = _terms(line, number)
        if len(terms) < 2:
            raise SolrLineError(number, "a line needs two or more terms separated by commas, or 'input => synonyms'")
        out.append((number, {"type": "multiway", "terms": terms}))
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

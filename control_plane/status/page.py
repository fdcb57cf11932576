"""The human status page at ``/status``: the answer of ``GET /v1/status`` as plain HTML (no script)."""

from __future__ import annotations

from html import escape
from typing import Any

LABELS = {"operational": "Operational", "degraded": "Degraded", "down": "Down"}
NAMES = {"search": "Search", "indexing": "Indexing", "dashboard": "Dashboard and API", "mcp": "MCP server"}
COLORS = {"operational": "#1a7f37", "degraded": "#9a6700", "down": "#cf222e"}
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


def render(answer: dict[str, Any]) -> str:
    overall = answer["status"]
    rows = "\n".join(
        f'      <tr><th scope="row">{escape(NAMES.get(s["name"], s["name"]))}</th>'
        f'<td class="{escape(s["state"])}">{escape(LABELS.get(s["state"], s["state"]))}</td></tr>'
        for s in answer["services"]
    )
    styles = " ".join(f".{state} {{ color: {color}; font-weight: 600; }}" for state, color in COLORS.items())
    return f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta http-equiv="refresh" content="15">
  <title>shopsearch status: {escape(LABELS.get(overall, overall))}</title>
  <style>
    body {{ font-family: system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem; }}
    table {{ border-collapse: collapse; width: 100%; }}
    th, td {{ text-align: left; padding: .5rem; border-bottom: 1px solid #ddd; }}
    {styles}
  </style>
</head>
<body>
  <h1>shopsearch status</h1>
  <p id="overall">Overall: <span class="{escape(overall)}">{escape(LABELS.get(overall, overall))}</span></p>
  <table>
    <thead><tr><th scope="col">Service</th><th scope="col">State</th></tr></thead>
    <tbody>
{rows}
    </tbody>
  </table>
  <p>Checked at <time datetime="{escape(answer["checkedAt"])}">{escape(answer["checkedAt"])}</time> (UTC).
  The state is checked at most every 15 seconds; this page reloads itself.</p>
</body>
</html>
"""

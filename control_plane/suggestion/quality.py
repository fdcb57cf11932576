"""Which shoppers' queries may become suggestions: popular queries are typed by anyone, and a
suggestion is shown to everyone, so a query is offered only when several distinct clients searched
it (``MIN_CLIENTS``, counted by ``control_plane.analytics``) and it reads like a query — no markup
or control characters, and at least one word that is not a stop word (``"the of"``, ``"!!!"`` and
``"<b>x</b>"`` are never suggested)."""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from whoosh.lang import NoStopWords, stopwords_for_language

from control_plane.suggestion.matcher import fold, words_of

#: distinct clients (addresses, or a secret key's userTokens) a popular query needs
MIN_CLIENTS = 3

_MARKUP = re.compile(r"[<>{}`\\]|&#?\w+;|(?i:javascript|data|vbscript):")


@cache
def _stop_words(language: str) -> frozenset[str]:
    try:
        words = stopwords_for_language(language)
    except (NoStopWords, KeyError, ValueError):
        words = frozenset()
    return frozenset(fold(w) for w in words)


def acceptable(text: str, language: str) -> bool:
    """Whether a shopper's query reads like one (see the module's doc)."""
    if _MARKUP.search(text) or any(unicodedata.category(c) in ("Cc", "Cf") for c in text):
        return False
    stop = _stop_words(language or "en")
    return any(word not in stop for word in words_of(text))

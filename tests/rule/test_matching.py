"""Rule matching and the combined effects of applied rules, without an app."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from control_plane.rule.matching import RuleSet, compile_rule, effects_of, filters_hold

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def rule(rule_id: str, position: int, conditions=(), **body):
    body.setdefault("consequence", {"hide": [rule_id]})
    body["conditions"] = [{"pattern": p, "anchoring": a} for p, a in conditions]
    return compile_rule(rule_id, rule_id, body.pop("enabled", True), position, body)


RULES = RuleSet([
    rule("is", 1, [("iphone", "is")]),
    rule("starts", 2, [("cheap", "startsWith")]),
    rule("ends", 3, [("case", "endsWith")]),
    rule("contains", 4, [("galaxy s7", "contains")]),
    rule("always", 5),
    rule("tv-filter", 6, [("tv", "is")], filters={"brand": ["Samsung"]}),
])


def matched(q: str, filters=None) -> list[str]:
    return [r.id for r in RULES.matching(q, filters)]


def test_anchorings_match_words_of_the_normalized_query():
    assert matched("iPhone") == ["is", "always"]
    assert matched("iphone 7") == ["always"]
    assert matched("Cheap phones") == ["starts", "always"]
    assert matched("cheapest phone") == ["always"]  # whole words only
    assert matched("iphone cases") == ["ends", "always"]  # plural folded
    assert matched("new samsung galaxy s7 edge") == ["contains", "always"]


def test_filter_conditions_need_the_search_to_filter_on_those_values():
    assert "tv-filter" not in matched("tv")
    assert "tv-filter" in matched("tv", {"brand": ["Samsung", "LG"]})
    assert "tv-filter" not in matched("tv", {"brand": ["LG"]})
    assert filters_hold({"price": {"gte": 10}}, {"price": {"gte": 10}})
    assert not filters_hold({"price": {"gte": 20}}, {"price": {"gte": 10}})


def test_validity_windows_and_the_switch():
    past = rule("past", 1, [("x", "is")], validity=[{"from": None, "until": (NOW - timedelta(days=1)).isoformat()}])
    future = rule("future", 2, [("x", "is")], validity=[{"from": (NOW + timedelta(days=1)).isoformat(), "until": None}])
    now = rule("now", 3, [("x", "is")], validity=[{"from": (NOW - timedelta(hours=1)).isoformat(),
                                                    "until": (NOW + timedelta(hours=1)).isoformat()}])
    off = rule("off", 4, [("x", "is")], enabled=False)
    rules = RuleSet([past, future, now, off])
    assert [r.id for r in rules.matching("x", None)] == ["past", "future", "now", "off"]
    assert [r.id for r in rules.applying("x", None, NOW)] == ["now"]


def test_effects_combine_in_position_order():
    first = rule("a", 1, consequence={"pin": [{"id": "d1", "position": 1}], "replaceQuery": "first",
                                      "redirect": "/a", "userData": {"banner": "a"}, "hide": ["h1"]})
    second = rule("b", 2, consequence={"pin": [{"id": "d2", "position": 1}, {"id": "h1", "position": 5}],
                                       "replaceQuery": "second", "userData": {"banner": "b"},
                                       "boost": [{"filters": {"brand": ["X"]}, "weight": 2}],
                                       "bury": [{"filters": {"brand": ["Y"]}, "weight": 1}],
                                       "addFilters": {"inStock": True}})
    effects = effects_of([first, second])
    assert effects.applied == ["a", "b"]
    assert effects.pins == [("d1", 1), ("d2", 2)]  # d2 moves to the next free position; h1 is hidden
    assert effects.hide == {"h1"}
    assert effects.replace_query == "first" and effects.redirect == "/a"
    assert effects.user_data == [{"banner": "a"}, {"banner": "b"}]
    assert [(b.filters, b.weight) for b in effects.boosts] == [({"brand": ["X"]}, 2.0), ({"brand": ["Y"]}, -1.0)]
    assert effects.add_filters == [{"inStock": True}]


def test_many_rules_are_looked_up_not_scanned():
    rules = RuleSet([rule(f"r{i}", i, [(f"word{i}", "contains")]) for i in range(1, 2001)])
    assert [r.id for r in rules.matching("a word1500 b", None)] == ["r1500"]

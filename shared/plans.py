"""Plans and their quotas (CONTRACT §2). Pure data: the index, document and search code call
:func:`plan_limits` to enforce them with a clear ``QUOTA_EXCEEDED`` / ``RATE_LIMITED`` error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

PlanName = Literal["free", "starter", "pro", "enterprise"]
PLAN_NAMES: tuple[str, ...] = get_args(PlanName)
DEFAULT_PLAN: PlanName = "free"


@dataclass(frozen=True)
class PlanLimits:
    plan: str
    max_indices_per_project: int
    max_documents_per_index: int
    max_searches_per_second: int
    max_synonyms_per_index: int
    max_rules_per_index: int

    def as_dict(self) -> dict[str, int | str]:
        return {
            "plan": self.plan,
            "maxIndicesPerProject": self.max_indices_per_project,
            "maxDocumentsPerIndex": self.max_documents_per_index,
            "maxSearchesPerSecond": self.max_searches_per_second,
            "maxSynonymsPerIndex": self.max_synonyms_per_index,
            "maxRulesPerIndex": self.max_rules_per_index,
        }


PLANS: dict[str, PlanLimits] = {
    "free": PlanLimits("free", max_indices_per_project=3, max_documents_per_index=10_000, max_searches_per_second=10,
                       max_synonyms_per_index=500, max_rules_per_index=50),
    "starter": PlanLimits("starter", max_indices_per_project=10, max_documents_per_index=100_000,
                          max_searches_per_second=50, max_synonyms_per_index=5_000, max_rules_per_index=500),
    "pro": PlanLimits("pro", max_indices_per_project=50, max_documents_per_index=1_000_000,
                      max_searches_per_second=250, max_synonyms_per_index=20_000, max_rules_per_index=2_000),
    "enterprise": PlanLimits("enterprise", max_indices_per_project=500, max_documents_per_index=50_000_000,
                             max_searches_per_second=20_000, max_synonyms_per_index=100_000,
                             max_rules_per_index=10_000),
}


def is_plan(name: str) -> bool:
    return name in PLANS


def plan_limits(plan: str | None) -> PlanLimits:
    """The quotas of ``plan``. An unknown or missing plan name (old rows) gets the free plan's limits."""
    return PLANS.get(plan or DEFAULT_PLAN, PLANS[DEFAULT_PLAN])

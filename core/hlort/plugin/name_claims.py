"""Who gets a platform name that several installed plugins declare.

The rule, independent of entry-point or install order: a platform name ``NAME`` belongs to the
distribution called ``hlort-NAME`` (``hlort-cpu`` owns ``cpu``; the built-in interpreter owns
``interpreter``). When several plugins declare one name and exactly one of them comes from its
owner, that one is registered and every other is rejected, each with its own record naming the
owner. When none (or more than one) is the owner, all are rejected: hlort never guesses which
of two strangers should run a user's programs. Each rejected claimant keeps a record of its own,
so ``hlort devices`` lists all of them.
"""

from __future__ import annotations

import re
from typing import Any

from hlort.lazy_dataclass import dataclass


@dataclass
class Claim:
    """One plugin object and where it came from."""

    plugin: Any
    source: str
    distribution: str | None = None  # None for plugins registered in process
    builtin: bool = False

    @property
    def name(self) -> Any:
        return getattr(self.plugin, "name", None)

    def owns(self, name: str) -> bool:
        if self.builtin:
            return True
        dist = self.distribution
        return dist is not None and re.sub(r"[-_.]+", "-", dist.lower()) == f"hlort-{name}"


@dataclass
class Refusal:
    claim: Claim
    message: str
    fix: str


def resolve(claims: list[Claim]) -> tuple[list[Claim], list[Refusal]]:
    """The claims to register (in the given order) and the ones refused, with reasons."""
    by_name: dict[Any, list[Claim]] = {}
    for claim in claims:
        key = claim.name if isinstance(claim.name, str) else id(claim)
        by_name.setdefault(key, []).append(claim)
    winners: list[Claim] = []
    refused: list[Refusal] = []
    for name, group in by_name.items():
        if len(group) == 1:
            winners.append(group[0])
            continue
        owners = [c for c in group if c.owns(name)]
        sources = "; ".join(c.source for c in group)
        if len(owners) == 1:
            owner = owners[0]
            winners.append(owner)
            for claim in group:
                if claim is not owner:
                    refused.append(
                        Refusal(
                            claim,
                            f"declares platform {name!r}, which belongs to {owner.source} (a "
                            f"platform name belongs to the distribution hlort-{name})",
                            f"rename this plugin's platform, or uninstall "
                            f"{claim.distribution or 'it'}",
                        )
                    )
            continue
        for claim in group:
            refused.append(
                Refusal(
                    claim,
                    f"platform {name!r} is declared by {len(group)} plugins ({sources}) and "
                    f"{'none' if not owners else 'more than one'} is the distribution "
                    f"hlort-{name}, so none of them is used",
                    "uninstall all but one of them, or rename their platforms",
                )
            )
    return winners, refused

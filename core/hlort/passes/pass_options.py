"""PassOptions: what a backend asks of the core pipeline (fusion policy, passes around it)."""

from __future__ import annotations

from dataclasses import field

from hlort.lazy_dataclass import dataclass
from hlort.passes.fusion_policy import FusionPolicy
from hlort.passes.pass_base import Pass


@dataclass(frozen=True)
class PassOptions:
    """Returned by ``Client.pass_options()``: ``before`` runs ahead of the core passes, ``after``
    after fusion and before scheduling; ``policy`` shapes the fusions the backend receives."""

    policy: FusionPolicy = field(default_factory=FusionPolicy)
    before: tuple[Pass, ...] = ()
    after: tuple[Pass, ...] = ()

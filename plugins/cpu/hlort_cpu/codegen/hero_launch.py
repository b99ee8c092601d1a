"""How the runtime launches a hero kernel: the tail of its ``KernelInfo``.

Kept apart so the hero emitters (reduce-window, scatter, select-and-scatter) and their
dispatcher share it without importing each other.
"""

from __future__ import annotations

from typing import NamedTuple

from hlort.shape import ArrayShape


class HeroLaunch(NamedTuple):
    output_shapes: tuple[ArrayShape, ...]
    extent: int
    elements_per_iteration: int
    split: bool = False  # iterations [0, extent) in parallel, then iteration ``extent`` alone

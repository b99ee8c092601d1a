"""pluggy hook specifications: the second way (besides a Plugin object) to register backends.

An entry point of group ``hlort.plugins`` may name a module or object carrying hook
implementations instead of a :class:`~hlort.plugin.api.Plugin`::

    from hlort.plugin.hookspecs import hookimpl

    @hookimpl
    def hlort_register_plugin():
        return MyPlugin()            # or a list of plugins, or None when nothing applies

The registry calls each implementation separately, inside its own try/except, so one failing
hook never hides the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from hlort.plugin.api import Plugin

PROJECT = "hlort"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class PluginHookSpecs:
    """The hooks hlort calls."""

    @hookspec
    def hlort_register_plugin(self) -> Plugin | Sequence[Plugin] | None:
        """Return the plugin(s) this distribution provides (cheap: no heavy imports)."""


def new_plugin_manager() -> pluggy.PluginManager:
    manager = pluggy.PluginManager(PROJECT)
    manager.add_hookspecs(PluginHookSpecs)
    return manager

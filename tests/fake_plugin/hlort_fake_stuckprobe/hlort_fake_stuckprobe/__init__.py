"""A plugin whose probe() blocks (a driver call that never answers)."""

import threading

from hlort.plugin.api import Plugin

NEVER = threading.Event()


class StuckProbePlugin(Plugin):
    name = "fakestuckprobe"
    api_version = (1, 0)
    priority = 90

    def probe(self):
        NEVER.wait()

    def create_client(self, options=None):  # pragma: no cover - never reached
        raise AssertionError("a plugin whose probe never answered must not be started")


plugin = StuckProbePlugin()

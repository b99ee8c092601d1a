"""A plugin that probes fine but whose create_client() blocks (a device that never opens)."""

import threading

from hlort.plugin.api import Plugin

NEVER = threading.Event()


class StuckClientPlugin(Plugin):
    name = "fakestuckclient"
    api_version = (1, 0)
    priority = 95  # preferred over cpu: the default backend must still be found

    def create_client(self, options=None):
        NEVER.wait()


plugin = StuckClientPlugin()

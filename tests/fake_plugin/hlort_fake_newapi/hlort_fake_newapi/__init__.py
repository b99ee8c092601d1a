"""A plugin written for plugin API 2.0, which this core (1.x) must reject at load time."""

from hlort.plugin.api import Plugin


class NewApiPlugin(Plugin):
    name = "fakenewapi"
    api_version = (2, 0)

    def create_client(self, options=None):  # pragma: no cover - never reached
        raise AssertionError("an incompatible plugin must never be started")


plugin = NewApiPlugin()

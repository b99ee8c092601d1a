"""A second plugin named "cpu" with an entry point named "cpu" too; its client fails."""

from hlort.plugin.api import Plugin


class TwinPlugin(Plugin):
    name = "cpu"
    api_version = (1, 0)

    def create_client(self, options=None):
        raise RuntimeError("the twin cpu plugin must never be started")


plugin = TwinPlugin()

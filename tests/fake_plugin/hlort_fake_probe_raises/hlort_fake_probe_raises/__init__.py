"""A plugin whose probe() raises instead of answering."""

from hlort.plugin.api import Plugin


class ProbeRaisesPlugin(Plugin):
    name = "fakeproberaises"
    api_version = (1, 0)

    def probe(self):
        raise OSError("ioctl on /dev/fakeaccel failed")

    def create_client(self, options=None):  # pragma: no cover - never reached
        raise AssertionError("a plugin whose probe raised must not be started")


plugin = ProbeRaisesPlugin()

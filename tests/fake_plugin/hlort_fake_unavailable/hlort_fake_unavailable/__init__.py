"""A plugin for hardware that is not present: probe() says so cheaply, with the fix."""

from hlort.plugin.api import Plugin, ProbeResult


class FakeUnavailablePlugin(Plugin):
    name = "fakeunavail"
    api_version = (1, 0)
    priority = 50

    def probe(self) -> ProbeResult:
        return ProbeResult.unavailable(
            "no FakeAccel device found (/dev/fakeaccel0 is missing)",
            "attach a FakeAccel card, or leave fakeunavail out of HLORT_PLATFORMS",
        )

    def create_client(self, options=None):  # pragma: no cover - never reached
        raise AssertionError("an unavailable plugin must never be started")

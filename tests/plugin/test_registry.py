"""Selection: priorities, lazy clients, fallback, HLORT_PLATFORMS, recorded failures."""

import pytest

from hlort.errors import ErrorCode, HlortError, Unavailable
from hlort.plugin.api import Plugin, ProbeResult
from hlort.plugin.base import SimpleClient, SimplePlugin
from hlort.plugin.interpreter_backend import InterpreterExecutable
from hlort.plugin.registry import BackendStatus, Registry, parse_device_string


class OneDeviceClient(SimpleClient):
    executable_class = InterpreterExecutable

    def create_devices(self):
        from hlort.plugin.base import SimpleDevice

        return [SimpleDevice(self, 0, "test")]


def make_plugin(name, priority=0, *, fail_start=False, probe=None, api=(1, 0)):
    started = []

    class P(SimplePlugin):
        client_class = OneDeviceClient

        def probe(self):
            if isinstance(probe, Exception):
                raise probe
            return probe or ProbeResult.ok()

        def create_client(self, options=None):
            started.append(name)
            if fail_start:
                raise RuntimeError(f"{name}: driver init failed")
            return super().create_client(options)

    P.name, P.priority, P.api_version = name, priority, api
    plugin = P()
    plugin.started = started
    return plugin


def registry(*plugins, env=None):
    r = Registry(group=None, environ=env or {})
    for p in plugins:
        r.register(p)
    return r


def test_builtin_interpreter_is_lowest_priority_and_default_alone():
    r = Registry(group=None, environ={})
    assert r.default_client().platform_name == "interpreter"
    r.register(make_plugin("fast", priority=5))
    assert r.platform_order() == ["fast", "interpreter"]
    assert r.default_client().platform_name == "fast"


def test_clients_are_created_lazily_and_once():
    p = make_plugin("lazy")
    r = registry(p)
    r.records()
    assert p.started == []
    assert r.client("lazy") is r.client("lazy")
    assert p.started == ["lazy"]


def test_client_creation_failure_is_recorded_and_default_falls_back():
    bad, good = make_plugin("bad", 10, fail_start=True), make_plugin("good", 5)
    r = registry(bad, good)
    assert r.default_client().platform_name == "good"
    assert "driver init failed" in r.errors()["bad"]
    status = {rec.name: rec.status for rec in r.records()}
    assert status["bad"] is BackendStatus.FAILED and status["good"] is BackendStatus.OK
    with pytest.raises(Unavailable, match="driver init failed"):
        r.client("bad")
    assert bad.started == ["bad"]  # not retried


def test_probe_unavailable_and_probe_crash_are_recorded_without_starting():
    quiet = make_plugin("nohw", 9, probe=ProbeResult.unavailable("no card", "plug one in"))
    crashy = make_plugin("crashy", 8, probe=OSError("probe exploded"))
    r = registry(quiet, crashy)
    errors = r.errors()
    assert errors["nohw"] == "no card; fix: plug one in"
    assert "probe exploded" in errors["crashy"]
    assert r.default_client().platform_name == "interpreter"
    assert quiet.started == [] and crashy.started == []


def test_incompatible_api_is_rejected_at_registration():
    r = registry(make_plugin("future", api=(2, 1)))
    assert "targets plugin API 2.1" in r.errors()["future"]
    with pytest.raises(Unavailable, match="2.1"):
        r.client("future")


def test_a_plugin_targeting_a_newer_minor_is_rejected_with_the_reason(monkeypatch):
    """Issue 19: a plugin declaring API 1.9 used to load on a 1.x core with fewer methods."""
    import hlort
    from hlort.plugin import registry as registry_module

    r = registry(make_plugin("newer", api=(1, 9)), make_plugin("current", api=(1, 1)))
    records = {rec.name: rec for rec in r.records()}
    assert records["newer"].status is BackendStatus.REJECTED
    assert records["current"].usable
    reason = r.errors()["newer"]
    assert "targets plugin API 1.9" in reason and "implements API 1.1" in reason
    assert "upgrade hlort" in reason
    with pytest.raises(Unavailable, match="was rejected: .*1.9"):
        r.client("newer")
    monkeypatch.setattr(registry_module, "_default", r)  # hlort.backend_errors() says the same
    assert hlort.backend_errors()["newer"] == reason


def test_malformed_registrations_are_rejected_not_raised():
    class NoVersion(Plugin):
        name = "nover"

        def create_client(self, options=None):
            raise AssertionError

    r = registry(
        NoVersion(), object(), make_plugin("Bad:Name"), make_plugin("twice"), make_plugin("twice")
    )
    errors = r.errors()
    assert "api_version" in errors["nover"]
    assert any("not an hlort.plugin.api.Plugin" in v for v in errors.values())
    assert any("is invalid" in v for v in errors.values())
    assert any("already provided" in v for v in errors.values())
    odd = make_plugin("odd")
    odd.priority = "high"
    assert "not an int" in registry(odd).errors()["odd"]
    assert r.client("twice").platform_name == "twice"


def test_hlort_platforms_orders_and_restricts():
    a, b = make_plugin("alpha", 1), make_plugin("beta", 100)
    r = registry(a, b, env={"HLORT_PLATFORMS": "alpha, interpreter"})
    assert r.platform_order() == ["alpha", "interpreter"]
    assert list(r.clients()) == ["alpha", "interpreter"]
    assert r.default_client().platform_name == "alpha"
    assert b.started == []
    with pytest.raises(HlortError) as info:
        r.client("beta")
    assert info.value.code is ErrorCode.NOT_FOUND and "HLORT_PLATFORMS" in info.value.message


def test_hlort_platforms_naming_a_broken_backend_raises_with_reason_and_fix():
    broken = make_plugin("gpu", 50, probe=ProbeResult.unavailable("no GPU", "install a driver"))
    r = registry(broken, env={"HLORT_PLATFORMS": "gpu,interpreter"})
    for call in (r.default_client, r.clients):
        with pytest.raises(HlortError) as info:
            call()
        assert info.value.code is ErrorCode.UNAVAILABLE
        assert "no GPU" in info.value.message and "install a driver" in info.value.message


def test_hlort_platforms_naming_an_unknown_backend_is_not_found():
    r = registry(env={"HLORT_PLATFORMS": "cuda"})
    with pytest.raises(HlortError) as info:
        r.default_client()
    assert info.value.code is ErrorCode.NOT_FOUND
    assert "'cuda'" in info.value.message and "interpreter" in info.value.message


def test_unknown_backend_lists_the_known_ones():
    with pytest.raises(HlortError, match="available platforms: interpreter") as info:
        registry().client("tpu")
    assert info.value.code is ErrorCode.NOT_FOUND


def test_unknown_backend_does_not_offer_unavailable_ones():
    absent = make_plugin("absent", probe=ProbeResult.unavailable("no card", fix="add one"))
    with pytest.raises(HlortError) as info:
        registry(absent, make_plugin("fast")).client("tpu")
    assert "available platforms: " in info.value.message
    assert "fast" in info.value.message and "absent" not in info.value.message


def test_client_platform_name_must_match_the_plugin():
    class Liar(SimplePlugin):
        name, api_version, client_class = "liar", (1, 0), OneDeviceClient

        def create_client(self, options=None):
            return OneDeviceClient(self, platform_name="someone_else")

    r = registry(Liar())
    with pytest.raises(Unavailable, match="platform_name"):
        r.client("liar")


@pytest.mark.parametrize(
    "text, want", [("cpu:0", ("cpu", 0)), ("tpusim:3", ("tpusim", 3)), ("cpu", ("cpu", None))]
)
def test_device_strings(text, want):
    assert parse_device_string(text) == want


@pytest.mark.parametrize("text", ["", ":0", "cpu:x", "cpu:-1"])
def test_bad_device_strings(text):
    with pytest.raises(HlortError) as info:
        parse_device_string(text)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_probes_start_when_needed_and_a_named_platform_runs_only_its_own():
    """Discovery registers without waiting: a compile for a named platform must not run (import,
    thread) every other plugin's probe, while a listing or the default backend starts all
    probes at once (each probe below needs the other running to answer: one at a time, both
    would fail)."""
    import threading

    calls, both = [], threading.Barrier(2, timeout=10)

    def waits_for_the_other(name):
        def probe():
            calls.append(name)
            both.wait()
            return ProbeResult.ok()

        return probe

    r = Registry(group=None, include_builtin=False, environ={})
    solo = make_plugin("solo", 1)
    solo.probe = lambda: calls.append("solo") or ProbeResult.ok()
    r.register(solo, wait=False)
    for name, priority in (("a", 3), ("b", 2)):
        p = make_plugin(name, priority)
        p.probe = waits_for_the_other(name)
        r.register(p, wait=False)
    assert r.client("solo").platform_name == "solo"
    assert calls == ["solo"]  # a's and b's probes have not run
    assert r.default_client().platform_name == "a"
    assert sorted(calls) == ["a", "b", "solo"]
    assert all(rec.usable for rec in r.records())

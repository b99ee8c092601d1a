"""Plugins that hang, raise or claim another plugin's platform name never break the others.

A probe() that never returned used to hang every hlort entry point (even a compile for cpu with
HLORT_PLATFORMS=cpu), a create_client() that never returned hung listings and default-backend
compiles, and a plugin declaring platform "cpu" under an entry point sorting before hlort-cpu's
took the name over. Now each call into plugin code is bounded by HLORT_PLUGIN_TIMEOUT and only
waited for when needed, and platform names follow name_claims.py's rule.
"""

import itertools
import subprocess
import sys
import threading
import time

import pytest
from fake_site import hlort_command, subprocess_env

from hlort.errors import ErrorCode, HlortError
from hlort.plugin.interpreter_backend import InterpreterPlugin
from hlort.plugin.name_claims import Claim, resolve
from hlort.plugin.registry import BackendStatus, Registry

TIMEOUT_S = 3.0  # generous: the calls that must not wait finish in milliseconds, even on a busy CI
ADD_ONE = "HloModule a\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}"


@pytest.fixture
def hostile(hostile_site, monkeypatch):
    monkeypatch.syspath_prepend(str(hostile_site))
    registry = Registry(environ={}, timeout_s=TIMEOUT_S)
    registry.discover()
    yield registry
    registry.close()


def test_a_named_platform_never_waits_for_a_stuck_probe(hostile):
    start = time.monotonic()
    client = hostile.client("tpusim")
    assert time.monotonic() - start < TIMEOUT_S * 0.8
    assert client.platform_name == "tpusim"


def test_a_stuck_probe_is_reported_unavailable_with_the_timeout(hostile):
    start = time.monotonic()
    records = {r.name: r for r in hostile.records()}
    assert time.monotonic() - start < TIMEOUT_S + 1.5  # probes ran concurrently
    stuck = records["fakestuckprobe"]
    assert stuck.status is BackendStatus.UNAVAILABLE
    assert stuck.reason().startswith(f"probe timed out after {TIMEOUT_S:g} s")
    assert records["fakeproberaises"].status is BackendStatus.FAILED
    assert "OSError" in records["fakeproberaises"].message
    assert records["fakebroken"].status is BackendStatus.FAILED
    assert records["fakenewapi"].status is BackendStatus.REJECTED
    assert records["tpusim"].usable and records["interpreter"].usable


def test_a_stuck_client_times_out_and_the_default_backend_is_still_found(hostile):
    with pytest.raises(HlortError) as info:
        hostile.client("fakestuckclient")
    assert info.value.code is ErrorCode.UNAVAILABLE
    assert f"create_client() timed out after {TIMEOUT_S:g} s" in str(info.value)
    start = time.monotonic()
    default = hostile.default_client()
    assert default.platform_name != "fakestuckclient"
    assert time.monotonic() - start < TIMEOUT_S + 1.0
    assert "fakestuckclient" not in hostile.clients()


class _WrappingPlugin(InterpreterPlugin):
    """A plugin whose create_client asks the registry for another backend (it wraps it)."""

    name = "wrapper"

    def __init__(self, registry: Registry):
        super().__init__()
        self.registry = registry

    def create_client(self, options=None):
        self.wrapped = self.registry.client("interpreter")
        return super().create_client(options)


def test_a_create_client_that_calls_back_into_the_registry_does_not_deadlock():
    registry = Registry(group=None, environ={}, timeout_s=TIMEOUT_S)
    plugin = _WrappingPlugin(registry)
    registry.register(plugin)
    try:
        start = time.monotonic()
        client = registry.client("wrapper")
        assert time.monotonic() - start < TIMEOUT_S * 0.8
        assert client.platform_name == "wrapper"
        assert plugin.wrapped is registry.client("interpreter")
    finally:
        registry.close()


def test_other_threads_use_the_registry_while_records_waits_for_a_stuck_probe(hostile):
    listing = threading.Thread(target=hostile.records)
    listing.start()
    time.sleep(0.1)  # records() is now waiting for fakestuckprobe
    start = time.monotonic()
    client = hostile.client("interpreter")
    waited = time.monotonic() - start
    listing.join()
    assert client.platform_name == "interpreter"
    assert waited < TIMEOUT_S * 0.5


def test_the_real_cpu_plugin_keeps_its_name_and_every_claimant_gets_a_record(hostile):
    records = hostile.records()
    cpu = [r for r in records if r.name == "cpu"]
    assert len(cpu) == 1 and "hlort-cpu" in cpu[0].source and cpu[0].usable
    claimants = [r for r in records if r.name.startswith("cpu (")]
    assert len(claimants) == 2
    assert any("hlort-fake-cpu-claim" in r.source for r in claimants)
    assert any("hlort-fake-cpu-twin" in r.source for r in claimants)
    for record in claimants:
        assert record.status is BackendStatus.REJECTED
        assert "belongs to" in record.message and "hlort-cpu" in record.message
    assert hostile.client("cpu").platform_name == "cpu"


def test_a_name_no_distribution_owns_is_refused_for_every_claimant(hostile):
    records = {r.name: r for r in hostile.records()}
    assert records["fakeorphan"].status is BackendStatus.REJECTED
    both = [r for n, r in records.items() if n.startswith("fakeorphan (")]
    assert len(both) == 2 and all("none of them is used" in r.message for r in both)
    with pytest.raises(HlortError) as info:
        hostile.client("fakeorphan")
    assert info.value.code is ErrorCode.UNAVAILABLE and "declared by 2 plugins" in str(info.value)


class _Named:
    def __init__(self, name):
        self.name = name


def test_the_name_rule_does_not_depend_on_order():
    claims = [
        Claim(_Named("cpu"), "real", "hlort-cpu"),
        Claim(_Named("cpu"), "a", "hlort-a"),
        Claim(_Named("cpu"), "b", "hlort_B"),
        Claim(_Named("x"), "x", "hlort-y"),
    ]
    outcomes = set()
    for order in itertools.permutations(claims):
        winners, refused = resolve(list(order))
        outcomes.add(
            (
                frozenset(c.source for c in winners),
                frozenset((r.claim.source, r.message) for r in refused),
            )
        )
    assert len(outcomes) == 1
    ((winners, refused),) = outcomes
    assert winners == {"real", "x"} and {s for s, _ in refused} == {"a", "b"}


def test_the_cli_lists_everything_despite_hung_plugins(hostile_site):
    env = subprocess_env(hostile_site, HLORT_PLUGIN_TIMEOUT="1")
    start = time.monotonic()
    done = subprocess.run(
        hlort_command("devices"), env=env, capture_output=True, text=True, timeout=120
    )
    assert time.monotonic() - start < 60
    assert "probe timed out after 1 s" in done.stdout + done.stderr
    assert "create_client() timed out after 1 s" in done.stdout + done.stderr


@pytest.mark.parametrize("platforms", ["", "cpu"])
def test_a_compile_for_cpu_in_a_new_process_is_not_delayed(hostile_site, platforms):
    env = subprocess_env(hostile_site, HLORT_PLUGIN_TIMEOUT="30", HLORT_PLATFORMS=platforms)
    code = (
        "import numpy as np, sys, hlort; e = hlort.compile(sys.argv[1], 'cpu'); "
        "print(e(np.ones(4, np.float32)))"
    )
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code, ADD_ONE], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 25, "waited for the stuck plugins"
    assert "-1." in done.stdout

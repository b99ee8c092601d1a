"""The plugin's identity: name, API version, attributes, probe, capabilities and profile."""

from __future__ import annotations

import re

from hlort.plugin.api import Capabilities, ProbeResult
from hlort.plugin.conformance_profile import ConformanceProfile
from hlort.plugin.versioning import API_VERSION, MIN_SUPPORTED_MINOR

_VALUE_TYPES = (str, int, float, bool)


def test_platform_name_matches_the_plugin(hlort_session) -> None:
    plugin, client = hlort_session.plugin, hlort_session.client
    assert re.fullmatch(r"[a-z][a-z0-9_]*", plugin.name), (
        f"platform name {plugin.name!r} must be lowercase letters, digits and '_'"
    )
    assert client.platform_name == plugin.name == hlort_session.platform, (
        f"client.platform_name {client.platform_name!r} must equal the plugin name {plugin.name!r}"
    )


def test_api_version_is_declared_and_compatible(hlort_session) -> None:
    declared = getattr(hlort_session.plugin, "api_version", None)
    assert isinstance(declared, tuple) and len(declared) == 2, (
        f"api_version must be a (major, minor) tuple, got {declared!r}"
    )
    assert all(isinstance(v, int) and not isinstance(v, bool) for v in declared)
    assert declared[0] == API_VERSION[0] and declared[1] >= MIN_SUPPORTED_MINOR, (
        f"plugin targets API {declared}, core implements {API_VERSION}"
    )


def test_attributes_are_plain_values_with_a_version(hlort_session) -> None:
    attrs = hlort_session.plugin.attributes()
    for key, value in attrs.items():
        assert isinstance(key, str) and key, f"attribute name {key!r} must be a non-empty str"
        assert isinstance(value, _VALUE_TYPES), (
            f"attribute {key!r} is a {type(value).__name__}; values are str, int, float or bool"
        )
    assert isinstance(attrs.get("version"), str) and attrs["version"], (
        "Plugin.attributes() must include 'version' (a non-empty str); hlort devices shows it"
    )
    version = hlort_session.client.platform_version
    assert isinstance(version, str) and version, "Client.platform_version must be a non-empty str"


def test_probe_says_available_once_running(hlort_session) -> None:
    probe = hlort_session.plugin.probe()
    assert isinstance(probe, ProbeResult) and probe.available, (
        f"probe() must say available on a machine where the client started, got {probe!r}"
    )


def test_capabilities_name_real_types_and_ops(hlort_session) -> None:
    from hlort import dtypes
    from hlort.ir.opcodes import Opcode

    caps = hlort_session.plugin.capabilities()
    assert isinstance(caps, Capabilities)
    known_dtypes = {d.name for d in dtypes.ALL_DTYPES}
    known_ops = {op.value for op in Opcode}
    assert caps.dtypes is None or set(caps.dtypes) <= known_dtypes, (
        f"capabilities().dtypes has unknown names {sorted(set(caps.dtypes) - known_dtypes)}"
    )
    assert caps.opcodes is None or set(caps.opcodes) <= known_ops, (
        f"capabilities().opcodes has unknown names {sorted(set(caps.opcodes) - known_ops)}"
    )


def test_conformance_profile_is_well_formed(hlort_session) -> None:
    profile = hlort_session.plugin.conformance_profile()
    assert isinstance(profile, ConformanceProfile)
    assert profile.problems() == []
    for table in (profile.unsupported, profile.expected_failures):
        for key, reason in table.items():
            assert isinstance(reason, str) and reason.strip(), f"{key!r} needs a reason"


def test_devices_describe_themselves(hlort_session) -> None:
    for device in hlort_session.client.devices():
        assert isinstance(device.id, int) and isinstance(device.kind, str) and device.kind
        assert isinstance(device.local_hardware_id, int)
        assert isinstance(device.process_index, int)
        for key, value in device.attributes().items():
            assert isinstance(key, str) and isinstance(value, _VALUE_TYPES), (
                f"device {device.id} attribute {key!r}={value!r} is not a plain value"
            )
        assert repr(device)

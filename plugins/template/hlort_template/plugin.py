"""TemplatePlugin: what the ``hlort.plugins`` entry point names.

hlort creates one instance per process, checks ``api_version``, calls ``probe()`` (cheap: no
driver calls that take long) and, when the platform is first used, ``create_client()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hlort.plugin.api import AttributeValue, Capabilities, Plugin, ProbeResult

if TYPE_CHECKING:  # imported when asked for: discovering the plugin should not pay for it
    from hlort.plugin.conformance_profile import ConformanceProfile

PLATFORM = "template"
"""The platform name: ``hlort.backend("template")``, ``"template:0"``, HLORT_PLATFORMS."""

VERSION = "0.1.0"


class TemplatePlugin(Plugin):
    name = PLATFORM
    api_version = (1, 0)  # the plugin API this code was written against; never copy the core's
    priority = -2000  # below the interpreter: never the default backend. Real hardware: > 0.

    def probe(self) -> ProbeResult:
        # A real plugin checks that its driver is installed and a device is present, e.g.
        # ProbeResult.unavailable("no Acme card found", fix="install acme-driver >= 2.1").
        return ProbeResult.ok()

    def attributes(self) -> Mapping[str, AttributeValue]:
        return {
            "version": VERSION,
            "vendor": "hlort",
            "description": "made from the hlort plugin template",
        }

    def capabilities(self) -> Capabilities:
        # None = every element type / op; a young backend lists what it has, e.g.
        # opcodes=frozenset({"add", "dot", ...}). The booleans are optional API methods.
        return Capabilities(
            serialization=True,
            donation=True,
            memory_stats=True,
            multi_device=True,
            artifacts=True,
        )

    def conformance_profile(self) -> ConformanceProfile:
        # What `hlort conformance --platform template` should skip, expect to fail, or compare
        # looser. The template supports everything, so it declares nothing. Examples:
        #   unsupported={"op:fft": "no FFT unit", "dtype:f8e5m2": "no fp8 storage"}
        #   expected_failures={"test_op[erf-bf16-*]": "erf polynomial is f32-only, bug #12"}
        #   tolerances={"dot:bf16": Tolerance(rtol=1e-2, atol=1e-2)}
        from hlort.plugin.conformance_profile import ConformanceProfile

        return ConformanceProfile()

    def create_client(self, options: Mapping[str, Any] | None = None):
        from hlort_template.client import TemplateClient  # the heavy part, imported on use

        return TemplateClient(self, options)

"""Plugins import only the plugin surface (docs/plugin-api.md, "The plugin surface").

Every ``plugins/*/hlort_*`` package is checked, found on disk (a new plugin is covered the day
it lands), and every import counts: module level, inside functions, under TYPE_CHECKING.
"""

from __future__ import annotations

# Module (or package: everything under it) -> why a plugin may import it. Keep docs/plugin-api.md
# in step.
PLUGIN_SURFACE: dict[str, str] = {
    "hlort.errors": "HlortError and its PJRT codes",
    "hlort.dtypes": "element types",
    "hlort.shape": "shapes and layouts",
    "hlort.lazy_dataclass": "@dataclass made on first use (start-up cost of a plugin's import)",
    "hlort.sha256": "SHA-256 without OpenSSL's start-up for small inputs (cache keys)",
    "hlort.ir": "the IR a plugin compiles, read-only (graph, opcodes, attributes, shape rules, "
    "the custom-call registry, the module codec)",
    "hlort.interpreter": "the reference semantics: Evaluator, function_for and the reference "
    "math a backend reuses for host work",
    "hlort.passes.pass_base": "Pass, for backend passes in PassOptions",
    "hlort.passes.pass_options": "PassOptions, what Client.pass_options() returns",
    "hlort.passes.fusion_policy": "FusionPolicy, the fusions a backend asks for",
    "hlort.passes.buffer_assignment": "buffer assignment: where each value lives",
    "hlort.codegen": "the target-neutral LLVM emitter (llvm) and the shared GPU schedules (gpu)",
    "hlort.plugin.api": "the stable ABCs",
    "hlort.plugin.capabilities": "Capabilities and memory stats (part of the API)",
    "hlort.plugin.options": "CompileOptions, ExecuteOptions (part of the API)",
    "hlort.plugin.versioning": "API_VERSION (part of the API)",
    "hlort.plugin.conformance_profile": "ConformanceProfile, what conformance_profile() returns",
    "hlort.plugin.base": "reusable pieces: events, queues, buffers, serialization, cache "
    "directories, value flattening, cost estimate, reference fallback, GPU driver helpers",
}

# A bridge exposes hlort's backends to another framework, so it also drives the user API.
BRIDGES: dict[str, dict[str, str]] = {
    "hlort_jax": {
        "hlort": "the public API (hlort.backend...), exactly this module",
        "hlort.plugin.registry": "the discovery records, to list backends without starting them",
        "hlort.text.hlo_proto_writer": "the optimized program as XLA's HloModuleProto, which "
        "JAX reads from PJRT_Executable_OptimizedProgram",
        "hlort.text.protobuf_wire": "the protobuf wire format, to read CompileOptionsProto and "
        "write DeviceAssignmentProto with the same code the HloModuleProto writer uses",
        "hlort.runtime.selection": "backend_for_client, exactly: the Backend over a client the "
        "bridge starts with another device count (JAX's jax_num_cpu_devices)",
    },
}


def allowed(plugin: str, module: str) -> bool:
    if module == plugin or module.startswith(plugin + "."):
        return True
    extra = BRIDGES.get(plugin, {})
    if module in extra:
        return True
    exact = ("hlort", "hlort.runtime.selection")  # these modules only, not their packages
    return any(
        module == entry or module.startswith(entry + ".")
        for entry in (*PLUGIN_SURFACE, *(e for e in extra if e not in exact))
    )


def test_plugins_import_only_the_plugin_surface(import_edges, plugin_package_names):
    packages = plugin_package_names
    assert {"hlort_cpu", "hlort_tpusim", "hlort_template", "hlort_jax"} <= set(packages)
    outside = [
        f"{e.source} -> {e.target} at {e.where()}"
        for e in import_edges
        if e.source.split(".")[0] in packages and not allowed(e.source.split(".")[0], e.target)
    ]
    assert not outside, (
        "plugins import modules outside the plugin surface (move what they need into it, or "
        "declare it in PLUGIN_SURFACE and docs/plugin-api.md):\n  " + "\n  ".join(sorted(outside))
    )


def test_every_surface_module_exists(import_edges):
    known = {e.source for e in import_edges} | {e.target for e in import_edges}
    for entry in (*PLUGIN_SURFACE, *(m for extra in BRIDGES.values() for m in extra)):
        assert any(m == entry or m.startswith(entry + ".") for m in known), entry

"""The compile entry point: load, verify, run the core pipeline, then the plugin's compile.

Verification happens here, once; executables never re-verify per call. The core pass pipeline
(``hlort.passes.run_default_pipeline``) runs with the policy and extra passes the backend asks
for (``Client.pass_options``). The caller's module is never modified: passes
run on a clone. A module compiled before (in any process) comes from the persistent executable
cache (executable_cache.py) without verification, passes or codegen.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hlort.errors import HlortError, Internal, InvalidArgument, Unimplemented
from hlort.ir.collective_groups import check_collectives_fit
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.verifier import verify_module
from hlort.log import lazy_logger
from hlort.passes import run_default_pipeline
from hlort.passes.collection_pause import collection_paused
from hlort.passes.matmul_precision import apply_matmul_precision
from hlort.plugin import api
from hlort.plugin.base.fallback_policy import fallback_policy_for
from hlort.plugin.base.hlo_text import print_hlo
from hlort.plugin.options import CompileOptions, DebugOptions
from hlort.runtime.executable import Executable
from hlort.runtime.executable_cache import ExecutableCache
from hlort.runtime.program import load_program

if TYPE_CHECKING:  # imported for a program with a `?` dimension (_polymorphic_text)
    from hlort.runtime.polymorphic import PolymorphicExecutable

LOGGER = lazy_logger("hlort.compile")


def run_core_passes(module: Module, options: CompileOptions, client: api.Client) -> Module:
    """Run the core pipeline on ``module`` in place, as ``client`` asks (policy, extra passes)."""
    debug = options.debug
    apply_matmul_precision(module, options.matmul_precision)
    if not debug.run_core_passes:
        return module
    wanted = client.pass_options()
    run_default_pipeline(
        module,
        policy=wanted.policy,
        before=wanted.before,
        after=wanted.after,
        disabled=debug.disabled_passes,
        verify=debug.verify_passes,
        dump_dir=debug.dump_dir,
    )
    return module


def _polymorphic_text(program: Any) -> str | None:
    """hlort.runtime.polymorphic's ``polymorphic_text``, imported (with its importer half) only
    when ``program`` could be one: a path, or program text with a ``?`` in it."""
    if isinstance(program, str) and "?" not in program:
        from hlort.runtime.program import _looks_like_a_path

        if not _looks_like_a_path(program):
            return None  # no `?` dimension in the text
    elif not isinstance(program, (str, os.PathLike)):
        return None  # a Module or bytes: polymorphic_text says None for those
    from hlort.runtime.polymorphic import polymorphic_text

    return polymorphic_text(program)


def _check_custom_call_layouts(module: Module) -> None:
    """hlort.ir.custom_call_layouts' check, imported only for a module with a custom call (its
    patterns and itself cost a first compile ~0.4 ms otherwise)."""
    if any(
        instr.opcode is Opcode.CUSTOM_CALL
        for comp in module.computations
        for instr in comp.instructions
    ):
        from hlort.ir.custom_call_layouts import check_module_custom_call_layouts

        check_module_custom_call_layouts(module)


def _device_options(options: CompileOptions, device: api.Device | None) -> CompileOptions:
    if device is None or options.device_assignment is not None:
        return options
    if options.num_replicas * options.num_partitions != 1:
        return options
    return dataclasses.replace(options, device_assignment=((device.id,),))


def _module_counts(options: CompileOptions, module: Module) -> CompileOptions:
    """The replica and partition counts: the options', or the module header's when the options
    leave them at 1 x 1 (XLA's HloModuleConfig); both given and different is INVALID_ARGUMENT."""
    replicas = int(module.config.get("num_replicas", 1))
    partitions = int(module.config.get("num_partitions", 1))
    mine = (options.num_replicas, options.num_partitions)
    if (replicas, partitions) == (1, 1) or mine == (replicas, partitions):
        return options
    if mine == (1, 1) and options.device_assignment is None:
        return dataclasses.replace(options, num_replicas=replicas, num_partitions=partitions)
    if mine == (1, 1):
        return options  # an explicit 1 x 1 device assignment runs one copy
    raise InvalidArgument(
        f"module {module.name} declares replica_count={replicas}, num_partitions={partitions} "
        f"but the compile options ask for {mine[0]} x {mine[1]}; drop one of them or make them "
        f"agree"
    )


def options_from_mapping(options: Mapping[str, Any]) -> CompileOptions:
    """``{"donated_arguments": (0,), "debug": {...}}`` or flat names (``{"matmul_precision":
    "highest", "disable_passes": "cse"}``, hlort.plugin.compile_flags) -> CompileOptions;
    INVALID_ARGUMENT naming the known ones for an unknown name (a typo must not be ignored)."""
    from hlort.plugin.compile_flags import flag_named, flags_to_options, known_flag_names

    fields = {f.name for f in dataclasses.fields(CompileOptions)}
    unknown = sorted(k for k in options if k not in fields and flag_named(k) is None)
    if unknown:
        raise InvalidArgument(
            f"unknown compile option(s) {unknown}; known: "
            f"{', '.join(sorted(fields | set(known_flag_names())))}"
        )
    flat = flags_to_options({k: v for k, v in options.items() if k not in fields})
    options = {k: v for k, v in options.items() if k in fields}
    options = _merge(options, flat)
    debug = options.get("debug")
    if isinstance(debug, Mapping):
        known = {f.name for f in dataclasses.fields(DebugOptions)}
        unknown = sorted(set(debug) - known)
        if unknown:
            raise InvalidArgument(f"unknown debug option(s) {unknown}; known: {sorted(known)}")
    try:
        return CompileOptions.from_dict(options)
    except HlortError:
        raise
    except (TypeError, ValueError) as err:
        raise InvalidArgument(f"bad compile options {dict(options)!r}: {err}") from None


def _merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra``'s values over ``base``'s, the ``debug`` mapping merged key by key."""
    out = dict(base)
    for key, value in extra.items():
        if key in ("debug", "target_options") and isinstance(out.get(key), Mapping):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def with_process_flags(options: CompileOptions) -> CompileOptions:
    """``HLORT_FLAGS`` applied to every option ``options`` leaves at its default."""
    if not os.environ.get("HLORT_FLAGS", "").strip():  # compile_flags.ENV_VAR unset: the
        return options  # usual case skips importing its flag table (a first compile's ~0.4 ms)
    from hlort.plugin.compile_flags import process_flags

    flags = process_flags()
    if not flags:
        return options
    defaults, debug_defaults = CompileOptions(), DebugOptions()
    top = {
        k: v
        for k, v in flags.items()
        if k != "debug" and getattr(options, k) == getattr(defaults, k)
    }
    debug = {
        k: v
        for k, v in flags.get("debug", {}).items()
        if getattr(options.debug, k) == getattr(debug_defaults, k)
    }
    if debug:
        top["debug"] = dataclasses.replace(options.debug, **debug)
    return dataclasses.replace(options, **top) if top else options


@collection_paused  # no full garbage collection inside a compile (collection_pause.py)
def compile_on(
    backend,
    program: Module | str | bytes | os.PathLike,
    device=None,
    options: CompileOptions | Mapping[str, Any] | None = None,
) -> Executable | PolymorphicExecutable:
    """Compile ``program`` for ``backend`` (a runtime Backend), on ``device`` if given."""
    if options is None:
        options = CompileOptions()
    elif isinstance(options, Mapping):
        options = options_from_mapping(options)
    elif not isinstance(options, CompileOptions):
        raise InvalidArgument(
            f"options must be a CompileOptions or a dict of its fields, got "
            f"{type(options).__name__}"
        )
    options = with_process_flags(options)
    if options.debug.dump_dir:
        _prepare_dump_dir(options.debug.dump_dir)
    polymorphic = _polymorphic_text(program)  # `?` dims: refined and compiled per call shape
    if polymorphic is not None:
        from hlort.runtime.polymorphic import PolymorphicExecutable

        return PolymorphicExecutable(polymorphic, backend, device, options, compile_on)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    module, _fmt = load_program(program)
    timings["load"] = time.perf_counter() - start
    # before the cache: fingerprints leave layouts out, and an honoured layout means the same
    # as none, so only a call hlort would get wrong must never reach a cached executable
    _check_custom_call_layouts(module)  # UNIMPLEMENTED, not a wrong result
    raw_device = device.raw if device is not None else None
    options = _device_options(_module_counts(options, module), raw_device)
    start = time.perf_counter()
    cache = ExecutableCache.for_compile(backend, module, options)
    with fallback_policy_for(options.fallback):
        cached = cache.load() if cache is not None else None
    if cached is not None:
        timings["cache_load"] = time.perf_counter() - start
        LOGGER.info("compile cache hit: %s on %s (%s)", module.name, backend.platform, cache.path)
        return Executable(cached, backend, None, timings)
    if cache is not None:
        LOGGER.info("compile cache miss: %s on %s", module.name, backend.platform)
    start = time.perf_counter()
    verify_module(module)
    check_collectives_fit(module, options.num_replicas, options.num_partitions)
    timings["verify"] = time.perf_counter() - start
    start = time.perf_counter()
    optimized = run_core_passes(module.clone(), options, backend.client)
    timings["core_passes"] = time.perf_counter() - start
    start = time.perf_counter()
    try:
        with fallback_policy_for(options.fallback):
            raw = backend.client.compile(optimized, options)
    except HlortError:
        raise
    except Exception as err:  # the plugin API's contract: only HlortError crosses it
        raise Internal(
            f"the {backend.platform} plugin's compile raised {type(err).__name__}: {err} (a bug "
            f"in the plugin: report it to its maintainers, with the module)"
        ) from err
    timings["backend_compile"] = time.perf_counter() - start
    if cache is not None:
        start = time.perf_counter()
        cache.store(raw)
        timings["cache_store"] = time.perf_counter() - start
    if options.debug.dump_dir:
        dump_compilation(options.debug.dump_dir, optimized, raw, backend.platform)
    return Executable(raw, backend, optimized, timings)


def _prepare_dump_dir(dump_dir: str) -> None:
    """Create the dump directory up front; INVALID_ARGUMENT (not a crash after the passes ran)
    when it cannot be."""
    try:
        os.makedirs(dump_dir, exist_ok=True)
    except FileExistsError:
        raise InvalidArgument(
            f"dump directory {dump_dir} exists and is not a directory; choose another path"
        ) from None
    except OSError as err:
        raise InvalidArgument(
            f"cannot create dump directory {dump_dir}: {err.strerror or err}"
        ) from None


def dump_compilation(dump_dir: str, module: Module, raw: api.Executable, platform: str) -> None:
    """Write the module the backend received and the backend's artifacts into ``dump_dir``."""
    os.makedirs(dump_dir, exist_ok=True)
    with open(os.path.join(dump_dir, f"{module.name}.optimized.hlo"), "w") as f:
        f.write(print_hlo(module))
    try:
        artifacts = raw.artifacts()
    except Unimplemented:
        artifacts = {}
    for name, content in artifacts.items():
        safe = os.path.basename(name)
        path = os.path.join(dump_dir, f"{module.name}.{platform}.{safe}")
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(path, mode) as f:
            f.write(content)

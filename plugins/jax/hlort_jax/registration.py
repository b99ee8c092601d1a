"""JAX's entry point: one JAX platform ``hlort_<name>`` per hlort backend that can start.

Priorities sit below JAX's own CPU (0), so installing hlort-jax never moves a user's default
device; ``JAX_PLATFORMS=hlort_cpu`` (or ``jax.devices("hlort_cpu")``) selects one. A backend
whose plugin failed to load or whose probe says it cannot start is left out with a logged
reason (on the ``hlort.jax`` logger: INFO for hardware that is simply absent, WARNING for a
plugin that failed), so importing jax on a machine without a GPU prints nothing; JAX's own
backends are never touched.
"""

from __future__ import annotations

import atexit
import logging

log = logging.getLogger("hlort.jax")

PRIORITY = -100  # JAX's cpu is 0, its plugins default to 400
_registered: dict[str, str] = {}
_skipped: dict[str, str] = {}
_installed = False


def _install_trampoline():
    global _installed
    from hlort_jax import _trampoline, abi_structs

    if not _installed:
        abi_structs.check(_trampoline)
        from hlort_jax import (  # noqa: F401 - each module registers its handlers
            handlers_buffer,
            handlers_client,
            handlers_event,
            handlers_executable,
            handlers_execute,
            handlers_shardings,
        )
        from hlort_jax.fast_paths import declare_cached_getters
        from hlort_jax.pjrt_call import handler_tuple

        _trampoline.install(handler_tuple())
        declare_cached_getters()
        atexit.register(_trampoline.shutdown)
        _installed = True
    return _trampoline


def working_backends() -> list[str]:
    """hlort backends that may start; the others are logged with their reason."""
    from hlort.plugin.registry import BackendStatus, default_registry

    out: list[str] = []
    for record in default_registry().records():
        if record.name == "template":
            continue  # the plugin template's example backend, not a real target
        if record.usable:
            out.append(record.name)
        else:
            _skipped[f"hlort_{record.name}"] = f"{record.status.value}: {record.reason()}"
            absent = record.status is BackendStatus.UNAVAILABLE  # no GPU here: not a problem
            level = logging.INFO if absent else logging.WARNING
            log.log(level, "hlort-jax: not registering hlort_%s: %s", record.name, record.reason())
    return out


def initialize() -> None:
    """Called by JAX for the ``jax_plugins`` entry point ``hlort``."""
    from jax._src import xla_bridge

    try:
        trampoline = _install_trampoline()
        backends = working_backends()
    except Exception as err:  # noqa: BLE001 - never break JAX's own backends
        log.warning("hlort-jax: disabled: %s", err)
        _skipped["*"] = str(err)
        return
    for offset, name in enumerate(sorted(backends, key=_order)):
        platform = f"hlort_{name}"
        if platform in _registered:
            continue
        try:
            xla_bridge.register_plugin(
                platform,
                priority=PRIORITY - offset,
                options={"hlort_backend": name, "platform_name": platform},
                c_api=trampoline.api_capsule(),
            )
        except Exception as err:  # noqa: BLE001
            _skipped[platform] = str(err)
            log.warning("hlort-jax: could not register %s: %s", platform, err)
            continue
        _registered[platform] = name
    _allow_donation(list(_registered))
    _rolled_threefry(list(_registered))
    _platform_only_lowerings(_registered)


def _allow_donation(platforms: list[str]) -> None:
    """JAX keeps donation to a list of platform names (mlir._platforms_with_donation); hlort
    backends honour donation, so they join it."""
    try:
        from jax._src.interpreters import mlir
    except ImportError:
        return
    names = getattr(mlir, "_platforms_with_donation", None)
    if isinstance(names, list):
        names.extend(p for p in platforms if p not in names)
    else:
        log.warning("hlort-jax: this JAX has no donation platform list; donation is off")


def _rolled_threefry(platforms: list[str]) -> None:
    """Lower threefry2x32 as JAX does for its CPU (a rolled loop, ~50 ops) on hlort platforms.

    JAX's default rule for other platforms unrolls the rounds (~10k instructions per random
    call), which costs seconds to import, optimize and load; the bits are the same.
    """
    try:
        from jax._src.interpreters import mlir
        from jax._src.random import threefry2x32
    except ImportError:
        return
    rule = getattr(threefry2x32, "_threefry2x32_cpu_lowering_rule", None)
    if rule is None:
        log.info("hlort-jax: no rolled threefry lowering in this JAX; using the default")
        return
    for platform in platforms:
        mlir.register_lowering(threefry2x32.threefry2x32_p, rule, platform=platform)


# Which of JAX's own platforms each hlort backend lowers like, for the primitives JAX can lower
# only per platform: the host-memory backends run LAPACK's custom calls as XLA:CPU does, tpusim
# runs TPU's (Eigh, Qr, ...). Other backends get JAX's platform-independent rules only.
LOWERS_LIKE = {"cpu": "cpu", "interpreter": "cpu", "tpusim": "tpu"}
_HOST_CALLBACKS = ("debug_callback", "debug_print")


def _platform_only_lowerings(registered: dict[str, str]) -> None:
    """Give hlort platforms JAX's CPU (or TPU) rule for primitives that have no default rule.

    Without it ``jnp.linalg.eigh``/``svd`` raise "MLIR translation rule for primitive 'eigh' not
    found for platform hlort_cpu". Primitives that have a default rule keep it, so what already
    lowers does not change. Debug callbacks are left out: their CPU rule emits a custom call
    into jaxlib's own callback table, which hlort cannot run.
    """
    try:
        from jax._src.interpreters import mlir
    except ImportError:
        return
    table = getattr(mlir, "_platform_specific_lowerings", None)
    defaults = getattr(mlir, "_lowerings", None)
    if table is None or defaults is None:
        log.warning(
            "hlort-jax: this JAX keeps no per-platform lowering table; eigh/svd will not lower"
        )
        return
    for platform, backend in registered.items():
        like = LOWERS_LIKE.get(backend)
        if like is None:
            continue
        for prim, entry in list(table[like].items()):
            if prim in defaults or prim in table[platform] or prim.name in _HOST_CALLBACKS:
                continue
            table[platform][prim] = entry


def _order(name: str) -> tuple[int, str]:
    return ({"cpu": 0, "tpusim": 1, "interpreter": 2}.get(name, 3), name)


def registered_platforms() -> dict[str, str]:
    """{JAX platform: hlort backend} registered by ``initialize``."""
    return dict(_registered)


def skipped_platforms() -> dict[str, str]:
    """{JAX platform: why it was left out}."""
    return dict(_skipped)

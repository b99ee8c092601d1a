"""Discovery and selection of backends (modelled on JAX's xla_bridge).

Discovery: the built-in ``interpreter`` plus every entry point of group ``hlort.plugins``. Each
entry point is loaded inside its own try/except; it may name a :class:`Plugin` instance, a
Plugin subclass, a factory returning plugin(s), or a module/object with pluggy
``hlort_register_plugin`` hooks. A plugin's declared API version is checked and its cheap
``probe()`` called; every failure is recorded with its reason and fix, never raised. Probes run
on their own threads, started when their answer is first needed (all at once for a listing or
the default backend, only its own for a named platform: other plugins' probes cost a first
compile ~20M instructions), and waited for at most ``HLORT_PLUGIN_TIMEOUT`` seconds
(bounded_call.py): a hung probe is reported ``unavailable: probe timed out after N s`` and never
delays a platform that was named. Several plugins
declaring one platform name are resolved by name_claims.py's documented rule, the same in any
install order, with a record for each plugin that lost.

Selection: clients are created lazily, on first use (again bounded by the timeout), and a failure
to start is recorded too.
``HLORT_PLATFORMS=cuda,cpu`` restricts the backends to those listed, in that order, and any listed
backend that cannot start raises (UNAVAILABLE or NOT_FOUND, with the reason and the fix).
Without it, the default backend is the highest-priority one that starts.
"""

from __future__ import annotations

import inspect
import os
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from hlort import log
from hlort.errors import FailedPrecondition, HlortError, InvalidArgument, NotFound, Unavailable
from hlort.plugin.api import Client, Plugin
from hlort.plugin.backend_record import BROKEN, BackendRecord, BackendStatus, describe_error
from hlort.plugin.bounded_call import BoundedCall, plugin_timeout_s
from hlort.plugin.failure_advice import PLUGIN_BUG_FIX, import_failure
from hlort.plugin.name_claims import Claim, resolve
from hlort.plugin.selection_log import log_default as _log_default
from hlort.plugin.versioning import check_api_version

if TYPE_CHECKING:
    from importlib import metadata

ENTRY_POINT_GROUP = "hlort.plugins"
PLATFORMS_ENV = "HLORT_PLATFORMS"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class Registry:
    """Backends known to this process. Thread-safe; discovery happens once, on first use."""

    def __init__(
        self,
        group: str | None = ENTRY_POINT_GROUP,
        include_builtin: bool = True,
        environ: dict[str, str] | None = None,
        timeout_s: float | None = None,
    ):
        self.group = group
        self.include_builtin = include_builtin
        self._environ = environ
        self._timeout_s = timeout_s
        self._lock = threading.RLock()
        self._records: dict[str, BackendRecord] = {}
        self._discovered = False

    # -- discovery -----------------------------------------------------------------------------
    def discover(self) -> None:
        with self._lock:
            if self._discovered:
                return
            self._discovered = True
            claims: list[Claim] = []
            if self.include_builtin:
                from hlort.plugin.interpreter_backend import InterpreterPlugin

                claims.append(Claim(InterpreterPlugin(), "built-in", builtin=True))
            if self.group:
                from hlort.plugin.entry_point_scan import entry_points as group_entry_points

                try:
                    entry_points = group_entry_points(self.group)
                except Exception as exc:  # noqa: BLE001 - broken metadata must not stop hlort
                    self._fail(
                        "<entry points>",
                        f"group {self.group}",
                        exc,
                        "",
                        "reading installed distributions failed",
                    )
                    entry_points = []
                for ep in sorted(entry_points, key=lambda e: (e.name, e.value)):
                    claims += self._load_entry_point(ep)
            winners, refusals = resolve(claims)
            for claim in winners:
                self.register(claim.plugin, source=claim.source, wait=False)
            for refusal in refusals:
                name = refusal.claim.name
                if name not in self._records:
                    self._record(
                        BackendRecord(
                            name,
                            "several plugins",
                            BackendStatus.REJECTED,
                            message=refusal.message,
                            fix=refusal.fix,
                        )
                    )
                self._record(
                    BackendRecord(
                        f"{name} (also claimed by {refusal.claim.distribution or 'a plugin'})",
                        refusal.claim.source,
                        BackendStatus.REJECTED,
                        message=refusal.message,
                        fix=refusal.fix,
                    )
                )

    def _load_entry_point(self, ep: metadata.EntryPoint) -> list[Claim]:
        dist = getattr(ep, "dist", None)
        dist_name = dist.metadata["Name"] if dist is not None else None
        source = f"entry point {ep.name} = {ep.value}" + (f" ({dist_name})" if dist_name else "")
        reinstall = (
            f"reinstall or upgrade it (pip install -U {dist_name}), or uninstall it"
            if dist_name
            else "reinstall or uninstall the distribution providing it"
        )
        try:
            obj = ep.load()
        except BaseException as exc:  # noqa: BLE001 - one plugin must not break discovery
            what, fix = import_failure(exc, ep.value, dist_name, reinstall)
            self._fail(ep.name, source, exc, fix, what or "importing it raised", whole=bool(what))
            return []
        return [
            Claim(plugin, how, dist_name)
            for plugin, how in self._plugins_from(obj, ep.name, source, reinstall)
        ]

    def _plugins_from(self, obj, ep_name: str, source: str, fix: str):
        """Turn what an entry point named into (plugin, source) pairs, recording failures."""
        if isinstance(obj, Plugin):
            return [(obj, source)]
        try:
            if inspect.isclass(obj) and issubclass(obj, Plugin):
                return [(obj(), source)]
            hook = getattr(obj, "hlort_register_plugin", None)
            if hook is not None:
                return self._call_hooks(obj, source)
            if callable(obj) and not inspect.isclass(obj):
                return [(p, source) for p in _as_list(obj())]
        except BaseException as exc:  # noqa: BLE001
            self._fail(ep_name, source, exc, fix, "creating the plugin object failed")
            return []
        self._record(
            BackendRecord(
                ep_name,
                source,
                BackendStatus.REJECTED,
                message=f"the entry point names a {type(obj).__name__}, not an "
                f"hlort.plugin.api.Plugin, Plugin subclass, factory or hook module",
                fix="point the entry point at the plugin object (module:attribute)",
            )
        )
        return []

    def _call_hooks(self, obj, source: str):
        from hlort.plugin.hookspecs import new_plugin_manager  # pluggy: only for hook modules

        manager = new_plugin_manager()
        manager.register(obj)
        out = []
        for impl in manager.hook.hlort_register_plugin.get_hookimpls():
            where = f"{source}, hook {getattr(impl.function, '__qualname__', impl.plugin_name)}"
            try:
                out += [(p, where) for p in _as_list(impl.function())]
            except BaseException as exc:  # noqa: BLE001
                self._fail(
                    impl.plugin_name,
                    where,
                    exc,
                    "fix or uninstall the plugin",
                    "its hlort_register_plugin hook raised",
                )
        return out

    def register(
        self, plugin: Plugin, source: str = "registered in process", *, wait: bool = True
    ) -> BackendRecord:
        """Add a plugin (discovery uses this; tests and embedders may too). Never raises.
        With ``wait`` its probe's answer is in the record on return, else when first needed."""
        record = self._add(plugin, source)
        if wait:
            self._settle(record)
        return record

    def _add(self, plugin: Plugin, source: str) -> BackendRecord:
        with self._lock:
            name = getattr(plugin, "name", None)
            label = name if isinstance(name, str) and name else type(plugin).__name__
            if not isinstance(plugin, Plugin):
                return self._record(
                    BackendRecord(
                        label,
                        source,
                        BackendStatus.REJECTED,
                        message=f"{type(plugin).__name__} is not an hlort.plugin.api.Plugin",
                        fix="subclass hlort.plugin.api.Plugin (or hlort.plugin.base.SimplePlugin)",
                    )
                )
            if not isinstance(name, str) or not _NAME.match(name):
                return self._record(
                    BackendRecord(
                        label,
                        source,
                        BackendStatus.REJECTED,
                        message=f"platform name {name!r} is invalid",
                        fix="set name to lowercase letters, digits and '_' (e.g. name = 'tpusim')",
                    )
                )
            existing = self._records.get(name)
            if existing is not None and existing.plugin is not None:
                return self._record(
                    BackendRecord(
                        f"{name} (duplicate from {source})",
                        source,
                        BackendStatus.REJECTED,
                        message=f"platform {name!r} is already provided by {existing.source}",
                        fix="uninstall one of the two distributions",
                    )
                )
            try:
                check_api_version(getattr(plugin, "api_version", None), name)
            except HlortError as err:
                return self._record(
                    BackendRecord(
                        name, source, BackendStatus.REJECTED, plugin=None, message=err.message
                    )
                )
            priority = getattr(plugin, "priority", 0)
            if not isinstance(priority, int) or isinstance(priority, bool):
                return self._record(
                    BackendRecord(
                        name,
                        source,
                        BackendStatus.REJECTED,
                        message=f"priority {priority!r} is not an int",
                        fix="set priority to an int (higher is preferred)",
                    )
                )
            record = BackendRecord(
                name,
                source,
                BackendStatus.NOT_STARTED,
                plugin=plugin,
                priority=priority,
                pending=BoundedCall(plugin.probe, f"{name} probe", start=False),
            )
            return self._record(record)

    def _start_probes(self) -> None:
        """Start every probe not started yet: waiting for them in turn costs the slowest one."""
        with self._lock:
            calls = [r.pending for r in self._records.values() if r.pending is not None]
        for call in calls:
            call.start()

    def timeout_s(self) -> float:
        if self._timeout_s is not None:
            return self._timeout_s
        return plugin_timeout_s(None if self._environ is None else {**os.environ, **self._environ})

    def _settle(self, record: BackendRecord) -> None:
        """Put the probe's answer into ``record`` (waiting for it within the timeout). Called
        without the lock held: the wait must not block other threads' registry calls."""
        call = record.pending
        if call is None:
            return
        timeout = self.timeout_s()
        finished = call.wait(timeout)
        with self._lock:
            if record.pending is not call:  # another thread settled it meanwhile
                return
            record.pending = None
            self._apply_probe(record, call, finished, timeout)

    @staticmethod
    def _apply_probe(
        record: BackendRecord, call: BoundedCall, finished: bool, timeout: float
    ) -> None:
        if not finished:
            record.status = BackendStatus.UNAVAILABLE
            record.message = f"probe timed out after {timeout:g} s"
            record.fix = (
                "fix or uninstall the plugin, leave it out of HLORT_PLATFORMS, or "
                "raise HLORT_PLUGIN_TIMEOUT"
            )
            return
        if call.error is not None:
            record.status = BackendStatus.FAILED
            record.message = f"probe() raised {describe_error(call.error)}"
            record.fix = PLUGIN_BUG_FIX.format(what="answer with a ProbeResult, never raise")
            record.detail = call.trace
            return
        probe = call.result
        available = getattr(probe, "available", None)
        if available is None:
            record.status = BackendStatus.FAILED
            record.message = f"probe() returned {type(probe).__name__}, not a ProbeResult"
            record.fix = PLUGIN_BUG_FIX.format(what="return hlort.plugin.api.ProbeResult")
        elif not available:
            record.status = BackendStatus.UNAVAILABLE
            record.message = probe.reason or "probe() said unavailable"
            record.fix = probe.fix

    def _record(self, record: BackendRecord) -> BackendRecord:
        key = record.name
        while key in self._records and (self._records[key].plugin is not None or " (" in key):
            key += "'"
        record.name = key
        self._records[key] = record
        return record

    def _fail(
        self, name: str, source: str, exc: BaseException, fix: str, what: str, whole=False
    ) -> None:
        """Record a failure: ``what`` and the error, or ``what`` alone when ``whole`` (it
        already says what the error says)."""
        import traceback  # only on failure: ~1 ms of a first compile otherwise

        self._record(
            BackendRecord(
                name,
                source,
                BackendStatus.FAILED,
                message=what if whole else f"{what}: {describe_error(exc)}",
                fix=fix,
                detail="".join(traceback.format_exception(exc)),
            )
        )

    # -- queries -------------------------------------------------------------------------------
    def records(self) -> list[BackendRecord]:
        """Every backend, working or not: enabled ones by preference, then the rest by name."""
        self.discover()
        self._start_probes()
        with self._lock:
            records = list(self._records.values())
        for record in records:
            self._settle(record)
        order = {name: i for i, name in enumerate(self.platform_order())}

        def key(r: BackendRecord):
            group = 0 if r.usable else 1
            if not self.is_enabled(r.name):
                group = 2
            return (group, order.get(r.name, len(order)), -r.priority, r.name)

        return sorted(records, key=key)

    def record(self, name: str) -> BackendRecord | None:
        """The record of platform ``name`` alone (no other plugin's probe is waited for)."""
        self.discover()
        with self._lock:
            record = self._records.get(name)
        if record is not None:
            self._settle(record)
        return record

    def errors(self) -> dict[str, str]:
        """``{name: reason}`` for every backend that failed to load, probe or start."""
        return {r.name: r.reason() for r in self.records() if r.status in BROKEN}

    def requested_platforms(self) -> list[str] | None:
        """The names in HLORT_PLATFORMS, in order, or None when it is unset or empty."""
        environ = os.environ if self._environ is None else self._environ
        value = environ.get(PLATFORMS_ENV, "")
        names = [n.strip() for n in value.split(",") if n.strip()]
        return names or None

    def platform_order(self) -> list[str]:
        """Names of the enabled backends, most preferred first (HLORT_PLATFORMS order if set)."""
        requested = self.requested_platforms()
        if requested is not None:
            return list(dict.fromkeys(requested))
        with self._lock:
            plugins = [r for r in self._records.values() if r.plugin is not None]
        return [r.name for r in sorted(plugins, key=lambda r: (-r.priority, r.name))]

    def is_enabled(self, name: str) -> bool:
        requested = self.requested_platforms()
        return requested is None or name in requested

    # -- selection -----------------------------------------------------------------------------
    def client(self, name: str) -> Client:
        """The running client of platform ``name``, started on first use. The registry's lock
        is not held while a probe or ``create_client()`` runs, so plugin code may call back into
        the registry (a wrapping plugin's ``hlort.backend(...)``)."""
        self.discover()
        requested = self.requested_platforms()
        with self._lock:
            record = self._records.get(name)
        if record is None:
            known = ", ".join(r.name for r in self.records() if r.usable)
            hint = (
                f"; fix: install the plugin for {name!r} or remove it from {PLATFORMS_ENV}"
                if requested and name in requested
                else f"; fix: use one of them, or install the plugin for {name!r}"
            )
            where = f"{PLATFORMS_ENV} lists {name!r}, but" if requested else "no backend named"
            what = "no installed plugin provides it" if requested else repr(name)
            raise NotFound(f"{where} {what} (available platforms: {known or 'none'}){hint}")
        if requested is not None and name not in requested:
            raise NotFound(
                f"platform {name!r} is disabled by {PLATFORMS_ENV}={','.join(requested)}; "
                f"add it there or unset {PLATFORMS_ENV}"
            )
        self._settle(record)
        with self._lock:
            if record.status in BROKEN:
                listed = f" (listed in {PLATFORMS_ENV})" if requested else ""
                verb = {
                    BackendStatus.FAILED: "failed",
                    BackendStatus.REJECTED: "was rejected",
                    BackendStatus.UNAVAILABLE: "is unavailable",
                }[record.status]
                also = f"; or remove {name} from {PLATFORMS_ENV}" if requested else ""
                raise Unavailable(f"backend {name!r}{listed} {verb}: {record.reason()}{also}")
            if record.client is not None:
                return record.client
            call = record.starting
            if call is None:  # the first caller starts it; others wait for the same call
                call = record.starting = BoundedCall(
                    record.plugin.create_client, f"{record.name} client"
                )  # type: ignore
        timeout = self.timeout_s()
        finished = call.wait(timeout)
        with self._lock:
            if record.client is not None:
                return record.client
            if record.starting is not call:  # another waiter recorded the failure
                raise Unavailable(f"backend {record.name!r} failed to start: {record.message}")
            record.starting = None
            return self._publish_client(record, call, finished, timeout)

    def _publish_client(
        self, record: BackendRecord, call: BoundedCall, finished: bool, timeout: float
    ) -> Client:
        if not finished:
            record.status = BackendStatus.UNAVAILABLE
            record.message = f"create_client() timed out after {timeout:g} s"
            record.fix = "fix or uninstall the plugin, or raise HLORT_PLUGIN_TIMEOUT"
            raise Unavailable(f"backend {record.name!r} failed to start: {record.message}")
        try:
            if call.error is not None:
                raise call.error
            client = call.result
            if not isinstance(client, Client):
                raise FailedPrecondition(
                    f"create_client() returned a {type(client).__name__}, not an "
                    f"hlort.plugin.api.Client"
                )
            if client.platform_name != record.name:
                raise FailedPrecondition(
                    f"create_client() returned a client whose platform_name is "
                    f"{client.platform_name!r}; it must equal the plugin name {record.name!r}"
                )
        except BaseException as exc:  # noqa: BLE001
            record.status = BackendStatus.FAILED
            record.message = f"client creation failed: {describe_error(exc)}"
            import traceback  # only on failure

            record.detail = traceback.format_exc()
            raise Unavailable(
                f"backend {record.name!r} failed to start: {describe_error(exc)}"
            ) from exc
        record.client = client
        record.status = BackendStatus.OK
        return client

    def clients(self) -> dict[str, Client]:
        """Every enabled backend that starts, most preferred first.

        With HLORT_PLATFORMS set, every listed backend must start, or this raises.
        """
        self.discover()
        self._start_probes()
        requested = self.requested_platforms()
        out: dict[str, Client] = {}
        for name in self.platform_order():
            if requested is not None:
                out[name] = self.client(name)
                continue
            try:
                out[name] = self.client(name)
            except HlortError:
                continue  # recorded; errors() reports it
        if not out:
            raise Unavailable(self._nothing_started())
        return out

    def default_client(self) -> Client:
        """HLORT_PLATFORMS's first entry (all listed must start), else the best that starts."""
        self.discover()
        if self.requested_platforms() is not None:
            name, client = next(iter(self.clients().items()))
            _log_default(name, "the first of HLORT_PLATFORMS", [])
            return client
        skipped: list[str] = []
        self._start_probes()
        for name in self.platform_order():
            try:
                client = self.client(name)
            except HlortError as err:
                skipped.append(f"{name} ({err.message})")
                continue
            _log_default(name, "the highest-priority backend that started", skipped)
            return client
        raise Unavailable(self._nothing_started())

    def _nothing_started(self) -> str:
        errors = "; ".join(f"{k}: {v}" for k, v in self.errors().items()) or "none registered"
        return f"no backend could start ({errors}); run `hlort devices` for details"

    def close(self) -> None:
        with self._lock:
            for record in self._records.values():
                if record.client is not None:
                    try:
                        record.client.close()
                    finally:
                        record.client = None
                        record.status = BackendStatus.NOT_STARTED


def _as_list(value) -> list[Plugin]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def parse_device_string(text: str) -> tuple[str, int | None]:
    """``"cpu:0"`` -> ("cpu", 0); ``"cpu"`` -> ("cpu", None)."""
    name, sep, index = text.partition(":")
    name = name.strip()
    if not name or (sep and not index.strip().isdigit()):
        raise InvalidArgument(
            f"device {text!r} is not of the form 'platform' or 'platform:N' (e.g. 'cpu:0')"
        )
    return name, int(index) if sep else None


_default: Registry | None = None
_default_lock = threading.Lock()


def default_registry() -> Registry:
    """The process-wide registry used by ``hlort.devices()`` and friends."""
    global _default
    with _default_lock:
        if _default is None:
            log.configure_from_env()  # HLORT_LOG_LEVEL, before the first discovery logs
            _default = Registry()
        return _default


def reset_default_registry(factory: Callable[[], Registry] | None = None) -> Registry:
    """Close the clients and start over (tests; after installing a plugin at runtime)."""
    global _default
    with _default_lock:
        if _default is not None:
            _default.close()
        _default = (factory or Registry)()
        return _default


def register_plugin(plugin: Plugin) -> BackendRecord:
    """Register a plugin object in the default registry, without an entry point."""
    registry = default_registry()
    registry.discover()
    return registry.register(plugin)

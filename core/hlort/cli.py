"""The ``hlort`` command line (see docs/cli.md).

Exit codes: 0 success, 1 internal error, 2 bad input or usage, 3 unsupported on this platform
(UNIMPLEMENTED). Errors are one line on stderr, ``hlort: error: CODE: message``; ``--debug``
adds the traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence

from hlort.cli_cache import add_cache_command
from hlort.cli_options import add_compile_options, compile_options_from_args
from hlort.cli_progress import conformance_env, conformance_progress_args
from hlort.cli_verbosity import add_verbosity, apply_verbosity
from hlort.errors import ErrorCode, HlortError, Internal, InvalidArgument, Unimplemented

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    import numpy as np

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT, EXIT_UNSUPPORTED = 0, 1, 2, 3
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a Unix tool killed by a closed pipe
_BAD_INPUT_CODES = {
    ErrorCode.INVALID_ARGUMENT,
    ErrorCode.NOT_FOUND,
    ErrorCode.OUT_OF_RANGE,
    ErrorCode.ALREADY_EXISTS,
    ErrorCode.FAILED_PRECONDITION,
    ErrorCode.DATA_LOSS,
    ErrorCode.UNAVAILABLE,
    ErrorCode.PERMISSION_DENIED,
    ErrorCode.UNAUTHENTICATED,
}


def exit_code_for(code: ErrorCode) -> int:
    if code is ErrorCode.UNIMPLEMENTED:
        return EXIT_UNSUPPORTED
    return EXIT_BAD_INPUT if code in _BAD_INPUT_CODES else EXIT_INTERNAL


def _error(code: str, message: str) -> None:
    print(f"hlort: error: {code}: {' '.join(message.split())}", file=sys.stderr)


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors through :func:`main` (one line, exit 2)."""

    def error(self, message: str):  # type: ignore[override]
        raise _UsageError(f"{message} (see `{self.prog} --help`)")


# -- devices -------------------------------------------------------------------------------------
def cmd_devices(args: argparse.Namespace) -> int:
    from hlort.plugin.registry import BackendStatus, default_registry
    from hlort.runtime.selection import backend_for_client

    registry = default_registry()
    requested = registry.requested_platforms()
    listed_failure: HlortError | None = None
    if requested is not None:
        names = registry.platform_order()  # exactly the listed ones, known or not
    else:
        names = [r.name for r in registry.records() if r.usable]
    for name in names:
        try:
            registry.client(name)
        except HlortError as err:  # recorded in the registry and printed below
            if requested is not None and listed_failure is None:
                listed_failure = err
    records = registry.records()
    started = {r.name for r in records if r.status is BackendStatus.OK}
    default = next((n for n in registry.platform_order() if n in started), None)
    for record in records:
        if record.status is BackendStatus.OK and record.client is not None:
            attrs = record.plugin.attributes() if record.plugin is not None else {}
            version = attrs.get("version", record.client.platform_version)
            tag = " (default)" if record.name == default else ""
            print(
                f"{record.name:<16} ok{tag}: version {version}, priority {record.priority}, "
                f"{record.source}"
            )
            backend = backend_for_client(record.client)
            for device in backend.devices():
                extra = " ".join(f"{k}={v}" for k, v in device.attributes().items())
                print(f"  {str(device):<22} {device.kind}{'  ' + extra if extra else ''}")
        elif not registry.is_enabled(record.name):
            print(f"{record.name:<16} disabled: not listed in HLORT_PLATFORMS")
        else:
            line = " ".join(record.reason().split())
            print(f"{record.name:<16} {record.status.value}: {line} [{record.source}]")
            if args.debug and record.detail:
                print(record.detail, file=sys.stderr)
    if listed_failure is not None:
        raise listed_failure
    return EXIT_OK


# -- run -----------------------------------------------------------------------------------------
def _backend_and_device(platform: str | None, device_id: int | None):
    import hlort

    backend = hlort.backend(platform)
    return backend, backend.device(device_id)


def _load(path: str):
    from hlort.runtime.program import parse_program, read_program_file
    from hlort.testdata import check_targets  # noqa: F401  (corpus programs' check.* calls)

    text, fmt = read_program_file(path)
    return parse_program(text, fmt, source_name=path), fmt


def cmd_run(args: argparse.Namespace) -> int:
    from hlort.cli_run_report import run_report, timed_repeats
    from hlort.runtime.npz_io import check_output_path, read_inputs, write_outputs
    from hlort.runtime.sample_inputs import random_inputs

    if args.repeat < 1:
        raise InvalidArgument(f"--repeat must be >= 1, got {args.repeat}")
    if args.output:
        check_output_path(args.output)  # before any work, not after it
    start = time.perf_counter()
    from hlort.cli_polymorphic import refine_for_run

    refined = refine_for_run(args.module, args.inputs)  # '?' dims: refined to the inputs' shapes
    module, fmt = refined if refined is not None else _load(args.module)
    load_s = time.perf_counter() - start
    from hlort.cli_multidevice import copies, run_on_devices

    if copies(module) > 1:  # a header asking for several replicas/partitions: that many devices
        options = compile_options_from_args(args)
        report, results, exe, transfer_in_s, transfer_out_s = run_on_devices(
            args, module, fmt, options
        )
        if args.profile:
            compile_s = report["compile_ms"] / 1e3
            report["profile"] = _profile(exe, load_s, compile_s, transfer_in_s, transfer_out_s)
        return _emit_run(args, report, results)
    backend, device = _backend_and_device(args.platform, args.device)
    start = time.perf_counter()
    exe = backend.compile(module, device, compile_options_from_args(args))
    compile_s = time.perf_counter() - start
    shapes = exe.input_shapes
    if args.inputs:
        inputs = read_inputs(args.inputs, shapes)
    else:
        inputs = random_inputs(shapes, seed=0)
    start = time.perf_counter()
    buffers = [backend.device_put(a, device) for a in inputs]
    for b in buffers:
        b.block_until_ready()
    transfer_in_s = time.perf_counter() - start
    outputs, times = timed_repeats(lambda: exe.execute(buffers), args.repeat)
    start = time.perf_counter()
    results = [out.numpy() for out in outputs]
    transfer_out_s = time.perf_counter() - start
    if args.output:
        write_outputs(args.output, results)
    report = run_report(
        module=module,
        fmt=fmt,
        platform=backend.platform,
        devices=[str(device)],
        input_shapes=shapes,
        output_shapes=exe.output_shapes,
        inputs_source=args.inputs or "random (seed 0)",
        compile_s=compile_s,
        times=times,
        output_file=args.output,
    )
    if args.profile:
        report["profile"] = _profile(exe, load_s, compile_s, transfer_in_s, transfer_out_s)
    return _emit_run(args, report, results)


def _emit_run(args: argparse.Namespace, report: dict, results: list) -> int:
    if args.json:
        print(json.dumps(report, indent=2))
        return EXIT_OK
    _print_run(report, results, show_values=not args.output)
    return EXIT_OK


def _profile(exe, load_s: float, compile_s: float, transfer_in_s: float, transfer_out_s: float):
    from hlort.runtime.run_profile import phases_ms

    phases = phases_ms(
        exe.timings,
        parse_s=load_s,
        compile_s=compile_s,
        transfer_in_s=transfer_in_s,
        transfer_out_s=transfer_out_s,
    )
    profile: dict = {"phases_ms": phases}
    getters = (
        ("cost_analysis", exe.cost_analysis),
        ("compiled_memory_stats", exe.compiled_memory_stats),
        ("execution_profile", getattr(exe.raw, "execution_profile", None)),
    )
    for key, getter in getters:
        if getter is None:  # execution_profile: optional, plugins with a device model have it
            continue
        try:
            value = getter()
        except HlortError:
            continue
        profile[key] = dict(value) if isinstance(value, dict) else vars(value)
    profile["fallbacks"] = _fallbacks(exe)
    return profile


def _fallbacks(exe) -> list[str]:
    """Each instruction the executable runs on the reference interpreter, with the reason."""
    getter = getattr(exe.raw, "fallbacks", None)
    return [str(r) for r in getter()] if getter is not None else []


def _print_fallbacks(reasons: list[str], indent: str, stream) -> None:
    print(
        f"{indent}fallbacks: {len(reasons)} (instructions on the reference interpreter)",
        file=stream,
    )
    for reason in reasons:
        print(f"{indent}  {' '.join(reason.split())}", file=stream)


def _shape_text(d: dict) -> str:
    return f"{d['name']} {d['dtype']}[{','.join(map(str, d['shape']))}]"


def _print_run(report: dict, results: list[np.ndarray], show_values: bool) -> None:
    print(f"module   {report['module']} ({report['format']}) on {report['device']}")
    print(
        f"inputs   {', '.join(map(_shape_text, report['inputs'])) or '(none)'}"
        f"  [{report['inputs_source']}]"
    )
    print(f"outputs  {', '.join(map(_shape_text, report['outputs'])) or '(none)'}")
    print(f"compile  {report['compile_ms']:.3f} ms")
    runs = len(report["execute_ms"])
    if runs == 1:
        print(f"execute  {report['execute_ms_mean']:.3f} ms")
    else:
        print(
            f"execute  {report['execute_ms_mean']:.3f} ms mean, "
            f"{report['execute_ms_min']:.3f} ms min over {runs} runs"
        )
    if "profile" in report:
        from hlort.runtime.run_profile import format_device_value, format_number, phase_lines

        for line in phase_lines(report["profile"]["phases_ms"], report["compile_ms"]):
            print(f"  {line}")
        for key in ("cost_analysis", "compiled_memory_stats"):
            if key in report["profile"]:
                values = report["profile"][key].items()
                print(f"  {key}: {', '.join(f'{k}={format_number(v)}' for k, v in values)}")
        for k, v in report["profile"].get("execution_profile", {}).items():
            print(f"  device {k}: {format_device_value(k, v)}")
        _print_fallbacks(report["profile"]["fallbacks"], "  ", sys.stdout)
    if "output_file" in report:
        print(f"wrote    {report['output_file']} ({len(results)} array(s))")
    elif show_values:
        import numpy as np  # not at module level: `hlort --help` must not pay for NumPy

        with np.printoptions(threshold=20, edgeitems=3, linewidth=100):
            for i, value in enumerate(results):
                print(f"out{i} = {np.array2string(value, separator=', ')}")


# -- compile -------------------------------------------------------------------------------------
def cmd_compile(args: argparse.Namespace) -> int:
    module, _fmt = _load(args.module)
    if args.target:
        backend, device = _compile_only_backend(args.platform, args.target), None
    else:
        backend, device = _backend_and_device(args.platform, None)
        from hlort.cli_multidevice import copies, require_devices

        if copies(module) > 1:
            require_devices(backend, module)
    exe = backend.compile(module, device, compile_options_from_args(args, args.dump_dir))
    sys.stdout.write(exe.as_text().rstrip("\n") + "\n")
    sys.stdout.flush()
    from hlort.cli_graph import after_compile

    after_compile(args, exe)
    _print_fallbacks(_fallbacks(exe), f"hlort: {backend.platform}: ", sys.stderr)
    return EXIT_OK


def _compile_only_backend(platform: str | None, target: str):
    """A backend for ``--target``: the plugin's compile-only client, so compiling for a GPU
    needs no GPU (the plugin is used even when its probe says the hardware is missing)."""
    from hlort.errors import NotFound, Unavailable
    from hlort.plugin.registry import default_registry
    from hlort.runtime.client import Backend

    if not platform:
        raise InvalidArgument("--target needs --platform (e.g. --platform cuda --target sm_90)")
    record = default_registry().record(platform)
    if record is None:
        raise NotFound(f"no backend named {platform!r} is installed; see `hlort devices`")
    if record.plugin is None:
        raise Unavailable(f"the {platform} plugin did not load: {record.reason()}")
    return Backend(record.plugin.create_compile_only_client(target), record.plugin)


# -- commands other engineers implement ---------------------------------------------------------
def _import_optional(module_name: str, feature: str):
    import importlib

    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is not None and module_name.startswith(err.name):
            raise Unimplemented(
                f"{feature} is not available in this installation ({module_name} is missing)"
            ) from None
        raise


def _check_conformance_profile(backend) -> None:
    """A profile entry that matches nothing stops the suite; say so in one line, up front."""
    from hlort.plugin.conformance_profile import ConformanceProfile

    try:
        profile = backend.plugin.conformance_profile() if backend.plugin is not None else None
    except Exception:  # noqa: BLE001 - the suite reports a broken profile in full
        return
    problems = profile.problems() if isinstance(profile, ConformanceProfile) else []
    if problems:
        raise InvalidArgument(
            f"the conformance profile of {backend.platform!r} has entries that match nothing: "
            f"{'; '.join(problems)}; fix or remove them in its conformance_profile()"
        )


def cmd_conformance(args: argparse.Namespace) -> int:
    import importlib.util

    import hlort

    backend = hlort.backend(args.platform)  # unknown or broken platform -> exit 2 here, clearly
    for module, fix in (
        ("pytest", "pip install 'hlort[testing]' (it brings pytest)"),
        ("hlort.testing.pytest_plugin", "reinstall hlort"),
    ):
        if importlib.util.find_spec(module) is None:
            raise Unimplemented(
                f"the conformance suite needs {module}, which this installation lacks; fix: {fix}"
            )
    _check_conformance_profile(backend)
    # -c devnull and --noconftest: the suite runs the same whatever pytest configuration the
    # current directory has (a project's conftest.py, e.g. hlort's own with HLORT_FALLBACK=error,
    # would otherwise apply when the suite is installed in editable mode below it);
    # no:hypothesispytest saves hypothesis's ~2 s of start-up (the suite does not use it).
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "hlort.testing",
        "--hlort-platform",
        args.platform,
        "-c",
        os.devnull,
        "--rootdir",
        os.getcwd(),
        "--noconftest",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:hypothesispytest",
    ]
    if args.quick:
        cmd.append("--hlort-quick")
    if args.strict:
        cmd.append("--hlort-strict")
    if args.report:
        cmd += ["--hlort-report", args.report]
    if args.junit_xml:
        cmd += ["--junitxml", args.junit_xml]
    rc = subprocess.call(cmd + conformance_progress_args(), **conformance_env())
    if rc == 0:
        return EXIT_OK
    if rc == 1:  # some tests failed: pytest has printed them
        return EXIT_INTERNAL
    if rc == 2:  # interrupted
        return 130
    if rc == 4:  # usage error: pytest has printed it (e.g. the platform cannot start there)
        raise InvalidArgument(
            f"the conformance suite could not start on {args.platform!r} "
            f"(pytest usage error, printed above)"
        )
    if rc == 5:  # no tests collected
        raise Unimplemented(
            "the conformance suite (hlort.testing) is not available in this "
            "installation: pytest collected no tests from it"
        )
    raise Internal(f"pytest stopped with exit status {rc} running the conformance suite")


def cmd_new_plugin(args: argparse.Namespace) -> int:
    module = _import_optional("hlort.plugin.new_plugin", "hlort new-plugin")
    argv = [args.name] + (["--dest", args.dest] if args.dest else [])
    return int(module.main(argv) or 0)


def cmd_testdata(args: argparse.Namespace) -> int:
    module = _import_optional("hlort.testdata_runner", "hlort testdata")
    argv = list(args.paths)
    if args.platform:
        argv += ["--platform", args.platform]
    if args.jobs is not None:
        argv += ["--jobs", str(args.jobs)]
    if args.report:
        argv += ["--report", args.report]
    if args.timeout is not None:
        argv += ["--timeout", str(args.timeout)]
    if getattr(args, "verbose", 0):  # -v of the shared parent parser (cli_verbosity)
        argv.append("--verbose")
    for option in args.option:
        argv += ["--option", option]
    return int(module.main(argv) or 0)


# -- parser and main -----------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks"
    )
    add_verbosity(common, subcommand=True)
    parser = _Parser(prog="hlort", description="hlort: run ML programs on pluggable backends")
    parser.add_argument("--debug", action="store_true", default=False, help="show tracebacks")
    add_verbosity(parser, subcommand=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("devices", parents=[common], help="list backends and their devices")
    p.set_defaults(handler=cmd_devices)

    p = sub.add_parser("run", parents=[common], help="run a module (HLO or StableHLO text)")
    p.add_argument("module", metavar="MODULE")
    p.add_argument("--inputs", metavar="IN.npz", help="arguments arg0..argN-1 (default: random)")
    p.add_argument("--output", metavar="OUT.npz", help="write results out0..outM-1")
    p.add_argument("--platform", metavar="P", help="backend to use (default: the default one)")
    p.add_argument("--device", metavar="N", type=int, help="device id on that backend")
    p.add_argument("--repeat", metavar="N", type=int, default=1, help="execute N times")
    p.add_argument("--json", action="store_true", help="print a JSON report")
    p.add_argument("--profile", action="store_true", help="time every phase")
    add_compile_options(p)
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("compile", parents=[common], help="print the optimized HLO of a module")
    p.add_argument("module", metavar="MODULE")
    p.add_argument("--platform", metavar="P")
    p.add_argument(
        "--dump-dir",
        metavar="D",
        help="write the module after each pass and the backend's artifacts here",
    )
    p.add_argument(
        "--target",
        metavar="T",
        help="compile ahead of time for this target of the "
        "platform (e.g. sm_90 for cuda); needs no device",
    )
    add_compile_options(p)
    p.set_defaults(handler=cmd_compile)
    from hlort.cli_graph import add_compile_options as add_graph_options
    from hlort.cli_graph import add_graph_command

    add_graph_options(p)
    add_graph_command(sub)

    p = sub.add_parser("conformance", parents=[common], help="run the conformance suite")
    p.add_argument("--platform", metavar="P", required=True)
    p.add_argument(
        "--report",
        metavar="FILE",
        help="write the suite's report to FILE.json and "
        "FILE.md (every test; the op x element-type table)",
    )
    p.add_argument("--junit-xml", metavar="FILE", help="also write a JUnit XML report")
    p.add_argument("--quick", action="store_true", help="a sample of the op cases (--hlort-quick)")
    p.add_argument(
        "--strict",
        action="store_true",
        help="fail when an expected failure passes (--hlort-strict)",
    )
    p.set_defaults(handler=cmd_conformance)

    add_cache_command(sub, common)

    p = sub.add_parser("new-plugin", parents=[common], help="create a plugin from the template")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--dest", metavar="DIR")
    p.set_defaults(handler=cmd_new_plugin)

    p = sub.add_parser("testdata", parents=[common], help="run StableHLO testdata files")
    p.add_argument("paths", metavar="PATH", nargs="+")
    p.add_argument("--platform", metavar="P")
    p.add_argument("--jobs", metavar="N", type=int)
    p.add_argument("--report", metavar="FILE")
    p.add_argument("--timeout", metavar="S", type=float, help="seconds per file (default 60)")
    p.add_argument(
        "--option",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="a compile target option for every compile (repeatable)",
    )
    p.set_defaults(handler=cmd_testdata)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except _UsageError as err:
        _error(ErrorCode.INVALID_ARGUMENT.name, str(err))
        return EXIT_BAD_INPUT
    except SystemExit as exit_:  # --help
        return int(exit_.code or 0) if not isinstance(exit_.code, str) else EXIT_BAD_INPUT
    debug = bool(getattr(args, "debug", False))
    try:
        apply_verbosity(args)
        return int(args.handler(args) or 0)
    except HlortError as err:
        if debug:
            traceback.print_exc()
        _error(err.code.name, err.message)
        return exit_code_for(err.code)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `hlort devices | head -1`: the reader left; say nothing more
        try:  # point stdout at devnull, so the flush at exit does not complain either
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (AttributeError, OSError, ValueError):
            pass  # stdout is not a real file (tests, embedding)
        return EXIT_BROKEN_PIPE
    except Exception as err:  # noqa: BLE001 - a bug: one line, traceback with --debug
        if debug:
            traceback.print_exc()
        hint = "" if debug else " (rerun with --debug for the traceback)"
        _error("INTERNAL", f"{type(err).__name__}: {err}{hint}")
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())

"""``--option KEY=VALUE`` on ``hlort run`` and ``hlort compile``: compile options by name.

The names are hlort.plugin.compile_flags' (``matmul_precision``, ``fallback``,
``disable_passes``, ``dump_dir``, ``verify_passes``, ``run_core_passes``); ``target.NAME=VALUE``
is a backend's own option (``CompileOptions.target_options``). An unknown name is
INVALID_ARGUMENT naming the known ones (exit status 2). ``HLORT_FLAGS`` applies too, under these.
"""

from __future__ import annotations

import argparse

# compile_flags.known_flag_names(), spelled out: importing hlort.plugin here would load NumPy
# for `hlort --help` (tests/runtime/test_compile_flags.py checks the two agree)
FLAG_NAMES = (
    "matmul_precision",
    "fallback",
    "disable_passes",
    "dump_dir",
    "verify_passes",
    "run_core_passes",
)


def add_compile_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--option",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help=f"a compile option (repeatable): {', '.join(FLAG_NAMES)}, or target.NAME for the "
        f"backend's own",
    )


def compile_options_from_args(args: argparse.Namespace, dump_dir: str | None = None):
    """The CompileOptions ``--option`` (and ``--dump-dir``, which wins) ask for."""
    from hlort.plugin.compile_flags import parse_key_values
    from hlort.runtime.compile import options_from_mapping

    mapping = parse_key_values(getattr(args, "option", []) or [])
    if dump_dir:
        mapping.setdefault("debug", {})["dump_dir"] = dump_dir
    return options_from_mapping(mapping)

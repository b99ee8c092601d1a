"""``--option KEY=VALUE`` on ``hlort run`` and ``hlort compile``: compile options by name.

The names are hlort.plugin.compile_flags' (``matmul_precision``, ``fallback``,
``disable_passes``, ``dump_dir``, ``verify_passes``, ``run_core_passes``); ``target.NAME=VALUE``
is a backend's own option (``CompileOptions.target_options``). An unknown name is
INVALID_ARGUMENT naming the known ones (exit status 2). ``HLORT_FLAGS`` applies too, under these.
"""

from __future__ import annotations

import argparse


def add_compile_options(parser: argparse.ArgumentParser) -> None:
    from hlort.plugin.compile_flags import known_flag_names

    parser.add_argument(
        "--option",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help=f"a compile option (repeatable): {', '.join(known_flag_names())}, or target.NAME "
        f"for the backend's own",
    )


def compile_options_from_args(args: argparse.Namespace, dump_dir: str | None = None):
    """The CompileOptions ``--option`` (and ``--dump-dir``, which wins) ask for."""
    from hlort.plugin.compile_flags import parse_key_values
    from hlort.runtime.compile import options_from_mapping

    mapping = parse_key_values(getattr(args, "option", []) or [])
    if dump_dir:
        mapping.setdefault("debug", {})["dump_dir"] = dump_dir
    return options_from_mapping(mapping)

"""``-v/--verbose`` for every ``hlort`` command: hlort's log records on stderr.

``-v`` shows INFO (which backend became the default and why, compile-cache hits and misses,
evictions), ``-vv`` DEBUG (each pass's decision too). Without it ``HLORT_LOG_LEVEL`` decides
(hlort.log). Records go to stderr, so ``--json`` output on stdout stays parseable.
"""

from __future__ import annotations

import argparse


def add_verbosity(parser: argparse.ArgumentParser, *, subcommand: bool) -> None:
    """``-v``, countable; a subcommand's parent leaves it unset so the top level's survives."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS if subcommand else 0,
        help="log what hlort decides on stderr (-v info, -vv debug)",
    )


def apply_verbosity(args: argparse.Namespace) -> None:
    from hlort import log  # not at import: `hlort --help` needs no logging module

    level = log.verbosity_level(int(getattr(args, "verbose", 0) or 0))
    if level is not None:
        log.enable(level)
    else:
        log.configure_from_env()

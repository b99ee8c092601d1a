"""``hlort testdata PATH... [--platform P] [--jobs N] [--report FILE]``: run StableHLO test corpora.

Each file (or ``// -----`` case) is imported with its ``check.*`` assertions collected, run on
the platform, and compared; the outcome is pass, fail (with the first mismatch: index, got,
expected), unsupported (naming the feature) or skipped (``RUN-DISABLED``). A summary by op
follows; the exit status is 1 when anything failed, 2 for bad usage, 0 otherwise.
``--option KEY=VALUE`` (repeatable) passes a compile target option to every compile, e.g.
``--platform tpusim --option default_precision=highest``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from hlort.errors import ErrorCode, HlortError
from hlort.testdata.cases import find_files
from hlort.testdata.execution import FAIL, OPTIONS_ENV, Outcome
from hlort.testdata.report import Summary
from hlort.testdata.scheduler import run_files
from hlort.testing.progress_bar import ProgressBar


def run_testdata(
    paths: list[str],
    platform: str = "interpreter",
    jobs: int = 1,
    report: str | None = None,
    timeout: float = 60.0,
    root: str | None = None,
    verbose: bool = False,
) -> Summary:
    """Run every ``.mlir`` file under ``paths``; returns the :class:`Summary` (and writes it to
    ``report`` when given). ``jobs=0`` runs in-process without a timeout."""
    files = find_files(list(paths), root)
    start = time.perf_counter()
    failed = 0
    bar = ProgressBar(len(files), f"testdata on {platform}", "file")  # a TTY only

    def progress(outcomes: list[Outcome]) -> None:
        nonlocal failed
        for o in outcomes:
            failed += o.status == FAIL
            if verbose or o.status == FAIL:
                bar.write(o.line())
        bar.update(1, f"{failed} failed" if failed else None)

    with bar:
        outcomes = run_files(files, platform, jobs, timeout, progress)
    summary = Summary(outcomes, platform, time.perf_counter() - start)
    if report:
        summary.write(report)
    return summary


def platform_problem(platform: str) -> str | None:
    """Why ``platform`` cannot run anything (an unknown backend name), or None. The reference
    interpreter always can; other platforms are looked up in the plugin registry when present."""
    if platform == "interpreter":
        return None
    try:
        import hlort

        hlort.backend(platform)
    except (ImportError, AttributeError):
        return None  # no runtime yet: each case reports "unsupported"
    except HlortError as err:
        if err.code is ErrorCode.NOT_FOUND:
            return err.message
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hlort testdata", description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", help="files or directories of .mlir tests")
    parser.add_argument(
        "--platform",
        default="interpreter",
        help="interpreter (default) or a plugin's platform name",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="worker processes (0: run in this process, no timeout)"
    )
    parser.add_argument("--report", help="write the report here (.json for JSON, else text)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per file")
    parser.add_argument("--root", help="report paths relative to this directory")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every outcome")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a compile target option, e.g. default_precision=highest (tpusim)",
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return 0 if exit_.code == 0 else 2
    options = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            print(
                f"hlort: error: INVALID_ARGUMENT: --option {item!r} is not KEY=VALUE",
                file=sys.stderr,
            )
            return 2
        options[key.strip()] = value.strip()
    previous = os.environ.pop(OPTIONS_ENV, None)
    if options:  # the workers inherit it; restored below
        os.environ[OPTIONS_ENV] = json.dumps(options)
    try:
        return _run(args)
    finally:
        os.environ.pop(OPTIONS_ENV, None)
        if previous is not None:
            os.environ[OPTIONS_ENV] = previous


def _run(args: argparse.Namespace) -> int:
    problem = platform_problem(args.platform)
    if problem:
        print(f"hlort: error: INVALID_ARGUMENT: {problem}", file=sys.stderr)
        return 2
    try:
        summary = run_testdata(
            args.paths, args.platform, args.jobs, args.report, args.timeout, args.root, args.verbose
        )
    except FileNotFoundError as err:
        print(
            f"hlort: error: INVALID_ARGUMENT: no such file or directory: {err}; "
            f"give .mlir files or directories of them",
            file=sys.stderr,
        )
        return 2
    print(summary.to_text(failures=0 if args.verbose else 50), end="")
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())

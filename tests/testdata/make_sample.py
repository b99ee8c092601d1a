"""Regenerate ``sample_expected.txt``: choose the corpus sample and record today's outcomes.

    .venv/bin/python tests/testdata/make_sample.py [--count 300] [--jobs 2]

Run it after an improvement lands (the sample test warns when outcomes got better), review the
diff of the list, and commit it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_sample import (  # noqa: E402
    all_files,
    choose_sample,
    corpus_root,
    run_sample,
    write_expected,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    root = corpus_root()
    if root is None:
        print("no StableHLO testdata corpus found (../shared/stablehlo-testdata)", file=sys.stderr)
        return 2
    sample = choose_sample(all_files(root), args.count, root=root)
    start = time.perf_counter()
    results = run_sample(root, sample, args.jobs)
    write_expected(results)
    cases = sum(len(v) for v in results.values())
    passed = sum(v.count("pass") for v in results.values())
    print(
        f"{len(results)} files, {cases} cases, {passed} pass; {time.perf_counter() - start:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The ``hlort`` command line."""

import sys


def main(argv=None) -> int:
    print("hlort: the command line is not built yet", file=sys.stderr)
    return 3

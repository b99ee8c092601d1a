"""A progress bar for long runs (``hlort testdata``, ``hlort conformance``), only on a terminal.

tqdm draws it (chosen over rich: no dependencies of its own, and an import as cheap, ~40 ms
warm; it is imported only when a bar is shown). The bar goes to stderr and only when stderr is
a TTY, so logs, CI output and pipes stay plain text; ``HLORT_PROGRESS=0`` turns it off,
``=1`` forces it (tests). Without tqdm there is no bar, and nothing else changes.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

ENV_VAR = "HLORT_PROGRESS"


def bar_wanted(stream: TextIO | None = None) -> bool:
    stream = stream if stream is not None else sys.stderr
    setting = os.environ.get(ENV_VAR, "").strip()
    if setting == "0":
        return False
    if setting != "1":
        try:
            if not stream.isatty():
                return False
        except (AttributeError, ValueError):
            return False
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True


class ProgressBar:
    """``update(n)`` as work finishes; ``write(line)`` prints above the bar; ``close()``."""

    def __init__(self, total: int, description: str, unit: str, stream: TextIO | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self._bar = None
        if bar_wanted(self.stream):
            from tqdm import tqdm

            self._bar = tqdm(
                total=total, desc=description, unit=unit, file=self.stream, dynamic_ncols=True
            )

    @property
    def shown(self) -> bool:
        return self._bar is not None

    def update(self, n: int = 1, status: str | None = None) -> None:
        if self._bar is not None:
            if status:
                self._bar.set_postfix_str(status, refresh=False)
            self._bar.update(n)

    def write(self, line: str, file: TextIO | None = None) -> None:
        """``line`` on ``file`` (stdout), without breaking the bar."""
        if self._bar is not None:
            self._bar.write(line, file=file or sys.stdout)
        else:
            print(line, file=file or sys.stdout, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

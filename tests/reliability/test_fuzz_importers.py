"""Mutated program text through both importers: only HlortError ever escapes, nothing hangs.

Seeds are the committed HLO and StableHLO samples; hypothesis mutates them (spans deleted,
duplicated or swapped, bracket and punctuation noise, numbers replaced by huge or negative
ones, truncation) and each result goes through the HLO text parser or the StableHLO importer
(parse, convert, verify). Any other exception, or an import taking longer than ``_HANG_S``, fails.
CI runs ``HLORT_FUZZ_EXAMPLES`` examples per test (default 200); set it to 5000 for a long run.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hlort.errors import HlortError
from hlort.importers.stablehlo.importer import import_stablehlo
from hlort.text.parser import parse_module

TESTS = Path(__file__).resolve().parents[1]
HLO_SEEDS = sorted((TESTS / "text" / "samples").glob("*.hlo"))
MLIR_SEEDS = sorted((TESTS / "importers" / "samples").glob("*.mlir"))
EXAMPLES = int(os.environ.get("HLORT_FUZZ_EXAMPLES", "200"))
_HANG_S = 20
_NOISE = list("{}()[]<>,:=%#@!^\"'x-+.*/\\ \n\t0123456789") + [
    "tuple<",
    "tensor<",
    "dense<",
    "->",
    "%0:",
    "ROOT ",
    "ENTRY ",
    "f32[",
    "s64[",
    "(",
    "<",
    "stablehlo.",
    "func.func",
    "0x7FC00000",
    "1e309",
    "nan",
    "inf",
    "-",
    "?",
    "\x00",
    "\u00e9",
]
_NUMBER = re.compile(r"\d+")
_HUGE = [
    "0",
    "-1",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "1" + "0" * 40,
    "65536",
    "99999999",
]


class _Hang(Exception):
    pass


def _alarm(*_):
    raise _Hang()


@st.composite
def mutated(draw, seeds: list[Path]) -> str:
    text = draw(st.sampled_from(seeds)).read_text()
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        if n == 0:
            break
        i = draw(st.integers(0, n - 1))
        j = draw(st.integers(i, min(n, i + 200)))
        kind = draw(
            st.sampled_from(
                ["delete", "duplicate", "noise", "number", "swap", "truncate", "repeat"]
            )
        )
        if kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif kind == "noise":
            text = (
                text[:i] + "".join(draw(st.lists(st.sampled_from(_NOISE), max_size=8))) + text[i:]
            )
        elif kind == "number":
            numbers = list(_NUMBER.finditer(text))
            if numbers:
                m = draw(st.sampled_from(numbers))
                text = text[: m.start()] + draw(st.sampled_from(_HUGE)) + text[m.end() :]
        elif kind == "swap":
            lines = text.split("\n")
            a = draw(st.integers(0, len(lines) - 1))
            b = draw(st.integers(0, len(lines) - 1))
            lines[a], lines[b] = lines[b], lines[a]
            text = "\n".join(lines)
        elif kind == "repeat":  # deep nesting from a few bytes
            text = text[:i] + draw(st.sampled_from(["(", "tuple<", "{", "[", "<"])) * 400 + text[i:]
        else:
            text = text[:i]
    return text


def _import_only_hlort_errors(importer, text: str) -> None:
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(_HANG_S)
    try:
        importer(text)
    except HlortError:
        pass
    except _Hang:
        pytest.fail(f"import did not finish in {_HANG_S} s:\n{text[:2000]}")
    except Exception as err:  # noqa: BLE001 - exactly what this test looks for
        pytest.fail(f"{type(err).__name__} escaped the importer: {err}\n{text[:2000]}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_SETTINGS
@given(mutated(HLO_SEEDS))
def test_mutated_hlo_text_gives_only_hlort_errors(text):
    _import_only_hlort_errors(parse_module, text)


@_SETTINGS
@given(mutated(MLIR_SEEDS))
def test_mutated_stablehlo_gives_only_hlort_errors(text):
    _import_only_hlort_errors(import_stablehlo, text)


def test_the_seeds_import_cleanly():
    assert len(HLO_SEEDS) >= 5 and len(MLIR_SEEDS) >= 5
    for path in HLO_SEEDS:
        parse_module(path.read_text())
    for path in MLIR_SEEDS:
        import_stablehlo(path.read_text())

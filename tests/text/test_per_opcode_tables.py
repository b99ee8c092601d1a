"""The text view of the op table is derived per opcode on first lookup (PerOpcode), with the
same rows as deriving every opcode at import did."""

from __future__ import annotations

import subprocess
import sys

from hlort.ir.opcodes import Opcode
from hlort.text import attribute_syntax as S


def test_rows_equal_the_eager_derivation():
    for op in Opcode:
        attrs = tuple((a.text, a.key, a.type) for a in op.info.attrs)
        assert tuple(s[:3] for s in S.OP_ATTRS.get(op, ())) == attrs
        assert (op in S.OP_ATTRS) == bool(attrs)
        assert S.DEFAULTS.get(op, {}) == S._defaults(op, True)
        assert S.ABSENT_EQUIVALENTS.get(op, {}) == S._defaults(op, False)
        for spec in (*S.OP_ATTRS.get(op, ()), *S.PARSE_ALIASES.get(op, ())):
            assert S.spec_for(op, spec.text_key) == spec
    assert S.spec_for(Opcode.ADD, "no_such_key") is None
    assert dict(S.DEFAULTS.items()) == {op: d for op in Opcode if (d := S._defaults(op, True))}


def test_importing_derives_no_row():
    code = (
        "from hlort.text import attribute_syntax as S\n"
        "print(len(S.OP_ATTRS._made), len(S.DEFAULTS._made))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "0"]

"""OpRegistry: duplicates fail, modules load once on first read, missing() lists gaps."""

import sys
import types

import pytest

from hlort.ir.op_registry import OpRegistry
from hlort.ir.opcodes import Opcode


def test_register_and_read():
    reg: OpRegistry[Opcode, str] = OpRegistry("test entry")

    @reg.register(Opcode.ADD, Opcode.SUBTRACT)
    def fn():
        return "x"

    assert reg.get(Opcode.ADD) is fn and reg[Opcode.SUBTRACT] is fn
    assert Opcode.MULTIPLY not in reg and reg.get(Opcode.MULTIPLY) is None
    assert reg.missing([Opcode.ADD, Opcode.MULTIPLY, Opcode.DIVIDE]) == [
        Opcode.MULTIPLY,
        Opcode.DIVIDE,
    ]
    assert sorted(k.value for k in reg.keys()) == ["add", "subtract"]
    with pytest.raises(KeyError, match="no test entry for multiply"):
        reg[Opcode.MULTIPLY]


def test_duplicate_names_the_key():
    reg: OpRegistry[Opcode, int] = OpRegistry("shape rule")
    reg.add(Opcode.ADD, 1)
    with pytest.raises(RuntimeError, match="shape rule for add registered twice"):
        reg.add(Opcode.ADD, 2)


def test_modules_load_on_first_read_only(monkeypatch):
    reg: OpRegistry[str, int] = OpRegistry("converter", modules=["_hlort_test_registering"])
    loads = []

    module = types.ModuleType("_hlort_test_registering")

    def _exec():
        loads.append(1)
        reg.add("stablehlo.add", 7)

    class Finder:
        def find_spec(self, name, path=None, target=None):
            if name != "_hlort_test_registering":
                return None
            import importlib.util

            class Loader:
                def create_module(self, spec):
                    return module

                def exec_module(self, mod):
                    _exec()

            return importlib.util.spec_from_loader(name, Loader())

    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    monkeypatch.delitem(sys.modules, "_hlort_test_registering", raising=False)
    assert loads == []  # constructing the registry imports nothing
    assert reg.get("stablehlo.add") == 7
    assert "stablehlo.add" in reg and len(reg) == 1
    assert loads == [1]


def test_failed_load_is_retried():
    reg: OpRegistry[str, int] = OpRegistry("x", modules=["_hlort_no_such_module_"])
    with pytest.raises(ModuleNotFoundError):
        reg.get("a")
    with pytest.raises(ModuleNotFoundError):
        reg.get("a")


def test_retry_after_a_failed_load_shows_the_real_error(tmp_path, monkeypatch):
    """A module that registers and then fails to import is retried cleanly on the next read."""
    (tmp_path / "_hlort_half_registering.py").write_text(
        "from test_op_registry_target import REG\n"
        "REG.add('stablehlo.add', 1)\n"
        "raise ImportError('the real problem')\n"
    )
    (tmp_path / "test_op_registry_target.py").write_text(
        "from hlort.ir.op_registry import OpRegistry\n"
        "REG = OpRegistry('converter', modules=['_hlort_half_registering'])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import test_op_registry_target as target

    for _ in range(2):
        with pytest.raises(ImportError, match="the real problem"):
            target.REG.get("stablehlo.add")
    assert "stablehlo.add" not in target.REG._entries


def test_later_modules_load_on_a_miss_or_a_full_read(tmp_path, monkeypatch):
    """``get`` of a first-stage key imports only the first modules; a miss imports the later
    ones; iteration, ``in`` and ``missing`` see every entry; a failing later module keeps the
    first stage and is retried."""
    (tmp_path / "stage_registry.py").write_text(
        "from hlort.ir.op_registry import OpRegistry\n"
        "REG = OpRegistry('converter', modules=['stage_common'],\n"
        "                 later_modules=['stage_rare', 'stage_broken'])\n"
    )
    (tmp_path / "stage_common.py").write_text(
        "from stage_registry import REG\nREG.add('stablehlo.add', 1)\n"
    )
    (tmp_path / "stage_rare.py").write_text(
        "from stage_registry import REG\nREG.add('stablehlo.while', 2)\n"
    )
    (tmp_path / "stage_broken.py").write_text(
        "import os\nfrom stage_registry import REG\nREG.add('stablehlo.case', 3)\n"
        "if not os.environ.get('STAGE_FIXED'):\n    raise ImportError('rare module broken')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("stage_registry", "stage_common", "stage_rare", "stage_broken"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import stage_registry

    reg = stage_registry.REG
    assert reg.get("stablehlo.add") == 1
    assert "stage_common" in sys.modules and "stage_rare" not in sys.modules
    with pytest.raises(ImportError, match="rare module broken"):
        reg.get("stablehlo.while")  # a miss: the later modules load (and one fails)
    assert reg.get("stablehlo.add") == 1 and "stablehlo.case" not in reg._entries
    monkeypatch.setenv("STAGE_FIXED", "1")
    assert reg.get("stablehlo.case") == 3 and reg.get("stablehlo.while") == 2
    assert sorted(reg.keys()) == ["stablehlo.add", "stablehlo.case", "stablehlo.while"]
    assert reg.missing(["stablehlo.while", "stablehlo.sort"]) == ["stablehlo.sort"]


def test_a_full_read_loads_the_later_modules_too(tmp_path, monkeypatch):
    (tmp_path / "stage2_registry.py").write_text(
        "from hlort.ir.op_registry import OpRegistry\n"
        "REG = OpRegistry('converter', modules=['stage2_common'], later_modules=['stage2_rare'])\n"
    )
    (tmp_path / "stage2_common.py").write_text(
        "from stage2_registry import REG\nREG.add('stablehlo.add', 1)\n"
    )
    (tmp_path / "stage2_rare.py").write_text(
        "from stage2_registry import REG\nREG.add('stablehlo.while', 2)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import stage2_registry

    assert "stablehlo.while" in stage2_registry.REG and len(stage2_registry.REG) == 2

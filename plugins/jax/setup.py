"""Builds the trampoline extension with this machine's C compiler.

The C declarations are generated from hlort_jax/abi_table.py (the one layout table) into the
build directory before compiling, so the C side and the ctypes side cannot drift apart.
"""

import importlib.util
import os

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATED = os.path.join(HERE, "build", "generated")


def _write_header() -> None:
    spec = importlib.util.spec_from_file_location(
        "abi_table", os.path.join(HERE, "hlort_jax", "abi_table.py")
    )
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    os.makedirs(GENERATED, exist_ok=True)
    with open(os.path.join(GENERATED, "pjrt_layout.h"), "w") as f:
        f.write(table.c_header())


_write_header()
setup(
    ext_modules=[
        Extension(
            "hlort_jax._trampoline",
            sources=["hlort_jax/trampoline.c"],
            include_dirs=[GENERATED],
            extra_compile_args=["-O2", "-std=c11", "-Wall"],
        )
    ]
)

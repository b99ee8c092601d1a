"""Compile options by name, as XLA users give them: per compile, per process, on the command line.

Three ways to say the same thing, the most specific winning:

- per compile: ``hlort.compile(program, options={"matmul_precision": "highest"})`` (flat names
  below, beside :class:`~hlort.plugin.options.CompileOptions`'s own fields);
- per process: ``HLORT_FLAGS="--matmul_precision=highest --disable_passes=cse,dce"`` (like
  ``XLA_FLAGS``; a ``hlort_`` prefix and XLA's/JAX's spellings ``--xla_dump_to``,
  ``--xla_disable_hlo_passes``, ``--jax_default_matmul_precision`` are accepted), applied to
  every option the compile leaves at its default;
- on the CLI: ``hlort run|compile --option matmul_precision=highest`` (repeatable).

An unknown name is INVALID_ARGUMENT naming the known ones: a typo must not be ignored.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hlort.errors import InvalidArgument
from hlort.lazy_dataclass import dataclass

ENV_VAR = "HLORT_FLAGS"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _as_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidArgument(f"compile option {name}={value!r} is not a boolean; use true or false")


def _as_names(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, Iterable):
        items = [str(v) for v in value]
    else:
        raise InvalidArgument(f"compile option {name}={value!r} must be a list of pass names")
    return tuple(item.strip() for item in items if item.strip())


def _as_text(name: str, value: Any) -> str:
    text = str(value).strip()
    if not text:
        raise InvalidArgument(f"compile option {name} needs a value")
    return text


@dataclass(frozen=True)
class Flag:
    """One named option: where it lands in CompileOptions (``field`` or ``debug.field``)."""

    name: str
    target: str
    convert: Callable[[str, Any], Any]
    help: str
    aliases: tuple[str, ...] = ()
    boolean: bool = False


FLAGS: tuple[Flag, ...] = (
    Flag(
        "matmul_precision",
        "matmul_precision",
        _as_text,
        "precision of DEFAULT-precision dots and convolutions: default, high or highest "
        "(JAX's bfloat16, tensorfloat32, float32 too); like jax_default_matmul_precision",
        ("default_matmul_precision", "jax_default_matmul_precision"),
    ),
    Flag(
        "fallback",
        "fallback",
        _as_text,
        "what to do with instructions that would run on the reference interpreter: error, "
        "warn or allow (HLORT_FALLBACK for this compile)",
    ),
    Flag(
        "disable_passes",
        "debug.disabled_passes",
        _as_names,
        "comma-separated core passes or pass groups to skip (e.g. cse,fusion)",
        ("disabled_passes", "xla_disable_hlo_passes"),
    ),
    Flag(
        "dump_dir",
        "debug.dump_dir",
        _as_text,
        "write the module after every pass and the backend's artifacts here",
        ("dump_to", "xla_dump_to"),
    ),
    Flag(
        "verify_passes",
        "debug.verify_passes",
        _as_bool,
        "run the verifier after every pass",
        boolean=True,
    ),
    Flag(
        "run_core_passes",
        "debug.run_core_passes",
        _as_bool,
        "false: the backend gets the verified input module, unoptimized",
        boolean=True,
    ),
)
_BY_NAME: dict[str, Flag] = {}
for _flag in FLAGS:
    for _name in (_flag.name, *_flag.aliases):
        _BY_NAME[_name] = _flag


def known_flag_names() -> list[str]:
    return [f.name for f in FLAGS]


def flag_named(name: str) -> Flag | None:
    """The flag ``name`` (or an alias, with or without a ``hlort_`` prefix) names, or None."""
    key = name.strip().replace("-", "_")
    return _BY_NAME.get(key) or _BY_NAME.get(key.removeprefix("hlort_"))


def flags_to_options(flags: Mapping[str, Any], where: str = "compile options") -> dict:
    """``{"matmul_precision": "high", "disable_passes": "cse"}`` -> the nested mapping
    :meth:`CompileOptions.from_dict` takes (``{"matmul_precision": ..., "debug": {...}}``)."""
    out: dict[str, Any] = {}
    for name, value in flags.items():
        flag = flag_named(name)
        if flag is None:
            raise InvalidArgument(
                f"unknown option {name!r} in {where}; known: {', '.join(known_flag_names())}"
            )
        converted = flag.convert(flag.name, value)
        if flag.target.startswith("debug."):
            out.setdefault("debug", {})[flag.target.removeprefix("debug.")] = converted
        else:
            out[flag.target] = converted
    return out


def parse_flag_string(text: str, where: str = ENV_VAR) -> dict[str, Any]:
    """``"--matmul_precision=high --verify_passes --norun_core_passes"`` -> ``{name: value}``."""
    import shlex  # only when HLORT_FLAGS is set: not on every first compile

    try:
        tokens = shlex.split(text)
    except ValueError as err:
        raise InvalidArgument(f"{where}={text!r} does not split into flags: {err}") from None
    flags: dict[str, Any] = {}
    for token in tokens:
        if not token.startswith("--"):
            raise InvalidArgument(
                f"{where}: {token!r} is not a flag; write --name=value (known names: "
                f"{', '.join(known_flag_names())})"
            )
        name, eq, value = token[2:].partition("=")
        flag = flag_named(name)
        if flag is None and not eq and name.startswith("no"):
            negated = flag_named(name[2:])
            if negated is not None and negated.boolean:
                flags[negated.name] = False
                continue
        if flag is None:
            raise InvalidArgument(
                f"unknown flag --{name} in {where}; known: "
                f"{', '.join('--' + n for n in known_flag_names())}"
            )
        if not eq and not flag.boolean:
            raise InvalidArgument(f"{where}: --{name} needs a value (--{name}=VALUE)")
        flags[flag.name] = value if eq else True
    return flags


def process_flags() -> dict[str, Any]:
    """``HLORT_FLAGS`` as the nested options mapping (read at every compile)."""
    text = os.environ.get(ENV_VAR, "").strip()
    if not text:
        return {}
    return flags_to_options(parse_flag_string(text), ENV_VAR)


def parse_key_values(items: Iterable[str], where: str = "--option") -> dict[str, Any]:
    """CLI ``KEY=VALUE`` strings -> the nested options mapping; ``target.NAME=VALUE`` is a
    backend's own option (``target_options``)."""
    flags: dict[str, Any] = {}
    target: dict[str, Any] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key:
            raise InvalidArgument(f"{where} {item!r} is not KEY=VALUE")
        if key.startswith("target."):
            target[key.removeprefix("target.")] = value
        elif flag_named(key) is None:
            raise InvalidArgument(
                f"unknown {where} {key!r}; known: {', '.join(known_flag_names())} "
                f"(a backend's own option: target.NAME=VALUE)"
            )
        else:
            flags[key] = value
    out = flags_to_options(flags, where)
    if target:
        out["target_options"] = target
    return out

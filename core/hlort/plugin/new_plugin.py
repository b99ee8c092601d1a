"""``hlort new-plugin NAME [--dest DIR]``: write a new backend plugin, renamed from the template.

The template is ``plugins/template`` (distribution ``hlort-template``, package
``hlort_template``, platform ``template``); the core wheel ships a copy of it as
``hlort/_plugin_template`` (setup.py), so this works from a plain ``pip install hlort``. The
copy goes to ``DIR`` itself (default ``./hlort-NAME``; an existing empty directory is used,
anything else there is refused) with distribution ``hlort-NAME``, package ``hlort_NAME``,
platform ``NAME`` and classes ``<Name>Plugin``, ``<Name>Client``...; it installs with
``pip install DIR`` and passes ``hlort conformance --platform NAME`` as it is.

Only identifiers are renamed (package and distribution names, the platform string, class-name
prefixes, ``HLORT_TEMPLATE_*`` variables); prose that talks about "the template" stays.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from hlort.errors import ErrorCode, HlortError, InvalidArgument, NotFound

TEMPLATE_ENV = "HLORT_PLUGIN_TEMPLATE"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_RESERVED = {"template", "interpreter"}
_SKIP = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "*.egg-info", "build", "dist", ".pytest_cache", ".ruff_cache"
)


def camel(name: str) -> str:
    """``my_chip`` -> ``MyChip`` (the class-name prefix)."""
    return "".join(part.capitalize() for part in name.split("_") if part)


def _is_template(path: Path) -> bool:
    return (path / "pyproject.toml").is_file() and (path / "hlort_template").is_dir()


def packaged_template() -> Path:
    """Where the core wheel puts its copy of the template (absent in a source checkout)."""
    return Path(__file__).resolve().parents[1] / "_plugin_template"


def find_template() -> Path:
    """The template's source directory (the one holding its pyproject.toml).

    ``HLORT_PLUGIN_TEMPLATE`` wins when set (and must then be right); otherwise the copy the
    core wheel ships, then the source checkout hlort runs from (an editable install), then an
    editable install of ``hlort-template``.
    """
    explicit = os.environ.get(TEMPLATE_ENV)
    if explicit:
        path = Path(explicit).expanduser()
        if not _is_template(path):
            raise NotFound(
                f"{TEMPLATE_ENV}={explicit} is not the plugin template: it must be a directory "
                f"holding pyproject.toml and hlort_template/ (plugins/template of the hlort "
                f"source tree); fix the path or unset {TEMPLATE_ENV}"
            )
        return path
    import hlort

    candidates = [
        packaged_template(),
        Path(hlort.__file__).resolve().parents[2] / "plugins" / "template",
    ]
    spec = importlib.util.find_spec("hlort_template")
    if spec is not None and spec.origin:
        candidates.append(Path(spec.origin).resolve().parents[1])
    for path in candidates:
        if _is_template(path):
            return path
    raise NotFound(
        f"cannot find the plugin template: this hlort installation has no {packaged_template()} "
        "(a wheel built without plugins/template) and is not a source checkout; reinstall hlort "
        f"from a released wheel, or set {TEMPLATE_ENV} to plugins/template of a checkout of hlort"
    )


def rename(text: str, name: str) -> str:
    """The template's text with every identifier of the template renamed for ``name``."""
    rules = [
        (r"hlort_template", f"hlort_{name}"),
        (r"hlort-template", f"hlort-{name}"),
        (r"HLORT_TEMPLATE_", f"HLORT_{name.upper()}_"),
        (r"\bTemplate(?=[A-Z][a-z])", camel(name)),
        (r"([\"'`])template\1", rf"\g<1>{name}\g<1>"),
        (r"(?m)^template = ", f"{name} = "),
        (r"--platform template\b", f"--platform {name}"),
        (r"\btemplate(?=:\d)", name),
        (r"\btemplate-device\b", f"{name}-device"),
    ]
    for pattern, replacement in rules:
        text = re.sub(pattern, replacement, text)
    return text


def default_dest(name: str) -> Path:
    return Path(f"hlort-{name}")


def create(name: str, dest: str | os.PathLike | None = None, template: Path | None = None) -> Path:
    """Write the renamed copy at ``dest`` (default ``./hlort-NAME``) and return its path."""
    if not _NAME.match(name) or name in _RESERVED:
        raise InvalidArgument(
            f"plugin name {name!r} is not allowed: use lowercase letters, digits and '_', "
            f"starting with a letter (it becomes the platform name), and not "
            f"{' or '.join(sorted(_RESERVED))}"
        )
    existing = importlib.util.find_spec(f"hlort_{name}")
    if existing is not None:
        where = existing.origin or ", ".join(existing.submodule_search_locations or [])
        raise HlortError(
            f"a package hlort_{name} is already installed ({where}); installing a new plugin "
            f"named {name!r} (distribution hlort-{name}) would replace it: choose another name, "
            f"or uninstall it first (pip uninstall hlort-{name})",
            ErrorCode.ALREADY_EXISTS,
        )
    source = template or find_template()
    target = Path(dest) if dest is not None else default_dest(name)
    if target.exists() and not (target.is_dir() and not any(target.iterdir())):
        raise HlortError(
            f"{target} already exists and is not an empty directory; choose another --dest or "
            "remove it",
            ErrorCode.ALREADY_EXISTS,
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging, ignore=_SKIP)
    for path in sorted(staging.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_file():
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue  # binary: copied as is
            path.write_text(rename(text, name), encoding="utf-8")
        new_name = rename(path.name, name)
        if new_name != path.name:
            path.rename(path.with_name(new_name))
    if target.exists():
        target.rmdir()  # the empty directory the user made for it
    staging.rename(target)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="hlort new-plugin", description="write a new plugin from the template"
    )
    parser.add_argument("name", help="platform name (lowercase letters, digits, '_')")
    parser.add_argument(
        "--dest",
        metavar="DIR",
        default=None,
        help="directory to write the plugin to (default: ./hlort-NAME)",
    )
    args = parser.parse_args(argv)
    target = create(args.name, args.dest)
    print(
        f"created plugin {args.name!r} in {target} (distribution hlort-{args.name}, "
        f"package hlort_{args.name})"
    )
    print("next steps (see its README.md):")
    print(f"  pip install -e {target}   (or build a wheel: python -m build {target})")
    print(f"  hlort conformance --platform {args.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``hlort cache info|clear``: where the on-disk caches are, how big, and emptying them.

``info`` prints the root (``HLORT_CACHE_DIR`` or the OS's per-user cache directory), whether
caching is on, the size cap (``HLORT_CACHE_MAX_BYTES``) and the bytes and entries of each cache
under the root (``executables``: the compile cache; ``cpu``: the cpu plugin's object code...);
``--json`` gives the same as one JSON object. ``clear`` deletes every entry.
"""

from __future__ import annotations

import argparse
import json
import os


def add_cache_command(sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("cache", parents=[common], help="show or empty the compile cache")
    p.add_argument("action", choices=("info", "clear"), metavar="info|clear")
    p.add_argument("--json", action="store_true", help="info as JSON")
    p.set_defaults(handler=cmd_cache)


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def cache_info() -> dict:
    from hlort.plugin.base.cache_dir import cache_enabled, cache_root
    from hlort.plugin.base.cache_eviction import entries, max_bytes

    root = cache_root()
    per: dict[str, dict[str, int]] = {}
    for entry in entries(root) if os.path.isdir(root) else []:
        name = os.path.relpath(entry.path, root).split(os.sep)[0]
        bucket = per.setdefault(name, {"entries": 0, "bytes": 0})
        bucket["entries"] += 1
        bucket["bytes"] += entry.size
    return {
        "root": root,
        "root_from": "HLORT_CACHE_DIR" if os.environ.get("HLORT_CACHE_DIR") else "default",
        "enabled": cache_enabled(),
        "max_bytes": max_bytes(),
        "bytes": sum(b["bytes"] for b in per.values()),
        "entries": sum(b["entries"] for b in per.values()),
        "caches": dict(sorted(per.items())),
    }


def cmd_cache(args: argparse.Namespace) -> int:
    from hlort.plugin.base.cache_dir import cache_root
    from hlort.plugin.base.cache_eviction import clear

    if args.action == "clear":
        removed, freed = clear(cache_root())
        print(
            f"removed {removed} entr{'y' if removed == 1 else 'ies'} ({_human(freed)}) "
            f"from {cache_root()}"
        )
        return 0
    info = cache_info()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    state = "on" if info["enabled"] else "off (HLORT_CACHE=0)"
    print(f"root     {info['root']} ({info['root_from']}), caching {state}")
    print(
        f"limit    {_human(info['max_bytes'])} (HLORT_CACHE_MAX_BYTES), least recently used "
        f"entries evicted beyond it"
    )
    print(f"used     {_human(info['bytes'])} in {info['entries']} entries")
    for name, bucket in info["caches"].items():
        print(f"  {name:<12} {_human(bucket['bytes']):>10}  {bucket['entries']} entries")
    return 0

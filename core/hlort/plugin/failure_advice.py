"""What ``hlort devices`` tells the user when a plugin fails to import or its probe misbehaves:
the cause in words and the fix, which differ by who has to act (the user's install, or the
plugin's authors)."""

from __future__ import annotations

PLUGIN_BUG_FIX = (
    "a plugin's probe() must {what}: report it to the plugin's authors (`hlort devices --debug` "
    "prints the traceback); meanwhile leave it out of HLORT_PLATFORMS or uninstall it"
)


def import_failure(
    exc: BaseException, target: str, dist_name: str | None, reinstall: str
) -> tuple[str, str]:
    """(what happened, the fix) for an entry point whose import raised; what happened is empty
    when the error says it best (the plugin's own ImportError, say). A missing module is
    either the plugin's own package (metadata left behind by a half-removed install) or a
    dependency it imports (installed without its requirements, e.g. ``pip install --no-deps``);
    each has its own fix, and neither is the plugin's bug."""
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if not missing:
        return "", reinstall
    own = target.split(":")[0].strip()
    dist = dist_name or "the distribution providing it"
    top = missing.split(".")[0]
    if top == own.split(".")[0]:  # the plugin's own package, whole or in part
        return (
            f"its module {missing!r} is not installed (the distribution's metadata is, its "
            "files are not)",
            f"reinstall {dist} (pip install --force-reinstall {dist_name or '<distribution>'})"
            ", or uninstall it",
        )
    return (
        f"importing it needs the module {missing!r}, which is not installed",
        f"install what {dist} requires (pip install {dist_name or '<distribution>'} without "
        f"--no-deps, or pip install {top} if that is the distribution's name), or uninstall it",
    )

"""The plugin API version and the rule that decides whether a plugin may load.

A plugin declares the ``(major, minor)`` of this API it was written against. Within a major only
additive changes are made (new methods get default bodies, new parameters are keyword-only with
defaults), so a plugin is accepted when its major equals the core's and its minor lies between
:data:`MIN_SUPPORTED_MINOR` and the core's own minor. A plugin targeting a newer minor than the
core implements may call methods this core does not have (1.1 added
``create_compile_only_client``): it is refused too, naming the upgrade. Everything else is
rejected at load time, never at first use. The distribution declares the same thing to pip as a
requirement ``hlort>=X,<Y`` (docs/writing-a-plugin.md).
"""

from __future__ import annotations

from hlort.errors import FailedPrecondition

API_VERSION: tuple[int, int] = (1, 1)
"""The version of :mod:`hlort.plugin.api` this core implements (1.1 added
``Plugin.create_compile_only_client``; the plugin base's ``AsyncLaunch`` came with it)."""

MIN_SUPPORTED_MINOR: int = 0
"""The oldest minor (of ``API_VERSION[0]``) a plugin may target and still load."""


def format_version(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def parse_declared_version(declared: object, plugin_name: str) -> tuple[int, int]:
    """Validate the form of a plugin's ``api_version`` attribute."""
    if (
        not isinstance(declared, tuple)
        or len(declared) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in declared)
    ):
        raise FailedPrecondition(
            f"plugin {plugin_name!r} declares api_version={declared!r}; it must be a tuple "
            f"(major, minor) of ints, e.g. api_version = {API_VERSION!r}"
        )
    return declared  # type: ignore[return-value]


def is_compatible(declared: tuple[int, int]) -> bool:
    """Same major, and a minor the core still supports and already implements."""
    return declared[0] == API_VERSION[0] and MIN_SUPPORTED_MINOR <= declared[1] <= API_VERSION[1]


def check_api_version(declared: object, plugin_name: str) -> tuple[int, int]:
    """Raise FAILED_PRECONDITION, printing both versions and the fix, unless compatible."""
    version = parse_declared_version(declared, plugin_name)
    if is_compatible(version):
        return version
    core = format_version(API_VERSION)
    accepted = (
        f"{API_VERSION[0]}.{MIN_SUPPORTED_MINOR} to {core}"
        if MIN_SUPPORTED_MINOR < API_VERSION[1]
        else core
    )
    if version > API_VERSION:
        fix = "upgrade hlort to a release implementing plugin API "
        fix += f"{format_version(version)} (pip install -U hlort), or install a release of the "
        fix += f"plugin built for API {accepted}"
    else:
        fix = f"upgrade the plugin to a release built for API {accepted}, or install an older hlort"
    raise FailedPrecondition(
        f"plugin {plugin_name!r} targets plugin API {format_version(version)}, but this hlort "
        f"implements API {core} and accepts plugins targeting {accepted}; fix: {fix}"
    )

"""hlort-jax: every hlort backend as a JAX platform, through JAX's PJRT plugin interface.

JAX imports this module for the ``jax_plugins`` entry point and calls :func:`initialize`.
Importing it does not import jax.
"""


def initialize() -> None:
    from hlort_jax.registration import initialize as _initialize

    _initialize()


def registered_platforms() -> dict[str, str]:
    from hlort_jax.registration import registered_platforms as _registered

    return _registered()


def skipped_platforms() -> dict[str, str]:
    from hlort_jax.registration import skipped_platforms as _skipped

    return _skipped()

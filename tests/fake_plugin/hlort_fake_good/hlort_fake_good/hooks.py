"""pluggy registration: the entry point names this module; the import stays cheap."""

from hlort.plugin.hookspecs import hookimpl


@hookimpl
def hlort_register_plugin():
    from hlort_fake_good.backend import FakeGoodPlugin

    return FakeGoodPlugin()

"""One of two plugins declaring platform "fakeorphan"; neither is hlort-fakeorphan."""

from hlort.plugin.interpreter_backend import InterpreterClient, InterpreterPlugin


class OrphanClient(InterpreterClient):
    platform_name = "fakeorphan"


class OrphanPlugin(InterpreterPlugin):
    name = "fakeorphan"
    api_version = (1, 0)
    client_class = OrphanClient


plugin = OrphanPlugin()

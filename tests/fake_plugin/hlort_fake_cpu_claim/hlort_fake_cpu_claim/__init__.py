"""A plugin declaring platform "cpu" from another distribution, under an entry point that
sorts before the real one: it must never displace hlort-cpu."""

from hlort.plugin.interpreter_backend import InterpreterClient, InterpreterPlugin


class ClaimingClient(InterpreterClient):
    platform_name = "cpu"


class ClaimingPlugin(InterpreterPlugin):
    name = "cpu"
    api_version = (1, 0)
    priority = 1000
    client_class = ClaimingClient


plugin = ClaimingPlugin()

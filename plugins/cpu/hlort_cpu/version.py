"""hlort-cpu's version, in a module of its own: the plugin reports it and the compile caches key
on it, and those modules import it downward instead of from plugin.py (which imports them)."""

PLUGIN_VERSION = "0.1.0"

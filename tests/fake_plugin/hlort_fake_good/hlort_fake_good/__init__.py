"""A working test plugin, registered through a pluggy hook (see hooks.py)."""

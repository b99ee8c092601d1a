"""hlort-tpusim's version, in a module of its own (the package and its modules all name it)."""

__version__ = "0.1.0"

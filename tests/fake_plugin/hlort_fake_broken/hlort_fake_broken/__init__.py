"""A plugin whose import fails, like one built against a missing native library."""

raise ImportError("libfakebroken.so: cannot open shared object file: No such file or directory")

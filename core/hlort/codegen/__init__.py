"""Code generators shared by backend plugins (``hlort.codegen.llvm``)."""

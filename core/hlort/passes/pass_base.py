"""What a pass is: a small named object that rewrites a module and says whether it changed it.

Passes are idempotent (running one twice changes nothing the second time) and keep meaning: the
interpreter gives the same result before and after. They never touch devices. Options are
constructor arguments; ``run`` rewrites the module in place and returns whether it changed it.
"""

from __future__ import annotations

from typing import ClassVar

from hlort.ir.module import Module


class Pass:
    """Subclasses set ``name`` and implement :meth:`run`. Options are constructor arguments."""

    name: ClassVar[str] = "pass"

    def run(self, module: Module) -> bool:
        """Rewrite ``module`` in place; return True if anything changed."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

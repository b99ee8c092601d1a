"""GpuPlugin: the plugin object of a GPU platform, in a module of its own so that importing a
plugin's entry point (done for every installed plugin at discovery, in each process's first
compile whatever its platform) does not import the GPU client, its program format and codegen;
those load when a client starts or compiles (``client_class``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from hlort.plugin.base.simple_client import SimplePlugin
from hlort.plugin.capabilities import Capabilities

if TYPE_CHECKING:
    from hlort.plugin.base.gpu_client import CompileOnlyGpuClient, GpuClient


class GpuPlugin(SimplePlugin):
    """A GPU plugin: ``client_class`` is a :class:`GpuClient`; ``compile_only_client_class``
    compiles for a named target without a device."""

    client_class: ClassVar[type[GpuClient]]
    compile_only_client_class: ClassVar[type[CompileOnlyGpuClient]]

    def capabilities(self) -> Capabilities:
        return Capabilities(
            serialization=True,
            donation=True,
            memory_stats=True,
            multi_device=True,
            artifacts=True,
            extra={"async_execution": True, "compile_only_targets": True},
        )

    def create_compile_only_client(
        self, target: str, options: Mapping[str, Any] | None = None
    ) -> CompileOnlyGpuClient:
        return self.compile_only_client_class(self, self.check_target(target), options)

    def check_target(self, target: str) -> str:
        """``target`` when this plugin can compile for it; INVALID_ARGUMENT naming the choices."""
        return target

"""hlort-rocm: the ``rocm`` platform (AMD GPUs through llvmlite's AMDGPU target and HIP).

Importing this package stays cheap: the registry imports it in every process that lists
backends. llvmlite, the linker and hip-python are loaded on first use.
"""

from hlort_rocm.plugin import PLATFORM, RocmPlugin  # noqa: F401

"""hlort-cuda: NVIDIA GPUs as the ``cuda`` platform.

Importing this package is cheap (hlort imports it in every process that lists backends): the
driver binding (cuda-bindings or pycuda), llvmlite and cuBLAS are loaded when a client starts or
a program needs them.
"""

from hlort_cuda.plugin import PLATFORM, CudaPlugin  # noqa: F401

__version__ = "0.1.0"

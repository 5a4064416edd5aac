"""torch.autograd: only its profiler's emit_nvtx."""
from . import profiler  # noqa: F401

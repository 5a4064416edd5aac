"""torch.autograd: only its profiler (emit_nvtx, record_function)."""
from . import profiler  # noqa: F401

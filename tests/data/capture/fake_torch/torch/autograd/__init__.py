"""torch.autograd: backward() (what Tensor.backward() calls) and its profiler."""
from . import profiler  # noqa: F401


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Runs each tensor's `on_backward` (a stand-in for the graph's nodes: a reentrant checkpoint
    calls backward() again from inside one)."""
    for t in tensors if isinstance(tensors, (list, tuple)) else (tensors,):
        run = getattr(t, "on_backward", None)
        if run is not None:
            run()

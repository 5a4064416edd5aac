"""A stand-in for PyTorch with only what the capture hook uses (tests run without torch or a GPU).

`FAKE_TORCH_LOG` names a file each profiler, NVTX and CUDA call appends a line to; `FAKE_CUDA=0`
makes CUDA unavailable. CUDA events keep the host clock, so their intervals are the host's.
"""
import os

from . import autograd, cuda, optim, profiler, utils  # noqa: F401

__version__ = "0.0-fake"


class device:
    def __init__(self, kind, index=None):
        if isinstance(kind, str) and ":" in kind:
            kind, index = kind.split(":")
            index = int(index)
        self.type, self.index = kind, index

    def __repr__(self):
        return "device(%s:%s)" % (self.type, self.index)


def _log(line):
    path = os.environ.get("FAKE_TORCH_LOG")
    if path:
        with open(path, "a") as f:
            f.write("%d %s\n" % (os.getpid(), line))


class Tensor:
    def __init__(self, on="cuda"):
        self.device = device("cuda", cuda.current_device()) if on == "cuda" else device("cpu")
        self.is_cuda = on == "cuda"

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)  # looked up at each call, as torch does

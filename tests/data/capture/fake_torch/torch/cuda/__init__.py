"""torch.cuda as far as the hook uses it: availability, devices, streams, timing events."""
import os
import time

from . import nvtx, profiler  # noqa: F401

_initialized = False
_device = int(os.environ.get("LOCAL_RANK", "0"))


def _log(line):
    from .. import _log as log

    log(line)


def is_available():
    return os.environ.get("FAKE_CUDA", "1") == "1"


def is_initialized():
    return _initialized and is_available()


def current_device():
    global _initialized
    _initialized = True
    return _device


def set_device(index):
    global _device
    _device = index


class Stream:
    def __init__(self, device):
        self.device = device


def current_stream(device=None):
    return Stream(device)


def synchronize(device=None):
    _log("synchronize")


class Event:
    def __init__(self, enable_timing=False):
        self.enable_timing, self.t = enable_timing, None

    def record(self, stream=None):
        self.t = time.perf_counter_ns()

    def synchronize(self):
        _log("event.synchronize")

    def elapsed_time(self, end):
        return (end.t - self.t) / 1e6  # ms, as torch gives it


# The caching allocator's peaks: fixed, so a test can find them in the steps file.
def max_memory_allocated(device=None):
    return 3 << 30


def max_memory_reserved(device=None):
    return 4 << 30

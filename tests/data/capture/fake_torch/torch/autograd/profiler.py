"""torch.autograd.profiler: emit_nvtx and record_function, logged on entry and exit; a
record_function inside a profile is kept for its trace."""
import time


class emit_nvtx:
    def __init__(self, enabled=True, record_shapes=False):
        self.record_shapes = record_shapes

    def __enter__(self):
        from .. import _log

        _log("emit_nvtx.enter record_shapes=%s" % self.record_shapes)
        return self

    def __exit__(self, *exc):
        from .. import _log

        _log("emit_nvtx.exit")


class record_function:
    def __init__(self, name, args=None):
        self.name = name
        self.start_ns = None

    def __enter__(self):
        from .. import _log

        _log("record_function.enter %s" % self.name)
        self.start_ns = time.time_ns()
        return self

    def __exit__(self, *exc):
        from .. import _log
        from ..profiler import _record

        _log("record_function.exit %s" % self.name)
        _record(self.name, self.start_ns, time.time_ns())

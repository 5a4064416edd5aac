"""torch.autograd.profiler.emit_nvtx, logged on entry and exit."""


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

"""torch.cuda.profiler: cudaProfilerStart/Stop, logged."""


def start():
    from .. import _log

    _log("cuda.profiler.start")


def stop():
    from .. import _log

    _log("cuda.profiler.stop")

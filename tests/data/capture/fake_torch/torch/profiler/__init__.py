"""torch.profiler: a profile that writes a small gzip'd chrome trace: each record_function
made inside it (user_annotation) with one kernel launched in its middle."""
import enum
import gzip
import json
import os
import threading

_active = []  # the profile entered, while it is


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1


def _record(name, start_ns, end_ns):
    if _active:
        _active[-1].records.append((name, start_ns, end_ns))


class profile:
    def __init__(self, activities=None, with_stack=False, record_shapes=False, **kwargs):
        self.options = {"activities": [a.name for a in activities or []], "with_stack": with_stack,
                        "record_shapes": record_shapes}
        self.records = []

    def __enter__(self):
        from .. import _log

        _log("profiler.enter %s" % json.dumps(self.options, sort_keys=True))
        _active.append(self)
        return self

    def __exit__(self, *exc):
        from .. import _log

        _log("profiler.exit")
        if self in _active:
            _active.remove(self)

    def events(self):
        pid, tid = os.getpid(), threading.get_ident() % 100000
        out = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "python3"}}]
        for i, (name, start, end) in enumerate(self.records):
            mid = (start + end) / 2e3
            out.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": pid, "tid": tid, "ts": start / 1e3,
                        "dur": (end - start) / 1e3, "args": {"External id": 2 * i + 1}})
            out.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
                        "ts": mid, "dur": 5.0, "args": {"External id": 2 * i + 2, "correlation": 100 + i}})
            out.append({"ph": "X", "cat": "kernel", "name": "fake_step_kernel", "pid": 0, "tid": 7, "ts": mid + 10,
                        "dur": 100.0, "args": {"External id": 2 * i + 2, "device": 0, "stream": 7,
                                               "correlation": 100 + i}})
        return out

    def export_chrome_trace(self, path):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "wt") as f:
            json.dump({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Fake GPU"}],
                       "traceEvents": self.events(), "fake": True}, f)

# Sightline's capture hook (`sightline capture`, docs/capture.md): embedded in the binary,
# written to a private folder put first on PYTHONPATH, so every Python process of the command
# runs it at start-up. It chains to the user's own sitecustomize, never imports torch itself,
# and does its work only after the program's own `import torch` has finished: it counts the
# steps (each optimizer step, through torch's global step post-hook; in a loop that steps no
# optimizer, each backward()), times K steps with CUDA events and no profiler after W warm-up
# steps, with the loop's wait for its DataLoader, then M more under the profiler, each marked
# `ProfilerStep#N` in the trace, and writes what it measured as one JSON part per process for
# sightline to merge. It never changes what the program computes; an error in the hook is
# reported and turns the hook off, never the program.
import _thread
import os
import sys
import time

# backward() calls that pass with no optimizer step before each backward() is a step.
_BACKWARD_WAIT = 32
# This file, as its frames name it: never the user's line that asks for batches.
_HOOK_FILE = globals().get("__file__", "")


def _chain_to_user_sitecustomize():
    """Imports the sitecustomize our folder hides (the user's, a distribution's), as site would."""
    here = os.path.dirname(os.path.abspath(__file__))
    ours = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        import sitecustomize  # noqa: F401  (theirs; stays in sys.modules under its name)
    except ImportError as e:
        if getattr(e, "name", None) != "sitecustomize":
            _report("the sitecustomize this folder hides failed: %r" % (e,))
    except Exception as e:  # site prints and goes on; so do we
        _report("the sitecustomize this folder hides failed: %r" % (e,))
    finally:
        sys.path[:] = saved
        if "sitecustomize" not in sys.modules and ours is not None:
            sys.modules["sitecustomize"] = ours


def _report(message):
    try:
        sys.stderr.write("sightline capture hook (pid %d): %s\n" % (os.getpid(), message))
    except Exception:
        pass


def _int_env(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def _write_json(path, value):
    """Writes beside the target, then renames: sightline never reads half a part."""
    import json

    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(value, f)
    os.replace(tmp, path)


class _Capture:
    """One process's counting and timing. The step hook's common path is a comparison and an
    increment; the window's steps record one CUDA event each, with no synchronization."""

    def __init__(self, folder):
        self.folder = folder
        self.warmup = max(1, _int_env("SIGHTLINE_CAPTURE_WARMUP", 5))  # its last step starts the clock
        self.timed = max(1, _int_env("SIGHTLINE_CAPTURE_TIMED", 20))
        self.profiler = os.environ.get("SIGHTLINE_CAPTURE_PROFILER", "none")
        self.profiled = max(0, _int_env("SIGHTLINE_CAPTURE_STEPS", 5)) if self.profiler != "none" else 0
        self.trace_prefix = os.environ.get("SIGHTLINE_CAPTURE_TRACE", "")
        self.stop_after = os.environ.get("SIGHTLINE_CAPTURE_STOP_AFTER") == "1"
        # Autograd's NVTX ranges for the profiled steps only (nsys's --pytorch=autograd-nvtx turns
        # them on for the whole run, which slows the timed steps of a host-bound loop).
        self.autograd_nvtx = os.environ.get("SIGHTLINE_CAPTURE_AUTOGRAD_NVTX") == "1"
        self.nvtx = None
        self.pid = os.getpid()
        self.main_thread = _thread.get_ident()  # site runs the hook on the main thread
        self.torch = None
        self.torch_error = ""
        self.handle = None
        self.wrapped = []  # (owner, name, original, wrapper) of what the hook wraps, to put back
        self.optimizer = None  # a weak reference to the first optimizer seen
        self.optimizers = 0  # distinct optimizers seen stepping
        self.steps = 0  # the first optimizer's steps
        self.backwards = 0  # backward() calls of the main thread (not those inside one)
        self.in_backward = False
        self.step_by = "optimizer"  # "backward" once _BACKWARD_WAIT + W calls pass with no optimizer step
        self.window_tensors = ()  # where the window's device is found: the optimizer's parameters, or the loss
        self.done = False
        self.error = ""
        self.written = False
        self.device = -1
        self.use_cuda = False
        self.marks = []  # (step, host ns, CUDA event or None) at each step's end in the window
        self.events = []  # the window's unrecorded events, the next one last
        self.hook_ns = 0  # host time inside the hook over the timed steps
        self.timed_steps = []
        self.memory_peak = None  # the allocator's peaks at the end of the timed steps
        self.profiled_steps = []
        self.prof = None
        self.trace = ""
        # The loop's wait for data over the timed steps: each DataLoader iterator's __next__ on
        # the main thread, summed per step.
        self.timing_input = False
        self.in_next = False
        self.input_seen = False  # a DataLoader was asked during the timed steps
        self.input_wait = 0  # ns waited since the last step's end
        self.input_waits = []  # per timed step
        self.input_site = None  # (path, line) of the user's line that asks for batches
        self.torch_dir = ""
        # The profiled step open in the trace: an NVTX range id (nsys) or a record_function.
        self.step_mark = None
        self.step_marks_off = False

    # --- start-up: after `import torch` ---
    def attach(self, torch):
        self.torch = torch
        self.torch_dir = os.path.join(os.path.dirname(os.path.abspath(getattr(torch, "__file__", "") or ".")), "")
        try:
            from torch.optim.optimizer import register_optimizer_step_post_hook

            self.handle = register_optimizer_step_post_hook(self.on_step)
        except Exception as e:
            self.torch_error = "cannot register the optimizer step hook: %r" % (e,)
            _report(self.torch_error)
        try:
            self.wrap_backward(torch.autograd)
        except Exception as e:
            _report("cannot follow backward(): %r" % (e,))

    def wrap(self, owner, name, wrapper, original):
        import functools

        functools.update_wrapper(wrapper, original)
        setattr(owner, name, wrapper)
        self.wrapped.append((owner, name, original, wrapper))

    def unwrap(self, owner=None):
        """Puts back what the hook wrapped (only `owner`'s when given), unless someone else has
        wrapped it since."""
        keep = []
        for entry in self.wrapped:
            o, name, original, wrapper = entry
            if owner is not None and o is not owner:
                keep.append(entry)
            elif o.__dict__.get(name) is wrapper:
                setattr(o, name, original)
        self.wrapped = keep

    # --- every optimizer step ---
    def on_step(self, optimizer, args, kwargs):
        if self.done or self.step_by != "optimizer":
            return
        first = self.optimizer() if self.optimizer is not None else None
        if first is not optimizer:
            if first is not None:
                return  # another optimizer: only the first one seen counts
            self.adopt(optimizer)
        self.steps += 1
        self.step_ended(self.steps)

    def adopt(self, optimizer):
        import weakref

        self.optimizers += 1
        try:
            self.optimizer = weakref.ref(optimizer)
        except TypeError:
            self.optimizer = lambda: optimizer
        autograd = getattr(self.torch, "autograd", None)
        if autograd is not None:
            self.unwrap(autograd)  # optimizer steps tell the steps: backward() is left alone

    # --- every backward(): torch.autograd.backward, which Tensor.backward() calls ---
    def wrap_backward(self, autograd):
        original = autograd.backward
        capture = self

        def backward(*args, **kwargs):
            if capture.done or capture.in_backward or _thread.get_ident() != capture.main_thread:
                return original(*args, **kwargs)
            capture.in_backward = True  # a backward() inside one (reentrant checkpoints) is not a step
            try:
                result = original(*args, **kwargs)
            finally:
                capture.in_backward = False
            capture.on_backward(args[0] if args else kwargs.get("tensors"))
            return result

        self.wrap(autograd, "backward", backward, original)

    def on_backward(self, tensors):
        if self.steps > 0:
            return  # an optimizer tells the steps
        self.backwards += 1
        n = self.backwards - _BACKWARD_WAIT
        if self.step_by != "backward":
            if n < self.warmup:
                return
            self.step_by = "backward"
            self.detach_step_hook()
            self.window_tensors = tensors if isinstance(tensors, (list, tuple)) else (tensors,)
        self.step_ended(n)

    # --- the end of a step, told by the optimizer or by backward() ---
    def step_ended(self, n):
        if n < self.warmup:
            return
        t0 = time.perf_counter_ns()
        try:
            self.at_step(n, t0)
        except SystemExit:
            raise
        except Exception as e:
            self.fail("the hook failed at step %d: %r" % (n, e))

    def at_step(self, n, t0):
        w, k, m = self.warmup, self.timed, self.profiled
        if n == w:
            self.begin_window()
            self.make_events(k + 1)
            self.mark(n, time.perf_counter_ns())
            self.start_input_timing()
        elif n <= w + k:
            self.mark(n, t0)
            self.input_waits.append(self.input_wait)
            self.input_wait = 0
            self.hook_ns += time.perf_counter_ns() - t0
            if n == w + k:
                self.stop_input_timing()
                self.timed_steps = self.intervals()
                self.add_input_waits(self.timed_steps)
                self.read_memory_peak()
                if m == 0:
                    self.finish()
                else:
                    self.make_events(m + 1)
                    self.start_profiler()
                    self.marks = []
                    self.mark(n, time.perf_counter_ns())
                    self.open_step_mark(n + 1)
        elif n <= w + k + m:
            self.close_step_mark()
            self.mark(n, t0)
            if n == w + k + m:
                self.stop_profiler()
                self.profiled_steps = self.intervals()
                self.finish()
            else:
                self.open_step_mark(n + 1)

    # --- the window ---
    def begin_window(self):
        torch = self.torch
        self.marks = []
        tensors, self.window_tensors = self.window_tensors, ()  # the loss is not kept
        if not torch.cuda.is_available():
            return
        if self.step_by == "optimizer":
            optimizer = self.optimizer()
            tensors = [p for group in getattr(optimizer, "param_groups", []) for p in group.get("params", [])]
        device = None
        for t in tensors:
            if getattr(t, "is_cuda", False) or getattr(getattr(t, "device", None), "type", "") == "cuda":
                device = t.device
                break
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device())
        self.device = device.index if device.index is not None else torch.cuda.current_device()
        self.use_cuda = True  # each mark records on the stream current then

    def make_events(self, count):
        """The window's events, made before it starts: its steps only record them."""
        if not self.use_cuda:
            self.events = [None] * count
        else:
            self.events = [self.torch.cuda.Event(enable_timing=True) for _ in range(count)]
        self.events.reverse()

    def mark(self, n, host_ns):
        event = self.events.pop()
        if event is not None:
            event.record(self.torch.cuda.current_stream(self.device))
        self.marks.append((n, host_ns, event))

    def intervals(self):
        """The window's steps, read after it: one synchronize of its last event."""
        if not self.marks:
            return []
        last = self.marks[-1][2]
        if last is not None:
            last.synchronize()
        out = []
        for (_, h0, e0), (n, h1, e1) in zip(self.marks, self.marks[1:]):
            gpu = int(round(e0.elapsed_time(e1) * 1e6)) if e0 is not None else 0
            out.append({"step": n, "gpu_ns": gpu, "host_ns": h1 - h0})
        return out

    def read_memory_peak(self):
        """The allocator's peaks on the loop's GPU so far (start, warm-up and timed steps; the
        profiler has not run yet). Read, never reset: the script's own peaks stay as they were."""
        cuda = self.torch.cuda
        try:
            if self.use_cuda and cuda.is_initialized():
                self.memory_peak = {
                    "allocated_bytes": int(cuda.max_memory_allocated(self.device)),
                    "reserved_bytes": int(cuda.max_memory_reserved(self.device)),
                }
        except Exception:  # a torch without the allocator's statistics: no peak, nothing else lost
            self.memory_peak = None

    def versions(self):
        """torch's version, its CUDA's and the driver's, as this process runs them: a comparison of
        two runs says when they differ."""
        torch, out = self.torch, {}
        try:
            out["torch_version"] = str(torch.__version__)[:64]
            if getattr(torch.version, "cuda", None):
                out["cuda_version"] = str(torch.version.cuda)[:64]
            if self.use_cuda:
                driver = int(torch._C._cuda_getDriverVersion())  # 12080: CUDA 12.8's driver API
                out["cuda_driver"] = "%d.%d" % (driver // 1000, driver % 1000 // 10)
        except Exception:  # a torch without one of them: the others still count
            pass
        return out

    # --- the loop's wait for data, over the timed steps ---
    def start_input_timing(self):
        """Wraps the DataLoader iterators' __next__ for the timed steps (a profiled step never
        has the hook on its stack for it)."""
        self.input_wait = 0
        self.input_waits = []
        module = sys.modules.get("torch.utils.data.dataloader")
        base = getattr(module, "_BaseDataLoaderIter", None)
        original = getattr(base, "__next__", None)
        if original is None:
            return
        capture = self

        def __next__(iterator):
            if not capture.timing_input or capture.in_next or _thread.get_ident() != capture.main_thread:
                return original(iterator)
            if capture.input_site is None:
                capture.find_input_site(sys._getframe(1))
            capture.in_next = True
            t0 = time.perf_counter_ns()
            try:
                return original(iterator)
            finally:
                capture.input_wait += time.perf_counter_ns() - t0
                capture.input_seen = True
                capture.in_next = False

        self.wrap(base, "__next__", __next__, original)
        self.timing_input = True

    def stop_input_timing(self):
        self.timing_input = False
        module = sys.modules.get("torch.utils.data.dataloader")
        base = getattr(module, "_BaseDataLoaderIter", None)
        if base is not None:
            self.unwrap(base)

    def add_input_waits(self, steps):
        if not self.input_seen:
            return  # the loop asked no DataLoader: no wait to give
        for step, wait in zip(steps, self.input_waits):
            step["input_ns"] = min(wait, step["host_ns"])

    def find_input_site(self, frame):
        """The user's line that asks for the batch: the first caller outside torch and the hook,
        and outside installed packages and the standard library where there is one (a tqdm
        around the loader)."""
        self.input_site = ("", 0)
        library = (os.path.join(os.path.dirname(os.path.abspath(os.__file__)), ""),)
        first = None
        while frame is not None:
            path = frame.f_code.co_filename
            ours = path == _HOOK_FILE or (self.torch_dir and os.path.abspath(path).startswith(self.torch_dir))
            if not ours and not path.startswith("<"):
                if first is None:
                    first = (path, frame.f_lineno)
                installed = "site-packages" in path or "dist-packages" in path
                if not installed and not os.path.abspath(path).startswith(library):
                    self.input_site = (path, frame.f_lineno)
                    return
            frame = frame.f_back
        if first is not None:
            self.input_site = first

    # --- the profiler and the profiled steps' marks ---
    def start_profiler(self):
        torch = self.torch
        if self.profiler == "nsys":
            torch.cuda.profiler.start()
            if self.autograd_nvtx:
                self.nvtx = torch.autograd.profiler.emit_nvtx(record_shapes=False)
                self.nvtx.__enter__()
        elif self.profiler == "torch":
            from torch.profiler import ProfilerActivity, profile

            activities = [ProfilerActivity.CPU]
            if self.use_cuda:
                activities.append(ProfilerActivity.CUDA)
            self.prof = profile(activities=activities, with_stack=True, record_shapes=True)
            self.prof.__enter__()

    def open_step_mark(self, n):
        """`ProfilerStep#N` around profiled step N, as the PyTorch profiler's schedule names its
        steps: an NVTX start/end range under nsys (the step hook runs inside the optimizer's own
        NVTX range, so a push/pop range would not nest), a record_function under the PyTorch
        profiler (prof.step() records nothing without a schedule). Best effort: a mark that fails
        leaves the window measured."""
        if self.step_marks_off:
            return
        name = "ProfilerStep#%d" % n
        try:
            if self.profiler == "nsys":
                self.step_mark = self.torch.cuda.nvtx.range_start(name)
            elif self.profiler == "torch":
                mark = self.torch.autograd.profiler.record_function(name)
                mark.__enter__()
                self.step_mark = mark
        except Exception as e:
            self.step_marks_off = True
            _report("cannot mark the profiled steps: %r" % (e,))

    def close_step_mark(self):
        mark, self.step_mark = self.step_mark, None
        if mark is None:
            return
        try:
            if self.profiler == "nsys":
                self.torch.cuda.nvtx.range_end(mark)
            else:
                mark.__exit__(None, None, None)
        except Exception as e:
            self.step_marks_off = True
            _report("cannot mark the profiled steps: %r" % (e,))

    def stop_profiler(self):
        torch = self.torch
        if self.use_cuda:
            torch.cuda.synchronize(self.device)
        if self.profiler == "nsys":
            if self.nvtx is not None:
                nvtx, self.nvtx = self.nvtx, None
                nvtx.__exit__(None, None, None)
            torch.cuda.profiler.stop()
        elif self.prof is not None:
            prof, self.prof = self.prof, None
            prof.__exit__(None, None, None)
            self.trace = "%s.rank%d.pt.trace.json.gz" % (self.trace_prefix, _int_env("RANK", 0))
            prof.export_chrome_trace(self.trace)

    def finish(self):
        self.done = True
        self.detach()
        k = max(1, len(self.timed_steps))
        part = {
            "rank": _int_env("RANK", 0),
            "local_rank": _int_env("LOCAL_RANK", 0),
            "world_size": _int_env("WORLD_SIZE", 1),
            "host": _hostname(),
            "pid": self.pid,
            "device": self.device,
            "step_by": self.step_by,
            "timed": self.timed_steps,
            "profiled": self.profiled_steps,
            "hook_ns": int(self.hook_ns // k),
        }
        if self.input_site is not None and self.input_site[1] > 0:
            part["input_site"] = {"path": self.input_site[0], "line": self.input_site[1]}
        if self.trace:
            part["trace"] = os.path.basename(self.trace)
        if self.memory_peak:
            part["memory_peak"] = self.memory_peak
        part.update(self.versions())
        _write_json(os.path.join(self.folder, "rank.%d.json" % self.pid), part)
        self.written = True
        if self.stop_after:
            raise SystemExit(0)
        if _int_env("RANK", 0) == 0:
            _report("the window is measured; the run goes on (Ctrl-C ends it, the capture is kept)")

    def fail(self, message):
        self.error = message
        self.done = True
        self.detach()
        _report(message + "; the hook is off for the rest of the run")
        self.close_step_mark()  # never raises
        for scope in (self.nvtx, self.prof):
            if scope is not None:
                try:
                    scope.__exit__(None, None, None)
                except Exception:
                    pass
        self.nvtx = self.prof = None

    def detach_step_hook(self):
        if self.handle is not None:
            self.handle.remove()
            self.handle = None

    def detach(self):
        self.timing_input = False
        self.detach_step_hook()
        self.unwrap()

    # --- what this process saw, at its exit ---
    def write_status(self):
        if os.getpid() != self.pid:
            return  # a forked child (a DataLoader worker) that exits normally
        cuda = None
        torch = self.torch
        if torch is not None and not self.torch_error:
            try:
                stepped = self.steps > 0 or self.backwards > 0
                cuda = bool(torch.cuda.is_initialized() or (stepped and torch.cuda.is_available()))
            except Exception:
                cuda = False
        status = {
            "pid": self.pid,
            "argv": [str(a)[:200] for a in sys.argv[:4]],  # a part stays small (sightline refuses large ones)
            "rank": _int_env("RANK", -1),
            "torch": torch is not None,
            "hook": self.handle is not None or self.done or self.step_by == "backward",
            "cuda": cuda,
            "steps": self.steps,
            "backwards": self.backwards,
            "optimizers": self.optimizers,
            "written": self.written,
            "error": self.error or self.torch_error,
        }
        try:
            _write_json(os.path.join(self.folder, "status.%d.json" % self.pid), status)
        except Exception:
            pass

    def forked(self):
        """In a forked child: counts nothing and reports nothing (its parent does)."""
        self.done = True
        self.timing_input = False
        self.handle = None
        self.prof = None
        self.step_mark = None


def _hostname():
    import socket

    try:
        return socket.gethostname()
    except Exception:
        return ""


class _TorchImportHook:
    """A meta-path finder that hands out torch's own spec with its loader's exec_module wrapped:
    the hook's setup runs right after `import torch` finishes, in the program's own import."""

    def __init__(self, on_import):
        self.on_import = on_import

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        original = getattr(loader, "exec_module", None)
        if original is None:
            return spec
        hook = self

        def exec_module(module):
            try:
                del loader.exec_module  # the loader's own method again
            except AttributeError:
                pass
            original(module)
            if hook in sys.meta_path:
                sys.meta_path.remove(hook)
                hook.on_import(module)

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            pass
        return spec


def _install():
    folder = os.environ.get("SIGHTLINE_CAPTURE_DIR")
    if not folder or not os.path.isdir(folder):
        return
    import atexit

    capture = _Capture(folder)
    atexit.register(capture.write_status)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=capture.forked)

    def on_import(torch):
        try:
            capture.attach(torch)
        except Exception as e:
            capture.torch_error = "setup failed: %r" % (e,)
            _report(capture.torch_error)

    if "torch" in sys.modules:
        on_import(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchImportHook(on_import))


if __name__ == "sitecustomize":  # as site imports it (bench/capture_hook_cost.py imports it by another name)
    _chain_to_user_sitecustomize()
    try:
        _install()
    except Exception as _e:
        _report("not installed: %r" % (_e,))

"""A training loop for the capture tests, on the fake torch (fake_torch/): sleeps stand for the
GPU work; each iteration steps the optimizer (or, with --no-step --backward, only calls
backward(), as a hand-written update does), taking its batch from a DataLoader whose batches
take --loader-ms each when that is given. Prints `trained N steps` at its end."""
import argparse
import os
import sys
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=40)
ap.add_argument("--sleep-ms", type=float, default=2.0)
ap.add_argument("--second-optimizer", action="store_true", help="a second optimizer, stepping 3 times after each step of the first")
ap.add_argument("--no-step", action="store_true", help="never step an optimizer")
ap.add_argument("--backward", action="store_true", help="call loss.backward() each iteration")
ap.add_argument("--reentrant", action="store_true", help="each backward() calls backward() again inside it")
ap.add_argument("--loader-ms", type=float, help="take each batch from a DataLoader, each taking this long")
ap.add_argument("--progress-bar", action="store_true", help="wrap the loader in fake_tqdm.tqdm (an installed package)")
ap.add_argument("--exit", type=int, default=0)
ap.add_argument("--forever", action="store_true", help="train until stopped")
ap.add_argument("--pid-file", help="write this process's pid there at the start")
ap.add_argument("--ignore-sigint", action="store_true")
ap.add_argument("--straggler", help="start a process in a session of its own, its pid written there")
args = ap.parse_args()

if args.ignore_sigint:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
if args.pid_file:
    with open(args.pid_file + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(args.pid_file + ".tmp", args.pid_file)
if args.straggler:
    import subprocess

    straggler = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    with open(args.straggler, "w") as f:
        f.write(str(straggler.pid))

model = [torch.Tensor("cuda")]
opt = torch.optim.AdamW(model)
other = torch.optim.SGD([torch.Tensor("cuda")]) if args.second_optimizer else None


class SlowBatches:
    def __len__(self):
        return 7  # an epoch ends now and then: the loop asks a new iterator

    def __getitem__(self, i):
        time.sleep(args.loader_ms / 1000)
        return i


def train_step():
    time.sleep(args.sleep_ms / 1000)
    if args.backward:
        loss = torch.Tensor("cuda")
        if args.reentrant:
            loss.on_backward = lambda: torch.autograd.backward(torch.Tensor("cuda"))
        loss.backward()
    if not args.no_step:
        opt.step()
    if other is not None:  # seen second: its steps are not counted
        for _ in range(3):
            other.step()


def running(i):
    return args.forever or i < args.steps


i = 0
if args.loader_ms is not None:
    loader = torch.utils.data.DataLoader(SlowBatches())
    while running(i):
        batches = loader
        if args.progress_bar:
            import fake_tqdm  # the test puts it in a site-packages folder

            batches = fake_tqdm.tqdm(loader)
        for batch in batches:  # the loop's line that asks for batches
            if not running(i):
                break
            train_step()
            i += 1
else:
    while running(i):
        train_step()
        i += 1
print("trained %d steps (rank %s, pid %d)" % (i, os.environ.get("RANK", "-"), os.getpid()), flush=True)
sys.exit(args.exit)

"""torchrun's shape for the capture tests: a launcher that imports torch, then runs
`--nproc N` copies of a script with RANK, LOCAL_RANK and WORLD_SIZE set, and exits with the
first non-zero exit code of theirs."""
import os
import subprocess
import sys

import torch  # noqa: F401  (torchrun's launcher imports it too)

n = int(sys.argv[2]) if sys.argv[1] == "--nproc" else 1
command = sys.argv[3:] if sys.argv[1] == "--nproc" else sys.argv[1:]
procs = []
for rank in range(n):
    env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(n))
    procs.append(subprocess.Popen([sys.executable] + command, env=env))
codes = [p.wait() for p in procs]
sys.exit(next((c for c in codes if c != 0), 0))

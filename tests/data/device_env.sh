# Sourced by the capture scripts of tests/data (on the device machine, from the repo root):
# Nsight Systems 2025.3.1 as installed there, with its importer on PATH (it needs libdw1 and
# libelf1: the Debian .debs in .debs/, unpacked to /tmp/libs); OUT, the folder whose files come
# back, and W, scratch space.
HOST=/opt/nvidia/nsight-compute/2025.3.1/host
mkdir -p /tmp/libs && for f in .debs/*.deb; do dpkg -x "$f" /tmp/libs; done
export LD_LIBRARY_PATH=/tmp/libs/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PATH=$HOST/linux-desktop-glibc_2_11_3-x64:$HOST/target-linux-x64:$PATH
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; W=/tmp/cap; mkdir -p "$W" "$OUT"

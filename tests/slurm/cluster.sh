#!/usr/bin/env bash
# A one-node Slurm cluster on this machine for tests/slurm/run.sh: installs slurm-wlm and munge
# from Debian when missing, starts munged, then slurmctld and slurmd on a private slurm.conf.
# Not a model of a real site: no accounting, no cgroups, everything runs as root.
#
#   tests/slurm/cluster.sh start|stop
#   source tests/slurm/cluster.sh && slurm_cluster_start   # also exports SLURM_CONF
#
# Reads SLURM_TEST_DIR (the state folder: slurm.conf, spool, logs, pid files; default
# /tmp/sightline-slurm). `start` stops a cluster already running from that folder first; `stop`
# ends slurmctld and slurmd (by their pid files) and removes the folder. munged is left running:
# it is a machine-wide service, and a second start reuses it.
set -euo pipefail

SLURM_TEST_DIR="${SLURM_TEST_DIR:-/tmp/sightline-slurm}"
# shellcheck source-path=SCRIPTDIR source=../../scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"

# The marker says the folder is ours, so `stop` may remove it.
slurm_marker() { echo "$SLURM_TEST_DIR/.sightline-slurm-test"; }

# slurm_fail MESSAGE: the daemons' last log lines, then MESSAGE; exits 1.
slurm_fail() {
  local f
  for f in "$SLURM_TEST_DIR/slurmctld.log" "$SLURM_TEST_DIR/slurmd.log" /var/log/munge/munged.log; do
    [ -s "$f" ] || continue
    echo "--- last lines of $f" >&2
    tail -n 20 "$f" >&2
  done
  echo "slurm test cluster: $*" >&2
  exit 1
}

munge_works() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

# A key (mode 400, owned by munge) and a running munged; reuses one that already answers.
slurm_start_munge() {
  munge_works && return 0
  local key=/etc/munge/munge.key
  if [ ! -s "$key" ]; then
    log "creating $key"
    install -d -o munge -g munge -m 700 /etc/munge
    if command -v mungekey >/dev/null; then
      mungekey --create --keyfile="$key" || slurm_fail "mungekey could not create $key"
    else
      dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
    fi
  fi
  chown munge:munge "$key"
  chmod 400 "$key"
  # Without systemd nobody makes the socket's folder (the package leaves it to tmpfiles.d).
  install -d -o munge -g munge -m 755 /run/munge
  log "starting munged"
  if ! runuser -u munge -- munged 2>"$SLURM_TEST_DIR/munged.err"; then
    # As the munge user it refuses folders whose owners it distrusts; root may force it.
    munged --force 2>>"$SLURM_TEST_DIR/munged.err" || {
      cat "$SLURM_TEST_DIR/munged.err" >&2
      slurm_fail "munged did not start"
    }
  fi
  for _ in $(seq 50); do munge_works && return 0; sleep 0.1; done
  slurm_fail "munged runs but munge -n | unmunge fails"
}

# Only what a one-node cluster needs; the rest are Slurm's defaults.
slurm_write_conf() {
  local host cpus mem_mb
  host="$(hostname -s)"
  cpus="$(nproc)"
  # A little under MemTotal: slurmd drains a node whose RealMemory is more than it finds.
  mem_mb="$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.95 }' /proc/meminfo)"
  cat > "$SLURM_TEST_DIR/slurm.conf" <<EOF
# Written by tests/slurm/cluster.sh; removed by its stop.
ClusterName=sightline-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$SLURM_TEST_DIR/state
SlurmdSpoolDir=$SLURM_TEST_DIR/spool
SlurmctldPidFile=$SLURM_TEST_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_TEST_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_TEST_DIR/slurmctld.log
SlurmdLogFile=$SLURM_TEST_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# Batch jobs are scheduled at once instead of up to 3 s later (the test took 11 s with the
# default, 5 s without). A merge job whose array failed is not cancelled here: submit.sh asks
# for that itself (--kill-on-invalid-dep), as it must on sites that do not set it.
SchedulerParameters=batch_sched_delay=0
ReturnToService=2
# Trust these figures over what slurmd counts (VMs report odd sockets and cores).
SlurmdParameters=config_overrides
InactiveLimit=0
KillWait=5
MinJobAge=300
# No mail here; the default /bin/mail is not installed and slurmctld logs an error for it.
MailProg=/bin/true
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Default=YES Nodes=ALL MaxTime=INFINITE State=UP
EOF
}

# slurm_pid NAME: the pid in NAME's pid file while that process runs and is still NAME (a stale
# pid file may name a pid reused by something else).
slurm_pid() {
  local file="$SLURM_TEST_DIR/$1.pid" pid
  [ -s "$file" ] || return 1
  pid="$(cat "$file")"
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] && echo "$pid"
}

slurm_cluster_stop() {
  export SLURM_CONF="$SLURM_TEST_DIR/slurm.conf"
  [ -d "$SLURM_TEST_DIR" ] || return 0
  [ -f "$(slurm_marker)" ] || {
    echo "slurm test cluster: $SLURM_TEST_DIR was not made by cluster.sh; not touching it" >&2
    return 1
  }
  # Cancel jobs first so that slurmd ends their slurmstepd and job processes.
  if slurm_pid slurmctld >/dev/null && slurm_pid slurmd >/dev/null; then
    local jobs
    jobs="$(squeue -h -o %A 2>/dev/null || true)"
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086 # one job id a word
      scancel $jobs 2>/dev/null || true
      for _ in $(seq 50); do [ -z "$(squeue -h -o %A 2>/dev/null)" ] && break; sleep 0.2; done
    fi
  fi
  # Both at once: each takes a second or two to save its state and exit.
  local name pid pids=()
  for name in slurmd slurmctld; do
    if pid="$(slurm_pid "$name")"; then
      kill "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "slurm test cluster: $pid ($(cat "/proc/$pid/comm" 2>/dev/null)) ignored SIGTERM" \
        "for 10 s; killing it" >&2
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  rm -rf -- "$SLURM_TEST_DIR"
}

slurm_cluster_start() {
  try_apt_packages slurm-wlm munge ||
    { echo "slurm test cluster: apt-get could not install slurm-wlm and munge" >&2; exit 1; }
  if [ -d "$SLURM_TEST_DIR" ] && [ ! -f "$(slurm_marker)" ] &&
     [ -n "$(ls -A "$SLURM_TEST_DIR")" ]; then
    echo "slurm test cluster: $SLURM_TEST_DIR exists and is not ours; set SLURM_TEST_DIR" >&2
    exit 1
  fi
  [ ! -f "$(slurm_marker)" ] || slurm_cluster_stop
  mkdir -p "$SLURM_TEST_DIR/state" "$SLURM_TEST_DIR/spool"
  touch "$(slurm_marker)"
  export SLURM_CONF="$SLURM_TEST_DIR/slurm.conf"
  slurm_write_conf

  # A Slurm of someone else's would hold the ports, and ours would fail in a confusing way.
  local other
  other="$(pgrep -a -x slurmctld; pgrep -a -x slurmd)" || true
  [ -z "$other" ] || slurm_fail "other Slurm daemons run here: $other"

  slurm_start_munge
  log "starting slurmctld and slurmd ($SLURM_CONF)"
  slurmctld -f "$SLURM_CONF" || slurm_fail "slurmctld did not start"
  slurmd -f "$SLURM_CONF" || slurm_fail "slurmd did not start"

  local state=""
  for _ in $(seq 60); do
    state="$(sinfo -h -o %T 2>/dev/null || true)"
    [ "$state" = idle ] && return 0
    slurm_pid slurmctld >/dev/null || slurm_fail "slurmctld exited"
    slurm_pid slurmd >/dev/null || slurm_fail "slurmd exited"
    sleep 0.5
  done
  scontrol show node >&2 2>/dev/null || true
  slurm_fail "the node is not idle after 30 s (sinfo says: ${state:-nothing})"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  case "${1:-}" in
    start) slurm_cluster_start ;;
    stop) slurm_cluster_stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
  esac
fi

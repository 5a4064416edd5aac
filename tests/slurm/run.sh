#!/usr/bin/env bash
# End-to-end test of the Slurm recipe in docs/slurm: starts a one-node cluster (cluster.sh),
# submits submit.sh over the DDP test capture's two rank reports and checks the merged JSON.
# It checks the recipe's plumbing (array, dependency, merge), not the report's figures.
#
#   tests/slurm/run.sh BIN
#
# Needs root (or sudo) and, the first time, apt. Passes SIGHTLINE_SUMMARY_FORMAT and
# SIGHTLINE_MERGE_FILES on to the jobs; SLURM_TEST_DIR picks the cluster's state folder.
# A failed run keeps its temp folder (job logs, summaries) and says where.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 SIGHTLINE_BINARY" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="$(realpath "$1")"
[ -x "$bin" ] || { echo "FAIL slurm: $1 is not an executable" >&2; exit 1; }
started=$SECONDS

# shellcheck source-path=SCRIPTDIR source=cluster.sh
source "$here/cluster.sh"
work="$(mktemp -d "${TMPDIR:-/tmp}/sightline-slurm-test.XXXXXX")"
finish() {
  local status=$?
  slurm_cluster_stop || status=1
  if [ "$status" -eq 0 ]; then rm -rf -- "$work"; else echo "kept $work for a look" >&2; fi
  exit "$status"
}
trap finish EXIT

fail() {
  local f
  for f in "$work"/slurm-*.out; do
    [ -f "$f" ] || continue
    echo "--- $f" >&2
    tail -n 20 "$f" >&2
  done
  echo "FAIL slurm: $*" >&2
  exit 1
}

slurm_cluster_start

for rank in 0 1; do
  xz -dc "$repo/tests/data/multi/ddp/ddp_rank$rank.sqlite.xz" > "$work/run_rank$rank.sqlite"
done
cp "$repo/tests/data/multi/ddp/train_ddp.py" "$work/"

# Submitted from the temp folder: the jobs run there, their logs land there, and the reports'
# Python paths map onto the train_ddp.py beside them.
merge_id="$(cd "$work" && SIGHTLINE="$bin" REPORTS="$work" SUMMARIES="$work/summaries" N=2 \
  SIGHTLINE_SCRIPT="$work/train_ddp.py" \
  "$repo/docs/slurm/submit.sh")" || fail "submit.sh failed"
[[ "$merge_id" =~ ^[0-9]+$ ]] || fail "submit.sh printed \"$merge_id\", not a job id"

# No accounting here, so no sacct: the job leaves squeue's list of live states when it ends.
deadline=$((SECONDS + 120))
while [ -n "$(squeue -h -j "$merge_id" -t PENDING,CONFIGURING,RUNNING,COMPLETING -o %T 2>/dev/null)" ]; do
  [ "$SECONDS" -lt "$deadline" ] || fail "merge job $merge_id still queued after 120 s"
  sleep 0.5
done
# A failed reduce task cancels the merge job (submit.sh's --kill-on-invalid-dep): the logs tell why.
state="$(scontrol -o show job "$merge_id" 2>/dev/null | grep -oE '(JobState|Reason)=[^ ]*' |
  paste -sd ' ' || true)"
[[ "$state" == JobState=COMPLETED* ]] || fail "merge job $merge_id ended with ${state:-no state}"
[ -s "$work/summaries/job.json" ] || fail "merge job completed but wrote no summaries/job.json"
[ -s "$work/summaries/job.html" ] || fail "merge job completed but wrote no summaries/job.html"

ranks="$(python3 - "$work/summaries/job.json" <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    report = json.load(f)
job = report.get("job") or {}
ranks = job.get("ranks")
if not isinstance(ranks, list) or len(ranks) != 2:
    sys.exit(f"expected the job's 'ranks' to be a list of 2, got {ranks!r:.200}")
# Rank 1 of this capture does extra work on purpose (tests/data/multi/README.md).
straggler = (job.get("straggler") or {}).get("rank", "")
if not straggler.startswith("rank 1 ("):
    sys.exit(f"expected rank 1 as the straggler, got {straggler!r}")
print(len(ranks))
EOF
)" || fail "summaries/job.json is not the merged report of 2 ranks"

echo "PASS slurm: 2 rank reports reduced by a job array and merged by job $merge_id" \
  "(ranks=$ranks) in $((SECONDS - started)) s"

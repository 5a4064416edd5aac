#!/usr/bin/env bash
# Reduces one run's per-rank nsys reports on a Slurm cluster and merges them into the job's
# view (docs/jobs.md): a job array (reduce_ranks.sbatch, one task a rank) and a merge job that starts once
# every task has succeeded (merge_job.sbatch). Copy docs/slurm/ beside your job and run
#
#   REPORTS=/shared/run42 N=8 ./submit.sh
#
# from your project folder: the jobs run in the folder you submit from, so the reports' Python
# paths map onto your files there, and the logs (slurm-sightline-*.out) land there too.
#
# Variables:
#   SIGHTLINE   the sightline binary (default: `sightline` on PATH)
#   REPORTS     the folder with run_rank0.sqlite ... run_rank<N-1>.sqlite
#               (nsys profile -o run_rank%q{RANK}, then nsys export --type sqlite)
#   SUMMARIES   where rank<i>.json and the merged job.json go (default: $REPORTS/summaries)
#   N           the number of ranks (default: how many run_rank*.sqlite REPORTS holds)
#   SIGHTLINE_SCRIPT  the training script (optional; PyTorch-profiler traces need it)
#   SIGHTLINE_SUMMARY_FORMAT, SIGHTLINE_MERGE_FILES: see the two .sbatch files
# Partition, account and time limit: edit the #SBATCH lines, or set SBATCH_PARTITION,
# SBATCH_ACCOUNT, SBATCH_TIMELIMIT, which sbatch reads itself.
#
# Prints the merge job's id on standard output, as sbatch --parsable does, to wait on it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SIGHTLINE="${SIGHTLINE:-sightline}"
: "${REPORTS:?set REPORTS to the folder holding run_rank<i>.sqlite}"
REPORTS="$(cd "$REPORTS" && pwd)"
SUMMARIES="${SUMMARIES:-$REPORTS/summaries}"
if [ -z "${N:-}" ]; then
  N="$(find "$REPORTS" -maxdepth 1 -name 'run_rank*.sqlite' | wc -l)"
fi
[ "$N" -gt 0 ] || { echo "submit.sh: no run_rank*.sqlite in $REPORTS (or set N)" >&2; exit 1; }
# An absolute path, since the jobs may start with another PATH.
found="$(command -v "$SIGHTLINE")" || { echo "submit.sh: $SIGHTLINE not found" >&2; exit 1; }
SIGHTLINE="$(realpath "$found")"
mkdir -p "$SUMMARIES"
SUMMARIES="$(cd "$SUMMARIES" && pwd)"
export SIGHTLINE REPORTS SUMMARIES

# --export=ALL in case the site's default exports nothing: the jobs read the variables above.
array_id="$(sbatch --parsable --export=ALL --array="0-$((N - 1))" "$here/reduce_ranks.sbatch")"
array_id="${array_id%%;*}"
# Without --kill-on-invalid-dep a failed task leaves the merge job pending forever, with reason
# DependencyNeverSatisfied, on sites whose slurm.conf does not say otherwise.
merge_id="$(sbatch --parsable --export=ALL --dependency="afterok:$array_id" \
  --kill-on-invalid-dep=yes "$here/merge_job.sbatch")"
merge_id="${merge_id%%;*}"
echo "submitted: reduce array $array_id ($N tasks), merge $merge_id -> $SUMMARIES/job.json" >&2
echo "$merge_id"

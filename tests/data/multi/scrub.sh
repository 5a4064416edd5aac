#!/usr/bin/env bash
# What was done to each export after `capture.sh`, before it was compressed into this folder:
# environment values replaced (they can hold secrets), and for the whole-run compile capture the
# tables Sightline does not read (--cudabacktrace call chains, OS runtime calls and their chains,
# CPU sampling) dropped to keep it small. Usage: scrub.sh export.sqlite [--slim]
set -euo pipefail
db=$1
sqlite3 "$db" "UPDATE TARGET_INFO_SYSTEM_ENV SET value = '[scrubbed]' WHERE name = 'DeviceEnvironment';
               UPDATE META_DATA_CAPTURE SET value = '[scrubbed]' WHERE name LIKE '%ENVIRONMENT%';"
if [ "${2:-}" = --slim ]; then
  for t in CUDA_CALLCHAINS OSRT_API OSRT_CALLCHAINS SAMPLING_CALLCHAINS COMPOSITE_EVENTS SCHED_EVENTS; do
    sqlite3 "$db" "DROP TABLE IF EXISTS $t;"
  done
fi
sqlite3 "$db" "VACUUM;"

"""Row counts of each nsys export named (JSON on stdout): the tables whose rows a capture
option adds, before scrub.py drops the ones Sightline does not read."""
import json
import sqlite3
import sys

out = {}
for path in sys.argv[1:]:
    db = sqlite3.connect(path)
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    counts = {t: db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables
              if not t.startswith("ENUM_") and t != "StringIds"}
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
        counts["runtime_by_class"] = dict(db.execute(
            "SELECT eventClass, COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY eventClass").fetchall())
    if "NVTX_EVENTS" in tables:
        counts["nvtx_by_type"] = dict(db.execute("SELECT eventType, COUNT(*) FROM NVTX_EVENTS GROUP BY eventType").fetchall())
    out[path.rsplit("/", 1)[-1]] = counts
print(json.dumps(out, indent=1, sort_keys=True))

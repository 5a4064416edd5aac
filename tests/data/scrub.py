"""What is done to each nsys export before it is compressed into tests/data: environment values
replaced (they can hold secrets) and the tables Sightline does not read dropped (the same as
multi/scrub.sh --slim, for machines without the sqlite3 shell). Usage: scrub.py export.sqlite"""
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
for sql in ("UPDATE TARGET_INFO_SYSTEM_ENV SET value = '[scrubbed]' WHERE name = 'DeviceEnvironment'",
            "UPDATE META_DATA_CAPTURE SET value = '[scrubbed]' WHERE name LIKE '%ENVIRONMENT%'"):
    try:
        db.execute(sql)
    except sqlite3.OperationalError:
        pass
for table in ("CUDA_CALLCHAINS", "OSRT_API", "OSRT_CALLCHAINS", "SAMPLING_CALLCHAINS", "COMPOSITE_EVENTS",
              "SCHED_EVENTS"):
    db.execute(f"DROP TABLE IF EXISTS {table}")
db.commit()
db.execute("VACUUM")
db.close()

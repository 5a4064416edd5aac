"""How much of each thread's CPU samples fell in the profiler's own code (nsys's injection
libraries, CUPTI, its unwinder), for the nsys exports named: the capture measuring itself.
Prints, per export, the process with the most CUDA calls, each of its busiest threads'
samples, and the modules most often on their stacks."""
import collections
import sqlite3
import sys

for path in sys.argv[1:]:
    db = sqlite3.connect(path)
    q = lambda s, *a: db.execute(s, a).fetchall()
    names = dict(q("SELECT id, value FROM StringIds"))
    pid = q("SELECT globalTid >> 24, COUNT(*) c FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1 ORDER BY c DESC LIMIT 1")[0][0]
    samples = q("SELECT id, globalTid & 16777215 FROM COMPOSITE_EVENTS WHERE globalTid >> 24 = ?", pid)
    frames = collections.defaultdict(list)
    for sid, depth, sym, mod in q("SELECT c.id, c.stackDepth, c.symbol, c.module FROM SAMPLING_CALLCHAINS c "
                                  "JOIN COMPOSITE_EVENTS e ON e.id = c.id WHERE e.globalTid >> 24 = ? "
                                  "ORDER BY c.id, c.stackDepth", pid):
        frames[sid].append((names.get(mod, "?").rsplit("/", 1)[-1], names.get(sym, "?")))
    by_tid = collections.Counter(t for _, t in samples)
    print(f"== {path}: pid {pid}, {len(samples)} samples")
    for tid, n in by_tid.most_common(3):
        anywhere, leaf, leafsym = collections.Counter(), collections.Counter(), collections.Counter()
        for sid, t in samples:
            if t != tid or not frames[sid]:
                continue
            st = frames[sid]
            leaf[st[0][0]] += 1
            leafsym[st[0][1][:60]] += 1
            for m in {m for m, _ in st}:
                anywhere[m] += 1
        print(f"  tid {tid}: {n} samples")
        print("    modules anywhere:", anywhere.most_common(25))
        print("    leaf modules:", leaf.most_common(12))
        print("    leaf symbols:", leafsym.most_common(12))

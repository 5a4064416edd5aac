"""An independent replay of a PyTorch memory snapshot, to check Sightline's against:
    python3 replay.py SNAPSHOT.pickle [USER_FILE_SUFFIX]
Prints the peak of allocated memory (and reserved), what was allocated before the trace, the
out-of-memory event, and the bytes alive at the peak per user line (the innermost frame in a
file ending with USER_FILE_SUFFIX, default "gpt_mem.py"; allocations without frames, made by
the autograd engine, go to the line of the last `backward` call seen before them)."""
import collections
import pickle
import sys


def main():
    snap = pickle.load(open(sys.argv[1], "rb"))
    suffix = sys.argv[2] if len(sys.argv) > 2 else "gpt_mem.py"
    trace = snap["device_traces"][0]

    def user_line(frames):
        for f in frames:
            if f["filename"].endswith(suffix):
                return f["line"]
        return None

    def backward_line(frames):
        if any(f["name"] == "backward" and ("torch/_tensor.py" in f["filename"] or "torch/autograd" in f["filename"])
               for f in frames):
            return user_line(frames)
        return None

    # Where each event's bytes belong.
    owner, carry = [], None
    for e in trace:
        if e["frames"]:
            carry = backward_line(e["frames"])
            owner.append(user_line(e["frames"]))
        else:
            owner.append(carry)
    has_completed = any(e["action"] == "free_completed" for e in trace)
    free_action = "free_completed" if has_completed else "free_requested"
    # Blocks allocated before the trace: freed without an alloc in it, or alive at the dump.
    live, before = {}, {}
    for i, e in enumerate(trace):
        if e["action"] == "alloc":
            live[e["addr"]] = i
        elif e["action"] == free_action:
            if e["addr"] in live:
                del live[e["addr"]]
            else:
                before[("freed", i)] = (e["size"], user_line(e["frames"]))
    for seg in snap["segments"]:
        for b in seg["blocks"]:
            if b["state"] in ("active_allocated", "active_pending_free") and b["address"] not in live:
                before[("dump", b["address"])] = (b["size"], user_line(b.get("frames", [])))
    before_bytes = sum(s for s, _ in before.values())
    # Forward: allocated over time, the peak, and who holds it.
    alloc = before_bytes
    live = {("before", k): v for k, v in before.items()}
    freed_before = {k[1] for k in before if k[0] == "freed"}
    peak, peak_at, peak_live = alloc, -1, dict(live)
    for i, e in enumerate(trace):
        if e["action"] == "alloc":
            alloc += e["size"]
            live[e["addr"]] = (e["size"], owner[i])
            if alloc > peak:
                peak, peak_at, peak_live = alloc, i, dict(live)
        elif e["action"] == free_action:
            if i in freed_before:
                alloc -= e["size"]
                live.pop(("before", ("freed", i)), None)
            elif e["addr"] in live:
                alloc -= live.pop(e["addr"])[0]
    reserved_end = sum(s["total_size"] for s in snap["segments"])
    seg_delta = sum(e["size"] if e["action"] == "segment_alloc" else -e["size"]
                    for e in trace if e["action"] in ("segment_alloc", "segment_free"))
    reserved = reserved_end - seg_delta
    peak_reserved = reserved
    for e in trace:
        if e["action"] == "segment_alloc":
            reserved += e["size"]
        elif e["action"] == "segment_free":
            reserved -= e["size"]
        peak_reserved = max(peak_reserved, reserved)
    print(f"events {len(trace)} peak_allocated {peak} at_event {peak_at} peak_reserved {peak_reserved} "
          f"allocated_before_trace {before_bytes}")
    for e in trace:
        if e["action"] == "oom":
            print(f"oom line {user_line(e['frames'])} requested {e['size']} free {e['device_free']}")
    lines = collections.Counter()
    for size, line in peak_live.values():
        lines[line] += size
    on_user = sum(v for k, v in lines.items() if k is not None)
    print(f"on user lines {on_user} of {peak} ({100.0 * on_user / max(peak, 1):.2f}%)")
    for line, size in lines.most_common(8):
        print(f"line {line} {size}")


if __name__ == "__main__":
    main()

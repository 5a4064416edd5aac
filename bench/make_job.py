#!/usr/bin/env python3
"""Makes an N-rank job of rank summaries from real ones, with stragglers of known truth.

    bench/make_job.py --ranks 1024 --out DIR SUMMARY.json [SUMMARY.json ...]
        [--straggler RANK:STEPS:MS ...] [--ranks-per-node 8] [--seed 1] [--repeat-steps K]

Each SUMMARY.json is `sightline report --format summary` of one real rank's report. Rank i of
the job is a copy of the template of the first rank (so that, as in a well-balanced job, no rank
waits for another on its own; each copy's collectives get up to 20 µs of jitter), on host
`node<i // ranks-per-node>`, GPU `i % ranks-per-node`, its own pid and GPU UUID. A straggler
RANK:STEPS:MS (STEPS as 2,5,7 or 3-6) delays that rank's host by MS milliseconds in those steps:
the first collective of each of those steps lasts MS longer on every other rank (they wait for
it), and the template's costliest line runs MS longer on the straggler in those steps (the line
that made it late). --repeat-steps K runs the template's steps K times over, one after the
other (a longer run of the same steps: their collectives and per-step line times with them).
Writes DIR/rank<i>.json and DIR/truth.txt (the stragglers, as JSON).
"""
import argparse, copy, json, os, random, uuid


def steps_of(text):
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def repeat_steps(s, k):
    """The summary's steps run k times over, each run starting where the last one ended."""
    if k <= 1 or not s["steps"]:
        return
    n, span = len(s["steps"]), s["steps"][-1][1] - s["steps"][0][0]
    steps, collectives = [], []
    for rep in range(k):
        shift = rep * span
        steps += [[st[0] + shift, st[1] + shift] + st[2:] for st in s["steps"]]
        for c in s["collectives"]:
            if c[0] < 0 and rep > 0:
                continue  # outside every step: once
            collectives.append([c[0] + rep * n if c[0] >= 0 else c[0], c[1], c[2], c[3] + shift, c[4] + shift] + c[5:])
    s["steps"], s["collectives"] = steps, sorted(collectives, key=lambda c: (c[3], c[4]))
    for line in s["lines"]:
        for key in ("ns", "backward_ns", "comm_ns", "syncs", "sync_ns"):
            if key in line:
                line[key] *= k
        if "step_ns" in line:
            line["step_ns"] = line["step_ns"] * k


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ranks-per-node", type=int, default=8)
    ap.add_argument("--straggler", action="append", default=[])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat-steps", type=int, default=1)
    ap.add_argument("summaries", nargs="+")
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    template = None
    for path in args.summaries:
        with open(path) as f:
            doc = json.load(f)
        for s in doc["summaries"]:
            template = template or s
    repeat_steps(template, args.repeat_steps)
    stragglers = {}
    for spec in args.straggler:
        rank, steps, delay = spec.split(":")
        stragglers[int(rank)] = (steps_of(steps), int(float(delay) * 1e6))
    os.makedirs(args.out, exist_ok=True)
    # The first collective of each step (by start) on the template: where the others wait.
    first_in_step = {}
    for i, c in enumerate(template["collectives"]):
        step = c[0]
        if step >= 0 and (step not in first_in_step or c[3] < template["collectives"][first_in_step[step]][3]):
            first_in_step[step] = i
    for r in range(args.ranks):
        s = copy.deepcopy(template)
        node, gpu = divmod(r, args.ranks_per_node)
        s.update(rank=r, world_size=args.ranks, rank_source="file name", host=f"node{node}", devices=[gpu],
                 gpu_uuid=str(uuid.UUID(int=rnd.getrandbits(128))), pid=10000 + rnd.randrange(50000),
                 report=f"run_rank{r}.sqlite")
        for c in s["collectives"]:
            jitter = rnd.randrange(0, 20000)
            c[4] += jitter
            c[5] = min(c[5] + jitter, c[4] - c[3])
        for who, (steps, delay) in stragglers.items():
            for step in steps:
                i = first_in_step.get(step)
                if i is None:
                    continue
                if r != who:
                    s["collectives"][i][4] += delay
                    s["collectives"][i][5] += delay
                else:
                    s["steps"][step][1] += delay
                    for line in s["lines"][:1]:
                        if "step_ns" in line:
                            line["step_ns"][step] += delay
        with open(os.path.join(args.out, f"rank{r}.json"), "w") as f:
            json.dump({"sightline_rank_summary": 1, "summaries": [s]}, f, separators=(",", ":"))
    truth = [{"rank": who, "steps": steps, "delay_ms": delay / 1e6,
              "line": [template["lines"][0]["path"], template["lines"][0]["line"]] if template["lines"] else None}
             for who, (steps, delay) in stragglers.items()]
    with open(os.path.join(args.out, "truth.txt"), "w") as f:
        json.dump(truth, f)


if __name__ == "__main__":
    main()

"""The tables of one lab experiment (configs/experiments/lab.sh): BASE.csv (every step of the
static and adaptive runs and of the simulator's two predictions), BASE.events (each event the
lab applied in the adaptive run, at the step it landed in) and, on stdout, the summary.
  python3 lab_tables.py BASE NAME"""
import csv
import re
import statistics
import sys

base, name = sys.argv[1], sys.argv[2]


def metrics(mode):
    rows = csv.DictReader(open(f"{base}/{mode}/job/metrics.csv"))
    return {int(r["step"]): r for r in rows}


def simulated():
    """simulate --adaptive's table: step (from 0), start, step time, samples/s, static s/s."""
    unit = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
    out = {"simulated-static": {}, "simulated-adaptive": {}}
    started = False
    static_start = 0.0
    for line in open(f"{base}/simulate.txt"):
        if line.startswith(" step "):
            started = True
            continue
        f = line.split()
        if not started or len(f) < 7 or not f[0].isdigit():
            continue
        step = int(f[0]) + 1
        start, took = float(f[1]) * unit[f[2]], float(f[3]) * unit[f[4]]
        adaptive, static = float(f[5]), float(f[6])
        out["simulated-adaptive"][step] = (start, start + took, adaptive)
        static_took = 32 / static
        out["simulated-static"][step] = (static_start, static_start + static_took, static)
        static_start += static_took
    return out


def lab_events(mode):
    rows = list(csv.DictReader(open(f"{base}/{mode}/lab-events.csv")))
    return [(int(r["step"]) + 1, float(r["wall_s"]), r["event"], r["lab"]) for r in rows]


def decisions(mode):
    found = []
    pattern = re.compile(r"adapter: step (\d+): (\w+) \((.*?)\), predicted step ([\d.]+ m?s -> [\d.]+ m?s)")
    for line in open(f"{base}/{mode}/n0.log"):
        m = pattern.search(line)
        if m and m.group(2) not in ("keep", "probes"):
            found.append((int(m.group(1)), m.group(2), m.group(4)))
    return found


runs = {m: metrics(m) for m in ("static", "adaptive")}
sims = simulated()
with open(f"{base}.csv", "w") as f:
    f.write("run,step,start_s,end_s,samples_per_s\n")
    for mode, rows in runs.items():
        for step, r in sorted(rows.items()):
            end = float(r["time_s"])
            f.write(f"{mode},{step},{end - float(r['step_s']):.6f},{end:.6f},{float(r['samples_per_s']):.4f}\n")
    for mode, rows in sims.items():
        for step, (start, end, rate) in sorted(rows.items()):
            f.write(f"{mode},{step},{start:.6f},{end:.6f},{rate:.4f}\n")
events = lab_events("adaptive")
with open(f"{base}.events", "w") as f:
    for step, wall, what, done in events:
        f.write(f"{step}\t{wall:.2f} s\t{what}\t{done}\n")

last_step = max(runs["static"])
step_events = sorted({s for s, *_ in events})
timed = name == "noise"  # events every 3 s: the whole run is disturbed
first, last = (1, last_step + 1) if timed else (step_events[0], step_events[-1])
phases = [("before", 3, first - 1), ("during", first + 2, last - 1), ("after", last + 5, last_step)]
phases = [p for p in phases if p[1] <= p[2]]
every = {**runs, **{m: {s: {"samples_per_s": v[2]} for s, v in r.items()} for m, r in sims.items()}}
print(f"lab-{name}: median samples/s per phase (steps)")
print("| run | " + " | ".join(f"{p} ({a}-{b})" for p, a, b in phases) + " |")
print("|---|" + "---|" * len(phases))
medians = {}
for mode, rows in every.items():
    medians[mode] = [statistics.median(float(rows[s]["samples_per_s"]) for s in rows if a <= s <= b)
                     for _, a, b in phases]
    print(f"| {mode} | " + " | ".join(f"{m:.1f}" for m in medians[mode]) + " |")
print("| adaptive / static (lab) | " +
      " | ".join(f"{a / s:.2f}x" for a, s in zip(medians["adaptive"], medians["static"])) + " |")
common = sorted(set(runs["static"]) & set(runs["adaptive"]))
worst = max(abs(float(runs["adaptive"][s]["loss"]) - float(runs["static"][s]["loss"])) /
            abs(float(runs["static"][s]["loss"])) for s in common)
print(f"worst relative loss difference, adaptive vs static, over {len(common)} steps: {worst:.2e}")
made = decisions("adaptive")
kinds = {}
for _, kind, _ in made:
    kinds[kind] = kinds.get(kind, 0) + 1
print(f"adaptive run's decisions over {last_step} steps: " +
      (", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "none but keep"))
for step, kind, predicted in made:
    print(f"  step {step}: {kind}, predicted step {predicted}")
print(f"events applied by the lab (adaptive run): {len(events)}, "
      f"in steps {step_events[0]}-{step_events[-1]}" if events else "no events applied")

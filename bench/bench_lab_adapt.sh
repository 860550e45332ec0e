#!/usr/bin/env bash
# The adapter on a real network: configs/lab/three-nodes.toml (the small model in two stages
# on n0 and n1, n2 a spare behind a slower interface, every interface shaped by the kernel)
# in wall time, run static (adapt = false) and adaptive in the same lab, while its script
# cuts n1's interface from 20 to 2 Mbps at step 20 and restores it at step 45. Prints, per
# run, the median throughput before the cut (steps 5-19), during it (22-44) and after it
# (50-70), the adaptive run's decisions with their steps, what its real probes cost (the
# median step that ran while a round was in flight beside the median of the other steps
# of the same stretch), and the adaptive run's worst relative loss difference from the
# static run's (the same math: same data and seed). As root; the lab comes up under the
# prefix PREFIX (dcadpt) and is removed however it ends.
#   bench/bench_lab_adapt.sh PATH/TO/deepcee [RUN_DIR] [PREFIX]
set -u
deepcee=$1
lab=$(cd "$(dirname "$0")/../configs/lab" && pwd)
work=${2:-$(mktemp -d)}
prefix=${3:-dcadpt}
mkdir -p "$work"
trap '"$deepcee" lab down --prefix $prefix --state-dir "$work" >/dev/null' EXIT
"$deepcee" lab up "$lab/three-nodes-cluster.toml" --prefix $prefix --state-dir "$work" >/dev/null || exit $?
for mode in static adaptive; do
  adapt=$([ $mode = adaptive ] && echo true || echo false)
  sed "0,/^name = .*/s//&\nadapt = $adapt/; s|\"three-nodes-|\"$lab/three-nodes-|" "$lab/three-nodes.toml" >"$work/$mode.toml"
  "$deepcee" lab run "$work/$mode.toml" --prefix $prefix --state-dir "$work" --out "$work/$mode" \
    >"$work/$mode.out" 2>&1 || echo "$mode: lab run exit $? ($(tail -1 "$work/$mode.out"))" >&2
done
python3 - "$work" <<'PY'
import csv, re, statistics, sys
work = sys.argv[1]
def rows(mode):
    return {int(r["step"]): r for r in csv.DictReader(open(f"{work}/{mode}/job/metrics.csv"))}
phases = [("before (5-19)", 5, 19), ("during (22-44)", 22, 44), ("after (50-70)", 50, 70)]
runs = {m: rows(m) for m in ("static", "adaptive")}
print("| run | " + " | ".join(p[0] for p in phases) + " |")
print("|---|" + "---|" * len(phases))
medians = {}
for mode, r in runs.items():
    medians[mode] = [statistics.median(float(r[s]["samples_per_s"]) for s in r if a <= s <= b) for _, a, b in phases]
    print(f"| {mode} | " + " | ".join(f"{m:.1f} samples/s" for m in medians[mode]) + " |")
print("| adaptive / static | " + " | ".join(f"{a / s:.2f}x" for a, s in zip(medians["adaptive"], medians["static"])) + " |")
common = sorted(set(runs["static"]) & set(runs["adaptive"]))
worst = max(abs(float(runs["adaptive"][s]["loss"]) - float(runs["static"][s]["loss"])) / abs(float(runs["static"][s]["loss"])) for s in common)
print(f"\nworst relative loss difference over {len(common)} steps: {worst:.2e}")
print("\nadaptive run's decisions (other than keep):")
rounds = []
for line in open(f"{work}/adaptive/n0.log"):
    m = re.search(r"adapter: step (\d+): (\w+) \((.*)\), predicted step ([\d.]+ s -> [\d.]+ s)", line)
    if m and m.group(2) != "keep":
        back = re.search(r"\(back: ([^)]*)\)", m.group(3))
        print(f"  step {m.group(1)}: {m.group(2)}, predicted step {m.group(4)}" +
              (f", back: {back.group(1)}" if back else ""))
    m = re.search(r"adapter: step (\d+): probes .*\(real", line)
    if m:
        rounds.append(int(m.group(1)))
    m = re.search(r"re-plan before step (\d+): .*bytes between stage actors, ([\d.e+-]+) s \(took ([\d.e+-]+) s\)", line)
    if m:
        print(f"    re-plan before step {m.group(1)}: moves priced at {float(m.group(2)):.3g} s, "
              f"the re-plan took {float(m.group(3)):.3g} s")
step_s = {s: float(r["step_s"]) for s, r in runs["adaptive"].items()}
if rounds:
    during = {s + 1 for s in rounds}  # a round runs beside the step after its boundary
    stretch = range(min(rounds) + 1, max(rounds) + 2)
    inflight = [step_s[s] for s in stretch if s in during and s in step_s]
    others = [step_s[s] for s in stretch if s not in during and s in step_s]
    print(f"\nreal probe rounds: {len(rounds)}, after steps {min(rounds)}-{max(rounds)}; "
          f"median step with a round in flight {statistics.median(inflight) * 1e3:.1f} ms, "
          f"without {statistics.median(others) * 1e3:.1f} ms" if inflight and others else "")
PY

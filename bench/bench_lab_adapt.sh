#!/usr/bin/env bash
# The adapter on a real network: configs/lab/three-nodes.toml (the small model in three
# stages on three nodes, each behind a 20 Mbps interface that the kernel shapes) in wall
# time, run static (adapt = false) and adaptive in the same lab, while its script cuts n1's
# interface to 2 Mbps at step 20 and restores it at step 45. Prints, per run, the median
# throughput before the cut (steps 5-19), during it (22-44) and after it (50-70), the
# adaptive run's decisions with their steps, and the adaptive run's worst relative loss
# difference from the static run's (the same math: same data and seed). As root; the lab
# comes up under the prefix dcadpt and is removed however it ends.
#   bench/bench_lab_adapt.sh PATH/TO/deepcee [RUN_DIR]
set -u
deepcee=$1
lab=$(cd "$(dirname "$0")/../configs/lab" && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
trap '"$deepcee" lab down --prefix dcadpt --state-dir "$work" >/dev/null' EXIT
"$deepcee" lab up "$lab/three-nodes-cluster.toml" --prefix dcadpt --state-dir "$work" >/dev/null || exit $?
for mode in static adaptive; do
  adapt=$([ $mode = adaptive ] && echo true || echo false)
  sed "0,/^name = .*/s//&\nadapt = $adapt/; s|\"three-nodes-|\"$lab/three-nodes-|" "$lab/three-nodes.toml" >"$work/$mode.toml"
  "$deepcee" lab run "$work/$mode.toml" --prefix dcadpt --state-dir "$work" --out "$work/$mode" \
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
for line in open(f"{work}/adaptive/n0.log"):
    m = re.search(r"adapter: step (\d+): (\w+) \((.*)\), predicted step ([\d.]+ s -> [\d.]+ s)", line)
    if m and m.group(2) != "keep":
        print(f"  step {m.group(1)}: {m.group(2)}, predicted step {m.group(4)}")
PY

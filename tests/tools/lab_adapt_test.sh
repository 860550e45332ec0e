#!/usr/bin/env bash
# The adapter on a real network: configs/lab/three-nodes.toml's job (three stages, one per
# node, each node behind a 20 Mbps interface the kernel shapes) in wall time, its script
# cutting n1's interface 10x when the job starts step 12. The job is not told. Checks that
# the adapter decides nothing but keep before the cut, that its first other decision comes
# from a step within 2 of the cut's and names a drifted link, and that every step's loss
# equals the static run's (adapt = false, the same lab and script) within the tolerance of
# a change of int8 boundaries (2%). Nothing with the test's prefix is left, pass or fail.
#   lab_adapt_test.sh PATH/TO/deepcee CONFIGS_DIR
set -u
deepcee=$1
lab=$(cd "$2/lab" && pwd)
source "$(dirname "$0")/lab_requirements.sh"

work=$(mktemp -d)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cleanup() {
  "$deepcee" lab down --prefix dctad --state-dir "$work" >/dev/null 2>&1
  local left
  left=$(ip netns list | grep -E '^dctad-'; pgrep -af -- "$work/" | grep -v pgrep)
  [[ -z $left ]] || fail "left behind: $left"
  rm -rf "$work"
  echo "lab adapt test: $failures failure(s)"
  exit $((failures > 0))
}
trap cleanup EXIT

"$deepcee" lab up "$lab/three-nodes-cluster.toml" --prefix dctad --state-dir "$work" >/dev/null || exit 1
printf '[[change]]\nstep = 12\nof = "n1"\nbandwidth = "2Mbps"\n' >"$work/cut.toml"
for mode in static adaptive; do
  adapt=$([ $mode = adaptive ] && echo true || echo false)
  sed "0,/^name = .*/s//&\nadapt = $adapt/; s|\"three-nodes-plan|\"$lab/three-nodes-plan|;
       s|\"three-nodes-cluster|\"$lab/three-nodes-cluster|; s|\"three-nodes-drop.toml\"|\"$work/cut.toml\"|;
       s|^steps = .*|steps = 20|; s|^out = .*|out = \"$work/runs\"|" "$lab/three-nodes.toml" >"$work/$mode.toml"
  "$deepcee" lab run "$work/$mode.toml" --prefix dctad --state-dir "$work" --out "$work/$mode" \
    >"$work/$mode.out" 2>&1 || fail "$mode run: $(tail -3 "$work/$mode.out")"
done

python3 - "$work" <<'PY' || failures=$((failures + 1))
import csv, re, sys
work = sys.argv[1]
cut = 12
decisions = []
for line in open(f"{work}/adaptive/n0.log"):
    m = re.search(r"adapter: step (\d+): (\w+) \((.*)", line)
    if m:
        decisions.append((int(m.group(1)), m.group(2), m.group(3)))
early = [d for d in decisions if d[0] < cut and d[1] != "keep"]
if early:
    sys.exit(f"FAIL: decisions before the cut at step {cut}: {early}")
acted = [d for d in decisions if d[1] != "keep"]
if not acted:
    sys.exit(f"FAIL: no decision after the cut at step {cut}")
first = acted[0]
print(f"first decision: step {first[0]}: {first[1]} ({first[2][:160]})")
if first[0] > cut + 2 or "link" not in first[2].split(":")[0]:
    sys.exit(f"FAIL: the first decision is not within 2 steps of the cut, on a drifted link")
rows = {m: {int(r["step"]): float(r["loss"]) for r in csv.DictReader(open(f"{work}/{m}/job/metrics.csv"))}
        for m in ("static", "adaptive")}
if len(rows["static"]) != 20 or len(rows["adaptive"]) != 20:
    sys.exit(f"FAIL: steps run: static {len(rows['static'])}, adaptive {len(rows['adaptive'])}")
worst = max(abs(rows["adaptive"][s] - rows["static"][s]) / rows["static"][s] for s in rows["static"])
print(f"worst relative loss difference from the static run: {worst:.2e}")
if worst > 0.02:
    sys.exit("FAIL: the adapted run's losses left the static run's")
PY

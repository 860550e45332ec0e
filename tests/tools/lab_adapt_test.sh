#!/usr/bin/env bash
# The adapter on a real network: configs/lab/three-nodes.toml's job (three stages, one per
# node, each node behind a 20 Mbps interface the kernel shapes) in wall time, its script
# cutting n1's interface 10x when the job starts step 12 and restoring it at step 20. The job
# is not told. Checks that the adapter decides nothing but keep before the cut, that its
# first other decision comes from a step within 2 of the cut's and names a drifted link,
# that after the restore its active probes find n1's links back and a decision naming them
# returns to a plan that runs a stage on n1 (in force within 10 steps of the step at which
# the lab applied the restore), and
# that every step's loss equals the static run's (adapt = false, the same lab and script)
# within the tolerance of a change of int8 boundaries (2%). Nothing with the test's prefix
# is left, pass or fail.
#   lab_adapt_test.sh PATH/TO/deepcee CONFIGS_DIR [PREFIX]   (the lab's prefix: dctad)
set -u
deepcee=$1
lab=$(cd "$2/lab" && pwd)
prefix=${3:-dctad}
source "$(dirname "$0")/lab_requirements.sh"

# Another run's lab under the same prefix is not this test's to take down.
if ip netns list | grep -q "^$prefix-"; then
  echo "SKIP: a lab is up under the prefix $prefix (another run of this test?)"
  exit 77
fi
work=$(mktemp -d)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cleanup() {
  "$deepcee" lab down --prefix $prefix --state-dir "$work" >/dev/null 2>&1
  local left
  left=$(ip netns list | grep -E "^$prefix-"; pgrep -af -- "$work/" | grep -v pgrep)
  [[ -z $left ]] || fail "left behind: $left"
  if ((failures > 0)) && [[ -f $work/adaptive/n0.log ]]; then
    echo "the adaptive run's decisions, probes and re-plans:"
    grep -E 'adapter: (step|decision)|re-plan before' "$work/adaptive/n0.log" | grep -v ': keep (' | tail -40
  fi
  rm -rf "$work"
  echo "lab adapt test: $failures failure(s)"
  exit $((failures > 0))
}
trap cleanup EXIT

"$deepcee" lab up "$lab/three-nodes-cluster.toml" --prefix $prefix --state-dir "$work" >/dev/null || { fail "lab up"; exit 1; }
printf '[[change]]\nstep = 12\nof = "n1"\nbandwidth = "2Mbps"\n\n[[change]]\nstep = 20\nof = "n1"\nbandwidth = "20Mbps"\n' >"$work/cut.toml"
for mode in static adaptive; do
  adapt=$([ $mode = adaptive ] && echo true || echo false)
  sed "0,/^name = .*/s//&\nadapt = $adapt/; s|\"three-nodes-plan|\"$lab/three-nodes-plan|;
       s|\"three-nodes-cluster|\"$lab/three-nodes-cluster|; s|\"three-nodes-drop.toml\"|\"$work/cut.toml\"|;
       s|^steps = .*|steps = 34|; s|^out = .*|out = \"$work/runs\"|" "$lab/three-nodes.toml" >"$work/$mode.toml"
  "$deepcee" lab run "$work/$mode.toml" --prefix $prefix --state-dir "$work" --out "$work/$mode" \
    >"$work/$mode.out" 2>&1 || fail "$mode run: $(tail -3 "$work/$mode.out")"
done

python3 - "$work" <<'PY' || failures=$((failures + 1))
import csv, re, sys
work = sys.argv[1]
cut, back, steps = 12, 20, 34
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
def names_n1(reason):
    # The drift it answers (before the policy's own words) names a link of n1's device (1):
    # drifted, at its estimate, or back.
    drift = re.match(r"(.*?): (?:restore|replan|rebalance|resplit|compression|keep)\b", reason)
    return bool(drift) and re.search(r"link (1->\d+|\d+->1)\b", drift.group(1)) is not None
# The lab applies the script's restore once it sees the step done (lab-events.csv): from then.
applied = max(int(r["step"]) for r in csv.DictReader(open(f"{work}/adaptive/lab-events.csv")))
returned = [d for d in acted if d[0] >= applied and d[1] in ("restore", "replan") and names_n1(d[2])]
if not returned:
    sys.exit(f"FAIL: no re-plan or restore after the restore (applied at step {applied}) names n1's links: {acted}")
m = re.search(r"in force from step (\d+)", returned[0][2])
print(f"return: step {returned[0][0]}: {returned[0][1]} ({returned[0][2][:200]})")
if not m or int(m.group(1)) > applied + 10:
    sys.exit(f"FAIL: the return is not in force within 10 steps of the restore (applied at step {applied})")
replans = [l for l in open(f"{work}/adaptive/n0.log") if f"re-plan before step {m.group(1)}:" in l]
if not replans:
    sys.exit(f"FAIL: no re-plan before step {m.group(1)} in the log")
spawned = [l for l in open(f"{work}/adaptive/n1.log") if re.search(r"spawned [1-9]\d* stage\(s\) of the re-plan", l)]
if not spawned:
    sys.exit("FAIL: no re-plan put a stage on n1 again")
rows = {m: {int(r["step"]): float(r["loss"]) for r in csv.DictReader(open(f"{work}/{m}/job/metrics.csv"))}
        for m in ("static", "adaptive")}
if len(rows["static"]) != steps or len(rows["adaptive"]) != steps:
    sys.exit(f"FAIL: steps run: static {len(rows['static'])}, adaptive {len(rows['adaptive'])}")
worst = max(abs(rows["adaptive"][s] - rows["static"][s]) / rows["static"][s] for s in rows["static"])
print(f"worst relative loss difference from the static run: {worst:.2e}")
if worst > 0.02:
    sys.exit("FAIL: the adapted run's losses left the static run's")
PY

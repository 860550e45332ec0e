#!/usr/bin/env bash
# Losing a member for real: the local cluster's job (two pipelines, so every layer lives on
# two nodes) as three node processes in a network lab, in wall time, 300 steps. It runs
# once undisturbed, once with n2 killed (SIGKILL) when the job starts step 100, and once
# with n1 cut off (its interface down) at step 100. Per run it prints the steps run, the
# median step before step 100, the step that recovered (from its start to its end on the
# survivors' plan: detection, moves and the step itself), the median step after it, the
# worst relative loss difference from the undisturbed run, and goodput: the share of the
# run's time not lost to the recovery (the recovered step beyond the plan's median after). As root; the lab comes up under the
# prefix dcloss and is removed however it ends.
#   bench/bench_node_loss.sh PATH/TO/deepcee
set -u
deepcee=$1
configs=$(cd "$(dirname "$0")/../configs" && pwd)
work=$(mktemp -d)
trap '"$deepcee" lab down --prefix dcloss --state-dir "$work" >/dev/null; rm -rf "$work"' EXIT
"$deepcee" lab up "$configs/local-cluster/cluster.toml" --prefix dcloss --state-dir "$work" >/dev/null || exit $?
python3 - "$work/data.txt" <<'PY'
import random, sys
random.seed(7)
words = "the cloud edge end node link step loss plan stage pipeline layer device".split()
open(sys.argv[1], "w").write("\n".join(" ".join(random.choice(words) for _ in range(12)) for _ in range(4000)))
PY
# run NAME SCRIPT_TOML: the job under the script; its metrics in $work/NAME/job/metrics.csv.
run() {
  printf '%b' "$2" >"$work/$1-script.toml"
  cat >"$work/$1.toml" <<TOML
name = "node-loss-bench"
time = "wall"
cluster = "$configs/local-cluster/cluster.toml"
plan = "$configs/local-cluster/plan.json"
coordinator = "n0"
connect_timeout = 20
[[node]]
name = "n0"
port = 29100
[[node]]
name = "n1"
port = 29101
[[node]]
name = "n2"
port = 29102
[train]
seed = 7
steps = 300
batch = 12
eval_every = 1000
out = "$work/runs"
[train.model]
n_layer = 2
d_model = 32
n_head = 2
context = 16
[train.data]
path = "$work/data.txt"
[inject]
script = "$work/$1-script.toml"
TOML
  "$deepcee" lab run "$work/$1.toml" --prefix dcloss --state-dir "$work" --out "$work/$1" >"$work/$1.out" 2>&1 ||
    echo "$1: lab run exit $? ($(tail -1 "$work/$1.out"))" >&2
}
run quiet ''
run killed '[[node]]\nstep = 100\nnode = "n2"\naction = "kill"\n'
run cut '[[node]]\nstep = 100\nnode = "n1"\naction = "partition"\n'
python3 - "$work" <<'PY'
import csv, os, statistics, sys
work = sys.argv[1]
def rows(name):
    path = os.path.join(work, name, "job", "metrics.csv")
    return list(csv.DictReader(open(path))) if os.path.exists(path) else []
quiet = rows("quiet")
print(f"{'run':>8} {'steps':>6} {'median before':>14} {'recovery step':>14} {'median after':>13} "
      f"{'loss diff':>10} {'goodput':>8}")
for name in ("quiet", "killed", "cut"):
    r = rows(name)
    if not r:
        print(f"{name:>8} {'-':>6}  (no metrics: see {name}.out)")
        continue
    s = [float(x["step_s"]) for x in r]
    before = statistics.median(s[10:99])
    worst = max(range(95, min(len(s), 110)), key=lambda k: s[k]) if len(s) > 100 else 0
    after = statistics.median(s[worst + 5:]) if len(s) > worst + 10 else float("nan")
    diff = max(abs(float(a["loss"]) - float(b["loss"])) / float(a["loss"]) for a, b in zip(quiet, r))
    lost = max(0.0, s[worst] - after) if name != "quiet" else 0.0
    goodput = 1 - lost / sum(s)
    print(f"{name:>8} {len(s):>6} {before:>13.4f}s {s[worst]:>9.3f}s @{int(r[worst]['step']):<3} "
          f"{after:>12.4f}s {diff:>10.1e} {goodput:>7.0%}")
PY

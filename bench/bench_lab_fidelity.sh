#!/usr/bin/env bash
# The simulator against a real network, as root. Brings up the lab of
# configs/lab/fidelity-cluster.toml (three CPU nodes of this host, each behind a 10 Mbps
# interface the kernel shapes; prefix dcfid), profiles it with `deepcee lab profile` (every
# node's devices and every directed link between the nodes, timed on the shaped paths, one
# node at a time), and prints each profiled link beside the rate the lab sets on its path.
# Then runs each plan as a wall-time job in the lab (`deepcee lab run`, no script) and
# prints the simulator's step time from that profile beside the median measured step (the
# first two steps left out: connections and caches warm up), the error (simulated /
# measured - 1), and how many links are within 10% and plans within 15%. The load average
# is printed at the start and the end: the three nodes share this host's cores.
#   bench/bench_lab_fidelity.sh [DEEPCEE] [STEPS] [RUN_DIR]
set -eu
source "$(dirname "$0")/fidelity_row.sh"
here=$(cd "$(dirname "$0")/.." && pwd)
deepcee=$(realpath "${1:-$here/build/tools/deepcee}")
steps=${2:-12}
work=${3:-$(mktemp -d)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
cluster=$here/configs/lab/fidelity-cluster.toml
prefix=dcfid
trap '"$deepcee" lab down --prefix $prefix --state-dir "$work" >/dev/null' EXIT
"$deepcee" lab up "$cluster" --prefix $prefix --state-dir "$work" >"$work/lab-up.txt" ||
  { cat "$work/lab-up.txt"; exit 1; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "load average at the start: $(load) (1, 5, 15 min; this machine has $(nproc) cores)"

# A plan: NAME SCHEDULE MICRO_BATCH MICRO_BATCHES and its stages as
# "devices:samples:first:last:compression" (devices and samples joined by '+').
write_plan() {
  local name=$1
  shift
  python3 "$(dirname "$0")/write_plan.py" "$work/$name.json" "$@"
}

write_job() { # NAME PLAN_FILE
  cat >"$work/$1.toml" <<TOML
name = "lab-fidelity-$1"
time = "wall"
adapt = false
cluster = "$cluster"
plan = "$2"
model = "small"
connect_timeout = 60
heartbeat_timeout = 30
[[node]]
name = "n0"
port = 29320
[[node]]
name = "n1"
port = 29321
[[node]]
name = "n2"
port = 29322
[train]
seed = 1
steps = $steps
threads = 1
eval_every = 0
out = "$work/runs"
TOML
}

# Three stages under 1F1B and under GPipe (4 micro-batches of 2), the lab experiments' plan
# (three stages, greedy, int8, 8 of 4), and the three devices as one data-parallel stage
# (the gradients' all-reduce on the links). Every plan uses every node: a node a plan
# leaves out joins as a spare, and the job may re-plan onto it (the run's log says so, and
# this script then warns).
write_plan pipe3-1f1b 1f1b 2 4 "0:2:0:2:none" "1:2:2:4:none" "2:2:4:6:none"
write_plan pipe3-gpipe gpipe 2 4 "0:2:0:2:none" "1:2:2:4:none" "2:2:4:6:none"
cp "$here/configs/lab/three-nodes-plan.json" "$work/pipe3-greedy-int8.json"
write_plan dp3 1f1b 6 2 "0+1+2:2+2+2:0:6:none"
plans=${PLANS:-pipe3-1f1b pipe3-gpipe pipe3-greedy-int8 dp3}

write_job profile-job "$work/pipe3-1f1b.json"
"$deepcee" lab profile "$work/profile-job.toml" --prefix $prefix --state-dir "$work" \
  --profile "$work/measured-profile.toml" --out "$work/profile-run" \
  -- --micro-batches 1,2,4 --threads 1 --no-gpu >"$work/profile.log" 2>&1 ||
  { cat "$work/profile.log" "$work/profile-run"/*.log; exit 1; }
python3 - "$work/measured-profile.toml" "$work/$prefix.json" <<'PY'
import json, sys, tomllib
links = tomllib.load(open(sys.argv[1], "rb"))["link"]
t = json.load(open(sys.argv[2]))["topology"]
nodes = {n["name"]: i for i, n in enumerate(t["nodes"])}
def rate(port):
    return port["rate_Bps"] if port["rate_Bps"] else float("inf")
def path_rate(i, j):  # the sender's interface out, the receiver's in (one region)
    mine = [l for l in t["links"] if not l["wan"] and l["from"] in (i, j)]
    out = next(rate(l["a"]) for l in mine if l["from"] == i)
    into = next(rate(l["b"]) for l in mine if l["from"] == j)
    return min(out, into)
print(f"{'link':>10} {'set':>12} {'profiled':>12} {'ratio':>6} {'latency':>9}")
within = 0
for l in links:
    want = path_rate(nodes[l["from"]], nodes[l["to"]])
    got = l["bandwidth"]
    ok = abs(got / want - 1) <= 0.10
    within += ok
    print(f"{l['from'] + '->' + l['to']:>10} {want * 8 / 1e6:>7.2f} Mbps {got * 8 / 1e6:>7.2f} Mbps "
          f"{got / want:6.3f} {l['latency'] * 1e3:>6.2f} ms")
print(f"links within 10% of the rate set: {within} of {len(links)}")
PY

printf '%-18s %14s %14s %9s\n' plan "simulated" "measured" "error"
within=0 count=0
for plan in $plans; do
  write_job "$plan" "$work/$plan.json"
  "$deepcee" lab run "$work/$plan.toml" --prefix $prefix --state-dir "$work" --out "$work/run-$plan" \
    >"$work/$plan.log" 2>&1 || { cat "$work/$plan.log"; exit 1; }
  ! grep -q "re-plan" "$work/run-$plan"/n0.log ||
    echo "warning: $plan was re-planned while it ran ($work/run-$plan/n0.log)" >&2
  measured=$(python3 -c 'import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(statistics.median(float(r["step_s"]) for r in rows if int(r["step"]) > 2))' \
    "$work/run-$plan/job/metrics.csv")
  count=$((count + 1))
  fidelity_row "$deepcee" "$cluster" "$work/$plan.json" "$work/measured-profile.toml" "$measured" 0.15 &&
    within=$((within + 1))
done
echo "plans within 15%: $within of $count; load average at the end: $(load)"

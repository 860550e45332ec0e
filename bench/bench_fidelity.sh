#!/usr/bin/env bash
# Fidelity of the simulator against real runs. CPU devices run as several node processes
# on loopback, in wall time. Links are shaped as configs/clusters/cpu-loopback.toml says.
# The nodes share this host's steady clock, so each receiver holds a message until its
# modelled arrival. The real transfer thus happens inside the modelled time.
# This node is profiled first (deepcee profile). Each plan then runs as a multi-process job
# (tools/run_local_cluster.sh) and is simulated from that profile. The table gives the
# simulator's step time beside the median measured wall step. The first step is left out,
# since it warms the caches and the connections. The table also gives the error
# (simulated / measured - 1) and how many plans are within 10%. It gives the load average
# before and after, since other users' work moves both sides.
#   bench/bench_fidelity.sh [DEEPCEE] [STEPS] [THREADS]
set -eu
source "$(dirname "$0")/fidelity_row.sh"
here=$(cd "$(dirname "$0")/.." && pwd)
deepcee=${1:-$here/build/tools/deepcee}
steps=${2:-12}
threads=${3:-1}
cluster=$here/configs/clusters/cpu-loopback.toml
work=$(mktemp -d)
[[ -n ${KEEP:-} ]] && echo "work directory: $work" || trap 'rm -rf "$work"' EXIT

"$deepcee" profile --model small --micro-batches 1,2,4,8 --threads "$threads" --no-gpu \
  --out "$work/profile.toml" >/dev/null 2>"$work/profile.log" ||
  { cat "$work/profile.log"; exit 1; }

# A plan: NAME SCHEDULE MICRO_BATCH MICRO_BATCHES and its stages as
# "devices:samples:first:last:compression" (devices and samples joined by '+').
write_plan() {
  local name=$1
  shift
  python3 "$(dirname "$0")/write_plan.py" "$work/$name.json" "$@"
}

write_job() {  # NAME
  cat >"$work/$1.toml" <<TOML
name = "fidelity-$1"
time = "wall"
shape_links = true
adapt = false
cluster = "$cluster"
plan = "$work/$1.json"
model = "small"
coordinator = "n0"
connect_timeout = 20
[[node]]
name = "n0"
host = "127.0.0.1"
port = 29410
[[node]]
name = "n1"
host = "127.0.0.1"
port = 29411
[[node]]
name = "n2"
host = "127.0.0.1"
port = 29412
[train]
seed = 1
steps = $steps
threads = $threads
out = "$work/runs-$1"
eval_every = 0
TOML
}

# Two node processes (the build machine has two cores; a third would share one): two
# stages under 1F1B (4 micro-batches of 2), GPipe (8 of 1) and ZB-H1 with int8 transfers
# (4 of 2), and the two devices as one data-parallel stage (the all-reduce on the link).
write_plan pipe2-1f1b 1f1b 2 4 "0:2:0:3:none" "1:2:3:6:none"
write_plan pipe2-gpipe gpipe 1 8 "0:1:0:3:none" "1:1:3:6:none"
write_plan pipe2-zbh1-int8 zb-h1 2 4 "0:2:0:3:int8" "1:2:3:6:none"
write_plan dp2 1f1b 4 2 "0+1:2+2:0:6:none"
plans=${PLANS:-pipe2-1f1b pipe2-gpipe pipe2-zbh1-int8 dp2}

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "load average at the start: $(load) (1, 5, 15 min; this machine has $(nproc) cores)"
printf '%-18s %14s %14s %9s\n' plan "simulated" "measured" "error"
within=0 count=0
for plan in $plans; do
  write_job "$plan"
  "$here/tools/run_local_cluster.sh" "$deepcee" "$work/$plan.toml" "$work/logs-$plan" \
    >"$work/$plan.log" 2>&1 || { cat "$work/$plan.log" "$work/logs-$plan"/*.log; exit 1; }
  metrics=$(ls "$work/runs-$plan"/*/metrics.csv | head -n 1)
  measured=$(awk -F, 'NR == 1 {for (i = 1; i <= NF; ++i) if ($i == "step_s") c = i; next}
                      NR > 2 {print $c}' "$metrics" | sort -g |
             awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
  count=$((count + 1))
  fidelity_row "$deepcee" "$cluster" "$work/$plan.json" "$work/profile.toml" "$measured" 0.1 &&
    within=$((within + 1))
done
echo "within 10%: $within of $count plans; load average at the end: $(load)"

#!/usr/bin/env bash
# The robustness experiments on a real network, as root:
#   configs/experiments/lab.sh NAME|all [OUT_DIR] [path/to/deepcee]
# NAME is drop, square, slow or noise (the script lab-NAME.toml here). Each brings up the lab
# of configs/lab/three-nodes-cluster.toml (three nodes, each behind a 20 Mbps interface the
# kernel shapes; prefix dcexp), and runs the small model in three stages, one per node
# (configs/lab/three-nodes-plan.json), in wall time, twice in that lab with the script applied
# by `deepcee lab run`: `adapt = false` (static), then `adapt = true` (adaptive). The job is
# not told of the events. `deepcee simulate --adaptive` gives the simulator's prediction of
# both, per step, on the same script. Writes OUT_DIR/lab-NAME.csv (run, step, start_s, end_s,
# samples_per_s; the runs static, adaptive, simulated-static, simulated-adaptive), the events
# as the lab applied them in the adaptive run (OUT_DIR/lab-NAME.events: the step each landed
# in and what it did), OUT_DIR/lab-NAME.png (the curves, the events marked) and
# OUT_DIR/lab-NAME.summary (medians before, during and after; the adaptive run's decisions;
# the losses' largest difference). The lab is removed however the script ends.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lab="$(cd "$here/../lab" && pwd)"
name="${1:?usage: lab.sh drop|square|slow|noise|all [OUT_DIR] [deepcee]}"
out="$(mkdir -p "${2:-experiments-out}" && cd "${2:-experiments-out}" && pwd)"
deepcee="$(realpath "${3:-$here/../../build/tools/deepcee}")"
prefix=dcexp

if [[ "$name" == all ]]; then
  for n in drop square slow noise; do "$0" "$n" "$out" "$deepcee"; done
  exit 0
fi
script="$here/lab-$name.toml"
[[ -f "$script" ]] || { echo "lab.sh: no experiment '$name' ($script)" >&2; exit 2; }
# Runs long enough for 5 steps after the last event (noise: two windows of 50 steps).
case "$name" in square) steps=60 ;; noise) steps=100 ;; *) steps=50 ;; esac
base="$out/lab-$name"
rm -rf "$base"
mkdir -p "$base"

trap '"$deepcee" lab down --prefix $prefix --state-dir "$base" >/dev/null' EXIT
"$deepcee" lab up "$lab/three-nodes-cluster.toml" --prefix $prefix --state-dir "$base" \
  >"$base/lab-up.txt" || { cat "$base/lab-up.txt" >&2; exit 1; }
echo "lab-$name: load average at the start $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$base/load.txt"
for mode in static adaptive; do
  adapt=$([[ $mode == adaptive ]] && echo true || echo false)
  cat >"$base/$mode.toml" <<JOB
name = "lab-$name"
time = "wall"
adapt = $adapt
cluster = "$lab/three-nodes-cluster.toml"
plan = "$lab/three-nodes-plan.json"
connect_timeout = 60
heartbeat_timeout = 30
[[node]]
name = "n0"
port = 29310
[[node]]
name = "n1"
port = 29311
[[node]]
name = "n2"
port = 29312
[train]
seed = 1
steps = $steps
batch = 32
out = "$base"
[train.data]
path = "/usr/share/games/fortunes"
val_fraction = 0.05
[inject]
script = "$script"
JOB
  "$deepcee" lab run "$base/$mode.toml" --prefix $prefix --state-dir "$base" --out "$base/$mode" \
    >"$base/$mode.out" 2>&1 ||
    { echo "lab.sh: $mode run failed: $(tail -1 "$base/$mode.out") (see $base/$mode)" >&2; exit 1; }
done
echo "lab-$name: load average at the end $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$base/load.txt"
"$deepcee" simulate --cluster "$lab/three-nodes-cluster.toml" --plan "$lab/three-nodes-plan.json" \
  --timeline "$script" --steps "$steps" --adaptive >"$base/simulate.txt"
python3 "$here/lab_tables.py" "$base" "$name" >"$base.summary"
cat "$base.summary"

# Each event at the step it landed in (steps done when the lab applied it, plus one).
arrows=$(cut -f1 "$base.events" | sort -un |
  while read -r t; do echo "set arrow from $t, graph 0 to $t, graph 1 nohead dt 2 lc rgb 'gray40'"; done)
gnuplot <<GP
set terminal pngcairo size 900,450 font ",10"
set output "$base.png"
set datafile separator ","
set key bottom right
set xlabel "step"
set ylabel "samples/s (wall time, 3 node processes)"
set title "lab-$name: deepcee lab run, static vs adaptive, and the simulator on the same script"
set logscale y
$arrows
plot "< grep ^static, $base.csv" using 2:5 with steps lw 2 title "static (lab)", \
     "< grep ^adaptive, $base.csv" using 2:5 with steps lw 2 title "adaptive (lab)", \
     "< grep ^simulated-static, $base.csv" using 2:5 with steps dt 3 lc rgb 'gray60' title "static (simulator)", \
     "< grep ^simulated-adaptive, $base.csv" using 2:5 with steps dt 2 lc rgb 'gray30' title "adaptive (simulator)"
GP
echo "lab-$name: $base.csv, $base.png, $base.summary"

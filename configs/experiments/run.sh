#!/usr/bin/env bash
# Runs one robustness experiment of issue 12 static and adaptive:
#   configs/experiments/run.sh NAME [OUT_DIR] [path/to/deepcee]
# NAME is drop, square, walk, slow, latency or noise; each has a script for the DeepCEE
# testbed (testbed-NAME.toml, GPT-2 124M, global batch 512, the planner's plan) and one for
# the default job's cluster (default-NAME.toml, cee-small, the `small` model, batch 32, the
# saved hybrid plan, which crosses the WAN; the default job's own plan stays in the cloud).
# Static and adaptive come from `deepcee simulate --timeline T --adaptive`, which predicts
# the runtime in virtual and dry time per step (the runtime follows it within 2%:
# tests/actors/job/test_injected_virtual_time.cpp) until the runtime applies the adapter's
# decisions. Writes OUT_DIR/NAME-{testbed,default}.csv (step, static and adaptive samples/s,
# the injected event) and .png (both curves, the events marked).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
name="${1:?usage: run.sh NAME [OUT_DIR] [deepcee]}"
out="${2:-experiments-out}"
deepcee="${3:-$here/../../build/tools/deepcee}"
steps=50
mkdir -p "$out"

one() { # $1 target, $2 cluster, $3 plan file
  local target="$1" cluster="$here/../clusters/$2.toml" plan="$3"
  local script="$here/$target-$name.toml" csv="$out/$name-$target.csv"
  [[ -f "$script" ]] || { echo "run.sh: no experiment '$name' ($script)" >&2; exit 2; }
  "$deepcee" simulate --cluster "$cluster" --plan "$plan" --timeline "$script" \
    --steps "$steps" --adaptive > "$out/$name-$target.txt"
  # Events by step (the script's `step = N`), one label per step.
  awk '/^\[\[/ {kind=$0} /^step *=/ {s=$3} /^(between|of|device|node) *=/ {w=$0}
       /^(bandwidth|latency|jitter|slowdown|action|bandwidth_scale|latency_scale) *=/ {
         gsub(/"/, "", $0); if (s in e) e[s] = e[s] "; "; e[s] = e[s] w " " $0 }
       END {for (k in e) print k "\t" e[k]}' "$script" | sort -n > "$out/$name-$target.events"
  # The adaptive table: step (from 0), time, step time, adaptive s/s, static s/s, decision.
  awk -v events="$out/$name-$target.events" 'BEGIN {
         while ((getline l < events) > 0) { split(l, f, "\t"); ev[f[1]] = f[2] }
         print "step,static_samples_per_s,adaptive_samples_per_s,event" }
       /^ *[0-9]+ / && NF >= 5 && started {
         # step, time and step time (a number and a unit each), adaptive s/s, static s/s
         s = $1 + 1; e = (s in ev) ? ev[s] : ""
         gsub(/,/, ";", e); gsub(/"/, "", e)
         printf "%d,%s,%s,%s\n", s, $7, $6, e }
       /^ step +time/ {started = 1}' "$out/$name-$target.txt" > "$csv"
  local title="$name on $target ($(tail -1 "$out/$name-$target.txt"))"
  gnuplot <<GP
set terminal pngcairo size 900,450 font ",10"
set output "$out/$name-$target.png"
set datafile separator ","
set key top right
set xlabel "step"
set ylabel "samples/s"
set title "${title//_/\\\\_}"
set logscale y
$(cut -f1 "$out/$name-$target.events" | while read -r s; do echo "set arrow from $s, graph 0 to $s, graph 1 nohead dt 2 lc rgb 'gray40'"; done)
plot "$csv" using 1:2 with linespoints pt 7 ps 0.5 title "static", \
     "$csv" using 1:3 with linespoints pt 5 ps 0.5 title "adaptive"
GP
  echo "$csv $out/$name-$target.png: $(tail -2 "$out/$name-$target.txt" | tr '\n' ' ')"
}

plans="$out/plans"
mkdir -p "$plans"
[[ -f "$plans/testbed.json" ]] ||
  "$deepcee" plan --cluster "$here/../clusters/deepcee-testbed.toml" --model gpt2-124m \
    --batch 512 --json "$plans/testbed.json" > /dev/null
one testbed deepcee-testbed "$plans/testbed.json"
one default cee-small "$here/../plans/cee-small-hybrid.json"

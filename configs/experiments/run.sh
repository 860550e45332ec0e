#!/usr/bin/env bash
# Runs the robustness experiments of issue 12 on the runtime, static and adaptive:
#   configs/experiments/run.sh NAME|all [OUT_DIR] [path/to/deepcee]
# NAME is drop, square, walk, slow, latency or noise. Each runs on three targets, with the
# script TARGET-NAME.toml:
#   testbed  the DeepCEE testbed (clusters/deepcee-testbed.toml), GPT-2 124M, global batch
#            512, the planner's plan;
#   default  the default job's cluster, model, batch and plan, read from configs/default.toml
#            (plan "auto": the planner's);
#   hybrid   cee-small with the saved hybrid plan (plans/cee-small-hybrid.json), which crosses
#            the cloud-edge WAN, the small model, batch 32.
# Each experiment is two `deepcee run`s of a job in dry time (virtual time without the math)
# with the script under [inject]: `adapt = false` (static) and `adapt = true` (adaptive);
# their metrics give samples/s per step. `deepcee simulate --adaptive` adds its prediction
# of the adaptive run (re-plans allowed, which the running job does not do yet). Writes
# OUT_DIR/NAME-TARGET.csv (run, step, start, end, samples/s) and .png (the curves per
# step, the events marked), and prints one line per target: mean samples/s during the
# disturbance (from 2 steps after its first event to its last) and after it (from 5 steps
# after), and, for a script with a `# disturbed:` line, the reference: the planner's plan for
# the disturbed cluster, simulated. A script's `step = N` happens when each run starts its
# own step N (however fast the steps before went), so the runs compare step by step.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
configs="$(cd "$here/.." && pwd)"
name="${1:?usage: run.sh NAME|all [OUT_DIR] [deepcee]}"
out="$(mkdir -p "${2:-experiments-out}" && cd "${2:-experiments-out}" && pwd)"
deepcee="${3:-$here/../../build/tools/deepcee}"
steps=50

if [[ "$name" == all ]]; then
  for n in drop square walk slow latency noise; do "$0" "$n" "$out" "$deepcee"; done
  exit 0
fi

# A top-level key of configs/default.toml (`key = "value"` or a number), or of its [train].
default_key() { # $1 key, $2 table ("" for the top level)
  awk -v key="$1" -v want="$2" '
    /^\[/ { table = $0; gsub(/[][ ]/, "", table); next }
    table == want && $1 == key { v = $0; sub(/^[^=]*= */, "", v); sub(/ *#.*/, "", v);
                                 gsub(/"/, "", v); print v; exit }' "$configs/default.toml"
}

# The plan file of a target: a saved one, or the planner's (kept in OUT_DIR/plans).
plan_of() { # $1 target, $2 cluster file, $3 model, $4 batch, $5 plan ("auto" or a file)
  if [[ "$5" != auto ]]; then
    [[ "$5" == /* ]] && echo "$5" || echo "$configs/$5"
    return
  fi
  local file="$out/plans/$1.json"
  mkdir -p "$out/plans"
  [[ -f "$file" ]] || "$deepcee" plan --cluster "$2" --model "$3" --batch "$4" --json "$file" > /dev/null
  echo "$file"
}

# One `deepcee run` in dry time; prints the metrics file.
run_job() { # $1 dir, $2 adapt, $3 cluster, $4 plan, $5 model, $6 batch, $7 script, $8 steps
  mkdir -p "$1"
  cat > "$1/job.toml" <<JOB
name = "experiment"
time = "dry"
adapt = $2
cluster = "$3"
plan = "$4"
model = "$5"
[inject]
script = "$7"
[train]
steps = $8
batch = $6
out = "$1"
JOB
  "$deepcee" run "$1/job.toml" --out "$1/run" --inspect off --metrics csv > "$1/run.txt" 2>&1 ||
    { echo "run.sh: deepcee run failed, see $1/run.txt" >&2; tail -3 "$1/run.txt" >&2; exit 1; }
  echo "$1/run/metrics.csv"
}

one() { # $1 target, $2 cluster file, $3 model, $4 batch, $5 plan ("auto" or a file)
  local target="$1" cluster="$2" model="$3" batch="$4"
  local script="$here/$target-$name.toml" base="$out/$name-$target"
  [[ -f "$script" ]] || { echo "run.sh: no experiment '$name' ($script)" >&2; exit 2; }
  local plan
  plan="$(plan_of "$target" "$cluster" "$model" "$batch" "$5")"
  # The static run and the adaptive one, the same steps; the disturbance at the same steps.
  local fixed adaptive
  fixed="$(run_job "$base/static" false "$cluster" "$plan" "$model" "$batch" "$script" "$steps")"
  adaptive="$(run_job "$base/adaptive" true "$cluster" "$plan" "$model" "$batch" "$script" \
    "$steps")"
  "$deepcee" simulate --cluster "$cluster" --plan "$plan" --timeline "$script" \
    --steps "$steps" --adaptive > "$base/simulate.txt"
  # Events at their steps (the static run's events.csv).
  awk -F, 'NR > 1 {e = $0; sub(/^[^,]*,[^,]*,/, "", e); gsub(/,/, ";", e);
                   if ($1 in ev) ev[$1] = ev[$1] "; " e; else { ev[$1] = e; order[++n] = $1 } }
           END {for (k = 1; k <= n; ++k) print order[k] "\t" ev[order[k]]}' \
    "$base/static/run/events.csv" > "$base.events"
  # One row per step of each run: run, step, its start and end (virtual s), samples/s. The
  # simulator's prediction of the adaptive run (re-plans allowed) is the third run.
  {
    echo "run,step,start_s,end_s,samples_per_s"
    for r in static adaptive; do
      awk -F, -v run="$r" '$1 ~ /^[0-9]+$/ {
               printf "%s,%d,%.6f,%.6f,%.4f\n", run, $1, $6 - $5, $6, $7 }' \
        "$base/$r/run/metrics.csv"
    done
    awk 'function sec(v, u) { return u == "s" ? v : u == "ms" ? v / 1e3 : u == "us" ? v / 1e6 : v / 1e9 }
         /^ step +time/ {started = 1; next}
         started && $1 ~ /^[0-9]+$/ && NF >= 7 {
           start = sec($2, $3); dur = sec($4, $5)
           printf "simulated,%d,%.6f,%.6f,%s\n", $1 + 1, start, start + dur, $6 }' "$base/simulate.txt"
  } > "$base.csv"
  # Means during the disturbance (from 2 steps after its first event to the step before its
  # last) and after it (from 5 steps after the last event).
  local first last
  first="$(head -1 "$base.events" | cut -f1)"
  last="$(tail -1 "$base.events" | cut -f1)"
  [[ "$first" == "$last" ]] && last=$((steps + 1))
  local summary
  summary="$(awk -F, -v s0="$first" -v s1="$last" '
    NR == 1 { next }
    $2 >= s0 + 2 && $2 < s1 { d[$1] += $5; dn[$1]++ }
    $2 >= s1 + 5 { a[$1] += $5; an[$1]++ }
    END { if (dn["static"] && dn["adaptive"])
            printf "during: static %.1f, adaptive %.1f samples/s (%.2fx), simulated adaptive %.1f",
                   d["static"] / dn["static"], d["adaptive"] / dn["adaptive"],
                   d["adaptive"] / dn["adaptive"] / (d["static"] / dn["static"]),
                   dn["simulated"] ? d["simulated"] / dn["simulated"] : 0
          if (an["static"] && an["adaptive"])
            printf "; after: static %.1f, adaptive %.1f", a["static"] / an["static"],
                   a["adaptive"] / an["adaptive"] }' "$base.csv")"
  local undisturbed
  undisturbed="$(awk -F, 'NR == 2 {printf "%.1f", $5}' "$base.csv")"
  summary="undisturbed $undisturbed; $summary"
  local disturbed
  disturbed="$(sed -n 's/^# disturbed: //p' "$script")"
  if [[ -n "$disturbed" ]]; then
    cp "$cluster" "$base/disturbed-cluster.toml"
    printf '\n[[link]]\n%s\n' "${disturbed//; /$'\n'}" >> "$base/disturbed-cluster.toml"
    local reference
    reference="$("$deepcee" plan --cluster "$base/disturbed-cluster.toml" --model "$model" \
      --batch "$batch" | sed -n 's/^simulated: \([0-9.]*\) samples.*/\1/p')"
    summary="$summary; reference (the planner's plan for the disturbed cluster) $reference"
  fi
  echo "$summary" > "$base.summary"
  gnuplot <<GP
set terminal pngcairo size 900,450 font ",10"
set output "$base.png"
set datafile separator ","
set key bottom right
set xlabel "step"
set ylabel "samples/s (emulated, dry time)"
set title "${name} on ${target}: deepcee run, static vs adaptive"
set logscale y
$(cut -f1 "$base.events" | while read -r t; do echo "set arrow from $t, graph 0 to $t, graph 1 nohead dt 2 lc rgb 'gray40'"; done)
plot "< grep ^static, $base.csv" using 2:5 with steps lw 2 title "static (runtime)", \
     "< grep ^adaptive, $base.csv" using 2:5 with steps lw 2 title "adaptive (runtime)", \
     "< grep ^simulated, $base.csv" using 2:5 with steps dt 3 lc rgb 'gray50' title "adaptive (simulator, re-plans allowed)"
GP
  echo "$name $target: $summary ($base.csv, $base.png)"
}

one testbed "$configs/clusters/deepcee-testbed.toml" gpt2-124m 512 auto
default_cluster="$(default_key cluster "")"
default_plan="$(default_key plan "")"
one default "$configs/$default_cluster" "$(default_key model "")" "$(default_key batch train)" \
  "${default_plan:-auto}"
one hybrid "$configs/clusters/cee-small.toml" small 32 plans/cee-small-hybrid.json

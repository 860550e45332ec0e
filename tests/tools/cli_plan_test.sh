#!/usr/bin/env bash
# End-to-end checks of `deepcee plan` and `deepcee simulate`: a plan is written and
# re-evaluated (under a link timeline, with a trace), and every kind of bad cluster or
# plan gives one line naming the file (and line), exit code 2.
#   cli_plan_test.sh PATH/TO/deepcee PATH/TO/configs
set -u
deepcee=$1
configs=$2
cluster=$configs/clusters/cee-small.toml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/test_lib.sh"

for sub in plan simulate; do
  "$deepcee" $sub --help >/dev/null || fail "deepcee $sub --help"
done

# A plan, its JSON and trace; then the saved plan re-simulated, slower on a slower link.
out=$("$deepcee" plan --cluster "$cluster" --model small --batch 64 --json "$work/plan.json" --trace "$work/plan-trace.json") || fail "plan"
for strategy in dp gpipe megatron metis deepcee; do
  grep -q "^$strategy " <<<"$out" || fail "plan table has no row for $strategy"
done
grep -q '"format": *"deepcee-plan"' "$work/plan.json" || fail "plan JSON format"
grep -q '"traceEvents"' "$work/plan-trace.json" || fail "plan trace"
base=$("$deepcee" simulate --cluster "$cluster" --plan "$work/plan.json" | sed -n 's/^simulated: \([0-9.]*\) samples\/s.*/\1/p')
[[ -n $base ]] || fail "simulate printed no throughput"
cat >"$work/slow.toml" <<'TOML'
[[change]]
at = 0
between = ["cloud0", "cloud0"]
bandwidth = "1Mbps"
latency = "100ms"
TOML
slow=$("$deepcee" simulate --cluster "$cluster" --plan "$work/plan.json" --timeline "$work/slow.toml" --trace "$work/sim-trace.json" | sed -n 's/^simulated: \([0-9.]*\) samples\/s.*/\1/p')
[[ -n $slow ]] || fail "simulate with a timeline printed no throughput"
awk -v a="$slow" -v b="$base" 'BEGIN { exit !(a < b) }' || fail "a slower link did not slow the plan ($slow vs $base samples/s)"
grep -q '"traceEvents"' "$work/sim-trace.json" || fail "simulate trace"
# --steps 3 --trace: every simulated step is in the trace (each device's optimizer three
# times, each at a later step), and the example timeline and profile in configs/ load.
"$deepcee" simulate --cluster "$cluster" --plan "$work/plan.json" --steps 3 --trace "$work/sim3.json" \
  --timeline "$configs/timelines/cee-small-wan-drop.toml" --profile "$configs/profiles/gpt2-124m-measured.toml" \
  >"$work/sim3.log" 2>&1 && fail "a gpt2-124m profile should not apply to the plan's small model"
grep -q "gpt2-124m-measured.toml:[0-9]*:" "$work/sim3.log" || fail "profile of another model: $(cat "$work/sim3.log")"
"$deepcee" simulate --cluster "$cluster" --plan "$work/plan.json" --steps 3 --trace "$work/sim3.json" \
  --timeline "$configs/timelines/cee-small-wan-drop.toml" >"$work/sim3.log" 2>&1 || fail "simulate --steps 3: $(cat "$work/sim3.log")"
python3 - "$work/sim3.json" "$work/plan.json" <<'PY' || fail "simulate --steps 3 trace"
import json, sys
trace = json.load(open(sys.argv[1]))["traceEvents"]
plan = json.load(open(sys.argv[2]))
used = {d for p in plan["pipelines"] for s in p["stages"] for d in s["devices"]}
opt = {}
for e in trace:
    if e["ph"] == "X" and e["name"] == "optimizer":
        opt.setdefault(e["tid"], []).append(e["ts"])
assert set(opt) == used, (sorted(opt), sorted(used))
assert all(len(ts) == 3 and ts == sorted(set(ts)) for ts in opt.values()), opt
print(f"simulate --steps 3 trace: 3 optimizer steps on each of {len(used)} devices")
PY

# The adaptive simulation over the repository's drop-and-recovery timeline: a decision
# answers the drop, and the adaptive run beats the static one.
out=$("$deepcee" simulate --cluster "$configs/clusters/four-pipes.toml" --plan "$configs/plans/four-pipes.json" \
  --timeline "$configs/timelines/four-pipes-drop.toml" --steps 60 --adaptive) || fail "simulate --adaptive"
# The drop hits the first step whose static throughput falls; that very step decides.
hit=$(awk '$1 ~ /^[0-9]+$/ && NF >= 7 { if (first == "") first = $7; else if ($7 + 0 < first + 0) { print $1; exit } }' <<<"$out")
[[ -n $hit ]] || fail "the drop never slowed the static run"
grep -Eq "^ +$hit .*(rebalance|compression|replan).*predicted step" <<<"$out" ||
  fail "no decision at step $hit, which the drop hits"
speedup=$(sed -n 's/^adaptive: .*(\([0-9.]*\)x static)$/\1/p' <<<"$out")
awk -v s="$speedup" 'BEGIN { exit !(s > 1.1) }' || fail "adaptive not faster than static ($speedup)"

# Bad input.
sed 's/kind = "T4"/kind = "T5"/' "$cluster" >"$work/kind.toml"
(cat "$cluster"; printf '\n[[link]]\nbetween = ["cloud0", "nowhere"]\nbandwidth = "1Gbps"\n') >"$work/link.toml"
sed 's/cross_region = { bandwidth = "100Mbps"/cross_region = { bandwidth = "0Mbps"/' "$cluster" >"$work/zero.toml"
printf 'name = "tiny"\n[[region]]\nname = "r"\ntier = "edge"\n[[node]]\nname = "n0"\nregion = "r"\ndevices = [{ kind = "T4" }]\n' >"$work/tiny.toml"
echo '{"format": "deepcee-plan"' >"$work/truncated.json"
expect_error "unknown device kind" "kind\.toml:[0-9]+:.*T5" -- plan --cluster "$work/kind.toml" --model small
expect_error "link to an unknown device" "link\.toml:[0-9]+:.*nowhere" -- plan --cluster "$work/link.toml" --model small
expect_error "zero bandwidth" "zero\.toml:[0-9]+:.*bandwidth" -- plan --cluster "$work/zero.toml" --model small
expect_error "model too large" "tiny\.toml:.*needs .* GB.* has? .* GB|tiny\.toml:.*needs" -- plan --cluster "$work/tiny.toml" --model gpt2-1.5b
expect_error "batch of zero" "batch" -- plan --cluster "$cluster" --model small --batch 0
expect_error "batch of INT_MAX" "batch 2147483647: the global batch must be in 1\.\." -- plan --cluster "$cluster" --model small --batch 2147483647
expect_error "negative search time" "--search-s -1: the search's time limit must be positive" -- plan --cluster "$cluster" --model small --search-s -1
"$deepcee" plan --cluster "$cluster" --model small --batch 64 --search-s 2 | grep -q "^deepcee " || fail "plan --search-s 2"
sed 's/^devices = \(.*\)/replicas = 100000\ndevices = \1/' "$work/tiny.toml" >"$work/replicas.toml"
expect_error "100000 replicas" "replicas\.toml:8: node 'n0' brings the cluster to more than" -- plan --cluster "$work/replicas.toml" --model small
mkfifo "$work/fifo.toml"
expect_error "FIFO as cluster" "fifo\.toml: cluster file is a FIFO" -- plan --cluster "$work/fifo.toml" --model small
expect_error "unknown model" "nosuch" -- plan --cluster "$cluster" --model nosuch
expect_error "missing plan" "nothing\.json" -- simulate --cluster "$cluster" --plan "$work/nothing.json"
expect_error "truncated plan" "truncated\.json" -- simulate --cluster "$cluster" --plan "$work/truncated.json"
# Eight 16 GB cards hold the 7b model's state between them but no plan fits its activations.
cat >"$work/t4x8.toml" <<'TOML'
[[region]]
name = "r"
tier = "cloud"
[[node]]
name = "n"
region = "r"
devices = [{ kind = "T4", count = 8 }]
TOML
expect_error "no plan fits memory" "t4x8\.toml: model 7b fits no plan in memory: the smallest per-device need found is .* GB on n/[0-9]+ .*; the largest device, n/0, has .* GB usable" -- plan --cluster "$work/t4x8.toml" --model 7b --batch 16

if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "all plan/simulate CLI checks passed"

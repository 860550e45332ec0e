#!/usr/bin/env bash
# End-to-end checks of `deepcee run`'s checkpoints and metrics: it writes the checkpoint
# `deepcee train` writes (eval and train --resume read it), resuming continues the same
# losses bit for bit, a train checkpoint resumes in run, and a checkpoint of another model
# is one line naming the file, exit 2, no run directory. Dry mode writes no checkpoint and
# refuses --resume. Ctrl-C saves the checkpoint and exits 130; resuming a plan with shared
# WAN pipes continues bit for bit.
#   cli_run_test.sh PATH/TO/deepcee CONFIGS_DIR
set -u
deepcee=$1
configs=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/test_lib.sh"

write_corpus "$work/data"
# The local cluster's job (two pipelines of 3 and 2 stages) in one process.
cat >"$work/job.toml" <<TOML
name = "cli-run-test"
time = "virtual"
cluster = "$configs/local-cluster/cluster.toml"
plan = "$configs/local-cluster/plan.json"
[train]
seed = 7
steps = 6
batch = 12
checkpoint_every = 2
eval_every = 0
eval_batches = 2
[train.model]
n_layer = 2
d_model = 32
n_head = 2
context = 16
[train.data]
path = "$work/data"
TOML
cat >"$work/train.toml" <<TOML
seed = 7
steps = 4
batch = 12
threads = 1
[model]
n_layer = 2
d_model = 32
n_head = 2
context = 16
[data]
path = "$work/data"
TOML

run() { "$deepcee" run "$work/job.toml" "$@"; }

# 6 steps straight; 4 steps (a checkpoint every 2) then 2 more from its checkpoint.
run --out "$work/straight" >"$work/straight.log" 2>&1 || fail "run: $(tail -3 "$work/straight.log")"
run --steps 4 --metrics jsonl --out "$work/first" >"$work/first.log" 2>&1 || fail "run --steps 4: $(tail -3 "$work/first.log")"
[[ -f $work/first/checkpoint.safetensors && -f $work/first/metrics.jsonl && -f $work/first/eval.jsonl ]] ||
  fail "run should write checkpoint.safetensors, metrics.jsonl, eval.jsonl: $(ls "$work/first")"
ls "$work/first" | grep -q '\.tmp' && fail "a temporary file was left behind"
head -1 "$work/first/metrics.jsonl" | grep -q '^{"step":1,"loss":' || fail "metrics.jsonl format"
run --resume "$work/first/checkpoint.safetensors" --out "$work/resumed" >"$work/resumed.log" 2>&1 || fail "run --resume: $(tail -3 "$work/resumed.log")"
python3 - "$work/straight/metrics.csv" "$work/first/metrics.jsonl" "$work/resumed/metrics.csv" <<'PY' || fail "resumed losses differ"
import csv, json, sys
straight = [(int(r["step"]), r["loss"]) for r in csv.DictReader(open(sys.argv[1]))]
first = [json.loads(l) for l in open(sys.argv[2])]
resumed = [(int(r["step"]), r["loss"]) for r in csv.DictReader(open(sys.argv[3]))]
# Shortest round-trip text on both sides: equal strings are equal doubles.
assert [s for s, _ in resumed] == [5, 6], resumed
assert resumed == straight[4:], (resumed, straight[4:])
assert [repr(float(r["loss"])) for r in first] == [repr(float(l)) for _, l in straight[:4]]
print("resume: steps 5-6 bit-identical to the uninterrupted run")
PY

# deepcee eval of run's checkpoint gives the validation loss run printed for its weights.
want=$(grep -o 'validation loss [0-9.]*' "$work/first.log" | tail -1)
got=$("$deepcee" eval --checkpoint "$work/first/checkpoint.safetensors" --data "$work/data" --batch 12 --batches 2 | grep -o 'validation loss [0-9.]*')
[[ -n $want && $got == "$want" ]] || fail "eval of run's checkpoint: '$got', run printed '$want'"
"$deepcee" eval --checkpoint "$work/first/checkpoint.safetensors" --data "$work/data" --batch 12 --batches 2 | grep -q 'step 4)' || fail "eval: checkpoint step"

# A train checkpoint resumes in run, and run's in train (same model).
"$deepcee" train --config "$work/train.toml" --steps 3 --out "$work/train" >"$work/train.log" 2>&1 || fail "train: $(tail -3 "$work/train.log")"
run --resume "$work/train/checkpoint.safetensors" --out "$work/from-train" >"$work/from-train.log" 2>&1 || fail "run --resume train's: $(tail -3 "$work/from-train.log")"
[[ $(sed -n 2p "$work/from-train/metrics.csv" | cut -d, -f1) == 4 ]] || fail "run resumed from train should start at step 4"
"$deepcee" train --config "$work/train.toml" --steps 6 --resume "$work/first/checkpoint.safetensors" --out "$work/to-train" >"$work/to-train.log" 2>&1 || fail "train --resume run's: $(tail -3 "$work/to-train.log")"
[[ $(sed -n 2p "$work/to-train/metrics.csv" | cut -d, -f1) == 5 ]] || fail "train resumed from run should start at step 5"

# A checkpoint of another model: one line naming the file, exit 2, no run directory.
sed 's/^d_model = 32/d_model = 64/' "$work/train.toml" >"$work/wide.toml"
"$deepcee" train --config "$work/wide.toml" --steps 1 --out "$work/wide" >/dev/null 2>&1 || fail "train wide"
err=$(run --resume "$work/wide/checkpoint.safetensors" --out "$work/bad" 2>&1 >/dev/null)
rc=$?
[[ $rc == 2 ]] || fail "another model: exit $rc ($err)"
[[ $(printf '%s\n' "$err" | wc -l) == 1 && $err =~ wide/checkpoint\.safetensors.*d_model ]] || fail "another model: '$err'"
[[ -e $work/bad ]] && fail "another model: left a run directory"
# [train] keys are reported at their own line of the job file; sizes beyond this machine
# are refused there before anything is written (issue 13).
sed 's/^n_layer = .*/n_layer = 1000000/' "$work/job.toml" >"$work/huge.toml"
line=$(grep -n '^n_layer' "$work/huge.toml" | cut -d: -f1)
err=$("$deepcee" run "$work/huge.toml" --out "$work/huge" 2>&1 >/dev/null)
rc=$?
[[ $rc == 2 && $(printf '%s\n' "$err" | wc -l) == 1 && $err =~ huge\.toml:$line:\ training\ a\ model\ of\ 1000000\ layers.*needs\ at\ least ]] || fail "huge model: exit $rc ($err)"
[[ -e $work/huge ]] && fail "huge model: left a run directory"

# A saved plan that does not fit its devices' memory is refused like a plan the planner
# would not print: one line naming the plan file and the device, exit 2, no run directory.
sed 's/{ kind = "Jetson-AGX-Orin", count = 1 }/{ kind = "Jetson-AGX-Orin", count = 1, memory = "64KiB" }/' \
  "$configs/local-cluster/cluster.toml" >"$work/tight-cluster.toml"
sed "s|^cluster = .*|cluster = \"$work/tight-cluster.toml\"|" "$work/job.toml" >"$work/tight.toml"
err=$("$deepcee" run "$work/tight.toml" --out "$work/tight" 2>&1 >/dev/null)
rc=$?
[[ $rc == 2 && $(printf '%s\n' "$err" | wc -l) == 1 && $err =~ plan\.json:\ the\ plan\ does\ not\ fit\ in\ memory:\ .*needs ]] || fail "plan beyond memory: exit $rc ($err)"
[[ -e $work/tight ]] && fail "plan beyond memory: left a run directory"

# Dry mode has no weights: the job runs with checkpoint_every set but writes no checkpoint
# and says so; --resume is refused in one line naming the job, exit 2, no run directory.
sed 's/^time = "virtual"/time = "dry"/' "$work/job.toml" >"$work/dry.toml"
"$deepcee" run "$work/dry.toml" --steps 2 --out "$work/dry" >"$work/dry.log" 2>&1 || fail "dry run: $(tail -3 "$work/dry.log")"
grep -q 'losses are not computed, no checkpoint' "$work/dry.log" || fail "dry run should say it writes no checkpoint"
[[ -f $work/dry/metrics.csv && ! -e $work/dry/checkpoint.safetensors ]] || fail "dry run files: $(ls "$work/dry")"
err=$("$deepcee" run "$work/dry.toml" --resume "$work/first/checkpoint.safetensors" --out "$work/dry-resumed" 2>&1 >/dev/null)
rc=$?
[[ $rc == 2 && $(printf '%s\n' "$err" | wc -l) == 1 && $err =~ dry.toml.*dry-mode ]] || fail "dry --resume: exit $rc ($err)"
[[ -e $work/dry-resumed ]] && fail "dry --resume: left a run directory"

# [inject] script: the events are logged, written to events.csv by the step they fall in and
# drawn in the trace; the slowed WAN makes its steps slower; a killed node leaves the job on
# the others; a bad script is one line naming its file and line, exit 2, no run directory.
cat >"$work/script.toml" <<TOML
[[change]]
step = 2
between = ["cloud", "edge"]
bandwidth_scale = 0.01
[[node]]
step = 4
node = "n1"
action = "kill"
TOML
{ cat "$work/dry.toml"; printf '[inject]\nscript = "script.toml"\n'; } >"$work/inject.toml"
"$deepcee" run "$work/inject.toml" --steps 3 --out "$work/inject" >"$work/inject.log" 2>&1 || fail "inject run: $(tail -3 "$work/inject.log")"
grep -q 'step 2: injected at .*: link cloud<->edge bandwidth x0.01' "$work/inject.log" || fail "inject run: no log line: $(tail -3 "$work/inject.log")"
[[ $(sed -n 2p "$work/inject/events.csv") =~ ^2,[0-9.e-]+,link\ cloud\<-\>edge\ bandwidth\ x0.01$ ]] || fail "events.csv: $(cat "$work/inject/events.csv")"
grep -q '"name":"inject: link cloud[^"]*","ph":"i"' "$work/inject/trace.json" || fail "trace.json has no injected instant"
slow=$(awk -F, 'NR > 1 {print $5}' "$work/inject/metrics.csv" | tr '\n' ' ')
awk -v s="$slow" 'BEGIN {split(s, t, " "); exit !(t[2] > 2 * t[1])}' || fail "the 100x slower WAN did not slow step 2: $slow"
# The kill falls at the start of step 4 as the static plan's simulation times it; a static
# run meets it there (an adaptive one may re-plan away from the slowed WAN and run its steps
# so much faster that 6 steps end before that time). Pipeline 1 holds every layer of n1's
# stage: the job goes on without n1 and ends its 6 steps.
sed '1a adapt = false' "$work/inject.toml" >"$work/inject-static.toml"
"$deepcee" run "$work/inject-static.toml" --steps 6 --out "$work/killed" >"$work/killed.log" 2>&1 || fail "kill: exit $? ($(tail -3 "$work/killed.log"))"
grep -q 'node n1 lost (killed at .* s by the script): the job goes on' "$work/killed.log" || fail "kill: no recovery line: $(grep -i lost "$work/killed.log")"
[[ $(($(wc -l <"$work/killed/metrics.csv") - 1)) == 6 ]] || fail "kill: not all 6 steps in metrics.csv"
printf '[[device]]\nat = 1\ndevice = "n9/0"\nslowdown = 2\n' >"$work/script.toml"
err=$("$deepcee" run "$work/inject.toml" --steps 2 --out "$work/bad-script" 2>&1 >/dev/null)
rc=$?
[[ $rc == 2 && $(printf '%s\n' "$err" | wc -l) == 1 && $err =~ script.toml:3:\ unknown\ device ]] || fail "bad script: exit $rc ($err)"
[[ -e $work/bad-script ]] && fail "bad script: left a run directory"

# The trace of the straight run: its first 3 steps (--trace-steps' default), each with its
# ops, transfers, all-reduce buckets and every device's optimizer step; links named by
# their endpoints as the cluster names its devices (or regions, for a shared WAN pipe).
python3 "$(dirname "$0")/check_trace.py" "$work/straight/trace.json" "$configs/local-cluster/cluster.toml" \
  "$work/straight/plan.json" 3 "run trace" || fail "run trace: $(tail -3 "$work/straight.log")"

# Ctrl-C (SIGINT): the run stops after its current step, writes its final checkpoint
# (eval reads it) and exits 130, leaving no temporary file.
timeout 60 "$deepcee" run "$work/job.toml" --steps 100000 --out "$work/ctrlc" >"$work/ctrlc.log" 2>&1 &
runner=$!
rows() { if [[ -f $1 ]]; then wc -l <"$1"; else echo 0; fi; }
for _ in $(seq 1 200); do (( $(rows "$work/ctrlc/metrics.csv") >= 4 )) && break; sleep 0.05; done
pkill -INT -P "$runner" # deepcee itself, under its timeout wrapper
wait "$runner"
rc=$?
[[ $rc == 130 ]] || fail "Ctrl-C: exit $rc: $(tail -3 "$work/ctrlc.log")"
k=$(tail -1 "$work/ctrlc/metrics.csv" | cut -d, -f1)
grep -q "^interrupted: .* to $k)" "$work/ctrlc.log" || fail "Ctrl-C: no 'interrupted' summary up to step $k: $(tail -12 "$work/ctrlc.log")"
"$deepcee" eval --checkpoint "$work/ctrlc/checkpoint.safetensors" --data "$work/data" --batch 12 --batches 1 | grep -q "step $k)" ||
  fail "Ctrl-C: the checkpoint does not evaluate as step $k"
ls "$work/ctrlc" | grep -q '\.tmp' && fail "Ctrl-C: a temporary file was left behind"
grep -q "validation loss nan" "$work/ctrlc.log" && fail "Ctrl-C: the summary shows a validation loss that never was"
grep -q "no validation yet" "$work/ctrlc.log" || fail "Ctrl-C: the summary should say there was no validation yet"
[[ $(cat "$work/ctrlc/eval.csv") == "step,val_loss,elapsed_s" ]] || fail "Ctrl-C: eval.csv should hold its header alone: $(cat "$work/ctrlc/eval.csv")"
head -1 "$work/ctrlc/metrics.csv" | grep -q '^step,loss,lr,grad_norm,step_s,time_s,samples_per_s,tokens_per_s,elapsed_s,clock$' || fail "run metrics.csv header"
echo "Ctrl-C: stopped after step $k with its checkpoint, exit 130"

# --resume with shared WAN pipes: the cee-small hybrid plan on the default cluster (two
# pipelines whose transfers share the WAN pipes, ordered by pipe actors in virtual time),
# with a tiny model of the plan's depth: 6 steps equal 3 steps plus 3 resumed from their
# checkpoint, bit for bit in losses and virtual step times.
python3 - "$configs/plans/cee-small-hybrid.json" "$work/hybrid-plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
plan["model_name"] = "custom"
plan["model"].update(d_model=32, n_head=2, context=16)
json.dump(plan, open(sys.argv[2], "w"), indent=1)
PY
cat >"$work/hybrid.toml" <<TOML
name = "cli-run-hybrid"
time = "virtual"
cluster = "$configs/clusters/cee-small.toml"
plan = "$work/hybrid-plan.json"
[train]
seed = 7
steps = 6
batch = 32
eval_every = 0
eval_batches = 1
[train.model]
n_layer = 4
d_model = 32
n_head = 2
context = 16
[train.data]
path = "$work/data"
TOML
hybrid() { "$deepcee" run "$work/hybrid.toml" "$@"; }
hybrid --out "$work/hybrid6" >"$work/hybrid6.log" 2>&1 || fail "hybrid run: $(tail -3 "$work/hybrid6.log")"
hybrid --steps 3 --out "$work/hybrid3" >"$work/hybrid3.log" 2>&1 || fail "hybrid run --steps 3: $(tail -3 "$work/hybrid3.log")"
hybrid --resume "$work/hybrid3/checkpoint.safetensors" --out "$work/hybrid3+3" >"$work/hybrid3+3.log" 2>&1 ||
  fail "hybrid run --resume: $(tail -3 "$work/hybrid3+3.log")"
# The checkpoint carries the virtual clock, so the resumed run's steps start where the
# uninterrupted run's did: losses, step times and virtual times equal bit for bit.
python3 - "$work"/hybrid6/metrics.csv "$work"/hybrid3/metrics.csv "$work"/hybrid3+3/metrics.csv <<'PY' || fail "hybrid resume differs"
import csv, sys
rows = lambda f: [(int(r["step"]), r["loss"], r["step_s"], r["time_s"]) for r in csv.DictReader(open(f))]
straight, first, resumed = (rows(f) for f in sys.argv[1:])
assert [r[0] for r in resumed] == [4, 5, 6], resumed
assert first == straight[:3], (first, straight[:3])
assert resumed == straight[3:], (resumed, straight[3:])
print(f"resume with shared pipes: steps 4-6 bit-identical (losses, step times "
      f"{straight[3][2]} s, virtual times)")
PY
# The pipes are there: the run's emulated throughput is the simulator's for this plan, which
# shares the WAN (the shared-pipe model of test_actors.virtual_time).
this_run=$(sed -n 's/^  this run (actors) *\([0-9.]*\)$/\1/p' "$work/hybrid6.log")
simulated=$(sed -n 's/^  simulator, this plan *\([0-9.]*\)$/\1/p' "$work/hybrid6.log")
[[ -n $this_run && $this_run == "$simulated" ]] || fail "hybrid: actors $this_run samples/s, simulator $simulated"

# The default job (configs/default.toml) in dry time, its own cluster and script: the
# planner's plan spans both sites; the link between the sites falls 10x when step 120
# starts and the adapter's re-plan reaches stdout as it happens (at the end of step 120, in
# force from 121); its probes see the link come back at step 240 and it restores the plan;
# the summary puts the static plan under the script beside this run, and the static
# figure is what the same job measures with its adapter off.
sed -e 's/^time = "virtual"/time = "dry"/' -e "s|^cluster = \"|cluster = \"$configs/|" \
  -e "s|^script = \"|script = \"$configs/|" "$configs/default.toml" >"$work/default.toml"
"$deepcee" run "$work/default.toml" --out "$work/default" >"$work/default.log" 2>/dev/null ||
  fail "default job: $(tail -3 "$work/default.log")"
grep -q '^    stage .* on 1 x Jetson-Nano \[edge' "$work/default.log" &&
  grep -q '^    stage .* on 1 x Raspberry-Pi-4 \[end' "$work/default.log" ||
  fail "default job: the plan should use both sites: $(grep '^    stage' "$work/default.log")"
python3 - "$work/default.log" <<'PY' || fail "default job: decisions or summary"
import re, sys
log = open(sys.argv[1]).read()
summary = log.index("\nsummary:")
def at(pattern):
    m = re.search(pattern, log)
    assert m, pattern
    return m
at(r"step 120: injected at [0-9.]+ s: link edge<->end bandwidth 10 Mbps")
at(r"step 240: injected at [0-9.]+ s: link edge<->end bandwidth 100 Mbps")
replan = at(r"adapter: step (\d+): replan \(link \d+->\d+ bandwidth x0\.10.* in force from step (\d+)")
restore = at(r"adapter: step (\d+): restore .* in force from step (\d+)")
assert replan.start() < restore.start() < summary
assert int(replan[1]) == 120 and int(replan[2]) == 121, replan[0]
assert 240 <= int(restore[1]) <= 243, restore[0]
num = lambda label: float(at(r"\n  " + re.escape(label) + r" +([0-9.]+)")[1])
this, static, adaptive = num("this run (actors)"), num("simulator, static"), num("simulator, adaptive")
assert this > 1.5 * static, (this, static)
assert abs(this - adaptive) < 0.03 * adaptive, (this, adaptive)
print(f"default job: {replan[0][:40]}...; {this} samples/s vs static {static}")
PY
sed 's/^time = "dry"/time = "dry"\nadapt = false/' "$work/default.toml" >"$work/default-static.toml"
"$deepcee" run "$work/default-static.toml" --out "$work/default-static" >"$work/default-static.log" 2>&1 ||
  fail "default job, adapter off: $(tail -3 "$work/default-static.log")"
measured=$(sed -n 's/^  this run (actors) *\([0-9.]*\)$/\1/p' "$work/default-static.log")
predicted=$(sed -n 's/^  simulator, static *\([0-9.]*\) .*$/\1/p' "$work/default.log")
[[ -n $measured && $measured == "$predicted" ]] ||
  fail "default job: static measured $measured samples/s, the summary's static $predicted"
grep -q 'adapter: step' "$work/default-static.log" && fail "default job, adapter off: it decided"

if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "all run checkpoint checks passed"

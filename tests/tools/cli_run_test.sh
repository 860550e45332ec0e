#!/usr/bin/env bash
# End-to-end checks of `deepcee run`'s checkpoints and metrics: it writes the checkpoint
# `deepcee train` writes (eval and train --resume read it), resuming continues the same
# losses bit for bit, a train checkpoint resumes in run, and a checkpoint of another model
# is one line naming the file, exit 2, no run directory. Dry mode writes no checkpoint and
# refuses --resume.
#   cli_run_test.sh PATH/TO/deepcee CONFIGS_DIR
set -u
deepcee=$1
configs=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

mkdir -p "$work/data"
for i in $(seq 1 400); do echo "line $i: pipeline stages send activations to the next node, gradients back"; done >"$work/data/a.txt"
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

if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "all run checkpoint checks passed"

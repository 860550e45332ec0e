#!/usr/bin/env bash
# End-to-end checks of `deepcee train` and `deepcee eval`: a short run writes its files,
# resume continues where it stopped, and every kind of bad input gives one line naming
# the file, exit code 2, and leaves no run directory behind.
#   cli_train_test.sh PATH/TO/deepcee
set -u
deepcee=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/test_lib.sh"

# A small corpus and a tiny model, so the run takes seconds.
mkdir -p "$work/data"
for i in $(seq 1 300); do echo "line $i: the quick brown fox jumps over the lazy dog"; done >"$work/data/a.txt"
cat >"$work/tiny.toml" <<TOML
steps = 4
batch = 4
eval_every = 2
eval_batches = 2
[model]
n_layer = 1
d_model = 32
n_head = 2
context = 16
[data]
path = "$work/data"
TOML

# --help everywhere.
for sub in "" train eval; do
  "$deepcee" $sub --help >/dev/null || fail "deepcee $sub --help"
done

# A short run writes metrics, evaluations and a checkpoint.
"$deepcee" train --config "$work/tiny.toml" --out "$work/run" >"$work/run.log" 2>&1 || fail "train: $(cat "$work/run.log")"
[[ $(wc -l <"$work/run/metrics.csv") == 5 ]] || fail "metrics.csv should hold a header and 4 rows"
head -1 "$work/run/metrics.csv" | grep -q '^step,loss,lr,grad_norm,step_s,time_s,samples_per_s,tokens_per_s,elapsed_s,clock$' || fail "metrics.csv header"
[[ $(wc -l <"$work/run/eval.csv") == 3 ]] || fail "eval.csv should hold a header and 2 rows"
[[ -f $work/run/checkpoint.safetensors ]] || fail "no checkpoint"
ls "$work/run" | grep -q '\.tmp' && fail "a temporary file was left behind"

# JSONL metrics.
"$deepcee" train --config "$work/tiny.toml" --steps 2 --metrics jsonl --out "$work/jsonl" >/dev/null 2>&1 || fail "train --metrics jsonl"
head -1 "$work/jsonl/metrics.jsonl" | grep -q '^{"step":1,"loss":' || fail "metrics.jsonl format"

# Resume: continues from step 4 to 6, and the last loss equals an uninterrupted 6-step run's.
"$deepcee" train --config "$work/tiny.toml" --steps 6 --resume "$work/run/checkpoint.safetensors" --out "$work/resumed" >/dev/null 2>&1 || fail "resume"
"$deepcee" train --config "$work/tiny.toml" --steps 6 --out "$work/straight" >/dev/null 2>&1 || fail "straight"
[[ $(head -2 "$work/resumed/metrics.csv" | tail -1 | cut -d, -f1) == 5 ]] || fail "resumed run should start at step 5"
[[ $(tail -1 "$work/resumed/metrics.csv" | cut -d, -f2) == $(tail -1 "$work/straight/metrics.csv" | cut -d, -f2) ]] || fail "resumed loss differs from the uninterrupted run's"

# Eval prints the validation loss.
"$deepcee" eval --checkpoint "$work/run/checkpoint.safetensors" --data "$work/data" --batch 4 --batches 2 | grep -q '^validation loss [0-9.]* nats/byte' || fail "eval output"

# Bad input.
printf 'steps = 4\nbatch = \n' >"$work/syntax.toml"
printf 'steps = 4\n[optimizer]\nlrr = 0.1\n' >"$work/unknown.toml"
printf 'steps = 4\nbatch = "many"\n' >"$work/type.toml"
printf 'steps = 4\n\nbatch = 0\n' >"$work/range.toml"
printf '[data]\npath = "%s/nowhere"\n' "$work" >"$work/nodata.toml"
mkdir -p "$work/empty"
printf '[data]\npath = "%s/empty"\n' "$work" >"$work/emptydata.toml"
head -c 1000 "$work/run/checkpoint.safetensors" >"$work/truncated.safetensors"
expect_error "missing config" "missing\.toml" -- train --config "$work/missing.toml" --out "$work/bad1"
expect_error "syntax" "syntax\.toml:2" -- train --config "$work/syntax.toml" --out "$work/bad2"
expect_error "unknown key" "unknown\.toml:3.*optimizer\.lrr" -- train --config "$work/unknown.toml" --out "$work/bad3"
expect_error "wrong type" "type\.toml:2.*batch" -- train --config "$work/type.toml" --out "$work/bad4"
expect_error "out of range" "range\.toml:3.*batch" -- train --config "$work/range.toml" --out "$work/bad5"
expect_error "missing corpus" "nowhere" -- train --config "$work/nodata.toml" --out "$work/bad6"
expect_error "empty corpus" "empty" -- train --config "$work/emptydata.toml" --out "$work/bad7"
expect_error "truncated checkpoint (eval)" "truncated\.safetensors" -- eval --checkpoint "$work/truncated.safetensors" --data "$work/data"
expect_error "truncated checkpoint (resume)" "truncated\.safetensors" -- train --config "$work/tiny.toml" --resume "$work/truncated.safetensors" --out "$work/bad8"
sed 's/d_model = 32/d_model = 64/' "$work/tiny.toml" >"$work/wide.toml"
expect_error "checkpoint of another model" "checkpoint\.safetensors" -- train --config "$work/wide.toml" --resume "$work/run/checkpoint.safetensors" --out "$work/bad9"
expect_error "bad flag value" "steps" -- train --config "$work/tiny.toml" --steps -3 --out "$work/bad10"
if "$deepcee" train --device cuda --steps 0 --config "$work/tiny.toml" --out "$work/gpu" >/dev/null 2>&1; then
  : # a GPU is visible here
else
  expect_error "cuda without a GPU" "cuda" -- train --device cuda --config "$work/tiny.toml" --out "$work/bad11"
fi
# Sizes this machine cannot hold, what cannot be a corpus, bounds (issue 13): refused up
# front at the key's line, nothing written.
sed 's/n_layer = 1/n_layer = 1000000/' "$work/tiny.toml" >"$work/huge.toml"
expect_error "model larger than memory" "huge\.toml:6: .*needs at least .* but this machine has" -- train --config "$work/huge.toml" --out "$work/bad12"
printf 'threads = 100000\n' >"$work/threads.toml"
expect_error "threads beyond the cores" "threads\.toml:1: .*cores" -- train --config "$work/threads.toml" --out "$work/bad13"
printf 'batch = 2147483647\n' >"$work/bigbatch.toml"
expect_error "batch beyond the bound" "bigbatch\.toml:1: 'batch' must be <=" -- train --config "$work/bigbatch.toml" --out "$work/bad14"
printf 'steps = 1\neval_batches = 2000000000\n' >"$work/evals.toml"
expect_error "eval_batches beyond the bound" "evals\.toml:2: 'eval_batches'" -- train --config "$work/evals.toml" --out "$work/bad15"
mkfifo "$work/fifo"
expect_error "FIFO as corpus" "fifo: corpus file is a FIFO" -- train --config "$work/tiny.toml" --data "$work/fifo" --out "$work/bad16"
expect_error "FIFO as config" "fifo: config file is a FIFO" -- train --config "$work/fifo" --out "$work/bad17"
expect_error "/dev/zero as corpus" "/dev/zero: corpus file is a character device" -- train --config "$work/tiny.toml" --data /dev/zero --out "$work/bad18"
# Checkpoints whose metadata or weights are not a deepcee checkpoint's.
edit_checkpoint() { # SRC DST PYTHON-EXPR on meta (dict) and data (bytearray)
  python3 - "$1" "$2" "$3" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n]); meta = header["__metadata__"]; data = bytearray(raw[8 + n:])
exec(sys.argv[3])
text = json.dumps(header).encode(); text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + bytes(data))
PY
}
ckpt=$work/run/checkpoint.safetensors
edit_checkpoint "$ckpt" "$work/negstep.safetensors" 'meta["step"] = "-5"'
edit_checkpoint "$ckpt" "$work/noformat.safetensors" 'del meta["format"]'
edit_checkpoint "$ckpt" "$work/nan.safetensors" 'data[0:4] = struct.pack("<f", float("nan"))'
expect_error "negative step" "negstep\.safetensors: metadata 'step' must be in 0\.\." -- train --config "$work/tiny.toml" --steps 6 --resume "$work/negstep.safetensors" --out "$work/bad19"
expect_error "no format key" "noformat\.safetensors: not a deepcee checkpoint" -- eval --checkpoint "$work/noformat.safetensors" --data "$work/data"
expect_error "NaN weights" "nan\.safetensors: tensor .* nan" -- train --config "$work/tiny.toml" --steps 6 --resume "$work/nan.safetensors" --out "$work/bad20"
expect_error "NaN weights (eval)" "nan\.safetensors: tensor .* nan" -- eval --checkpoint "$work/nan.safetensors" --data "$work/data"
if ! "$deepcee" train --device cuda --steps 0 --config "$work/tiny.toml" --out "$work/gpu" >/dev/null 2>&1; then
  printf 'steps = 1\n\ndevice = "cuda"\n' >"$work/cuda.toml"
  expect_error "cuda in the file without a GPU" "cuda\.toml:3: device = \"cuda\"" -- train --config "$work/cuda.toml" --out "$work/bad21"
fi
for i in $(seq 1 21); do [[ -e $work/bad$i ]] && fail "bad input $i left a run directory"; done

if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "all CLI checks passed"

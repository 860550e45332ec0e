#!/usr/bin/env bash
# End-to-end checks of `deepcee profile`: it measures this node (saying a GPU is skipped
# where none is visible), writes a versioned profile that plan and simulate read, and every
# kind of bad profile (truncated, an entry missing, another format version, model or
# device) gives one line naming the file, exit code 2.
#   cli_profile_test.sh PATH/TO/deepcee PATH/TO/configs
set -u
deepcee=$1
configs=$2
cpus=$configs/clusters/cpu-loopback.toml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/test_lib.sh"

p=$work/p.toml
"$deepcee" profile --model small --micro-batches 1,2 --repetitions 1 --warmup 0 --out "$p" \
  >"$work/out.log" 2>"$work/err.log" || fail "deepcee profile: $(cat "$work"/*.log)"
grep -q "written to $p" "$work/out.log" || fail "no closing line: $(cat "$work/out.log")"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  grep -q "GPU skipped" "$work/err.log" || fail "no GPU, but not said: $(cat "$work/err.log")"
fi
grep -q '^format_version = 1$' "$p" || fail "no format_version in $p"
[[ $(grep -c '^\[\[entry\]\]' "$p") == 6 ]] || fail "expected 6 entries in $p"
# The host's fp16, bf16 and int8 codec passes, per device measured.
grep -q '^compression = "int8"$' "$p" || fail "no int8 [[codec]] in $p"
[[ $(grep -c '^\[\[codec\]\]' "$p") == $(sed -n 's/^codecs = //p' "$p") ]] ||
  fail "the [[codec]] rows of $p differ from their count"
# The optimizer step of each layer kind, per device measured.
devices=$(grep -c '^\[\[device\]\]' "$p")
[[ $(grep -c '^\[\[optimizer\]\]' "$p") == $((3 * devices)) &&
   $(sed -n 's/^optimizers = //p' "$p") == $((3 * devices)) ]] ||
  fail "$p has not one [[optimizer]] row per layer kind"

# plan and simulate read it: the CPU's costs are measured ones.
"$deepcee" plan --cluster "$cpus" --model small --profile "$p" --json "$work/plan.json" \
  >"$work/plan.log" 2>&1 || fail "plan --profile: $(cat "$work/plan.log")"
"$deepcee" simulate --cluster "$cpus" --plan "$work/plan.json" --profile "$p" \
  >"$work/sim.log" 2>&1 || fail "simulate --profile: $(cat "$work/sim.log")"
# Without the profile the roofline's figures differ from the measured ones.
"$deepcee" simulate --cluster "$cpus" --plan "$work/plan.json" >"$work/sim0.log" 2>&1
cmp -s "$work/sim.log" "$work/sim0.log" && fail "the profile changed nothing in simulate"

# Bad profiles.
awk '/^\[\[entry\]\]/{n++} n<4' "$p" >"$work/truncated.toml" # cut at an entry's start
expect_error truncated "truncated.toml: truncated or edited: 3 \\[\\[entry\\]\\] of the 6 it declares" -- \
  plan --cluster "$cpus" --model small --profile "$work/truncated.toml"
sed 's/^format_version = 1$/format_version = 7/' "$p" >"$work/v7.toml"
expect_error version "v7.toml:2: format_version 7" -- \
  simulate --cluster "$cpus" --plan "$work/plan.json" --profile "$work/v7.toml"
awk 'BEGIN{n=0} /^\[\[entry\]\]/{n++} n!=3' "$p" | sed 's/^entries = 6$/entries = 5/' \
  >"$work/missing.toml"
expect_error missing "missing.toml:[0-9]+: missing the entry for device CPU, layer head, micro_batch 1" -- \
  plan --cluster "$cpus" --model small --profile "$work/missing.toml"
expect_error model "p.toml:3: the profile was measured for model 'small'" -- \
  plan --cluster "$cpus" --model gpt2-124m --profile "$p"
expect_error device "p.toml:[0-9]+: the profile was measured on CPU, not on any device" -- \
  plan --cluster "$configs/clusters/cee-small.toml" --model small --profile "$p"
expect_error threads "--threads" -- profile --model small --threads 100000 --out "$work/x.toml"
[[ -e $work/x.toml ]] && fail "a refused profile run wrote its file"

# Links: every node of a job on loopback runs profile --name; the coordinator's node writes
# one [[link]] per directed pair. A node that is not running is named, exit non-zero.
read -r lp0 lp1 lp2 < <(python3 "$(dirname "$0")/free_ports.py" 3)
cat >"$work/links.toml" <<TOML
name = "links"
cluster = "$cpus"
model = "small"
coordinator = "n0"
connect_timeout = 10
$(loopback_nodes $lp0 $lp1 $lp2)
TOML
# Without the job's token (nor --insecure) a link profile is refused like a node.
expect_error no-token "node n0: .*--token-file" -- profile --job "$work/links.toml" --name n0 \
  --no-gpu --out "$work/no-token.toml"
[[ -e $work/no-token.toml ]] && fail "a link profile without a token wrote its file"
(umask 077 && openssl rand -hex 32 >"$work/token")
export DEEPCEE_TOKEN_FILE="$work/token"
# The three nodes' link profile, each node started at once: the later node of each pair
# dials the earlier one (actors/net/link_probe.hpp: two nodes dialling each other at the
# same moment lost both connections, and the two lost each other after a 30 s request timeout).
pids=()
for n in n0 n1 n2; do
  "$deepcee" profile --job "$work/links.toml" --name $n --micro-batches 1 --repetitions 1 \
    --warmup 0 --no-gpu --out "$work/links-profile.toml" >"$work/links-$n.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do wait "${pids[$i]}" || fail "profile --name n$i: $(cat "$work/links-n$i.log")"; done
[[ $(grep -c '^\[\[link\]\]' "$work/links-profile.toml") == 6 ]] ||
  fail "expected 6 links: $(cat "$work/links-profile.toml")"
grep -q "link to n2: latency" "$work/links-n1.log" || fail "n1 did not say its links"
"$deepcee" plan --cluster "$cpus" --model small --profile "$work/links-profile.toml" \
  >"$work/plan-links.log" 2>&1 || fail "plan with measured links: $(cat "$work/plan-links.log")"
sed 's/connect_timeout = 10/connect_timeout = 1/' "$work/links.toml" >"$work/alone.toml"
err=$("$deepcee" profile --job "$work/alone.toml" --name n0 --no-gpu --out "$work/alone.out" 2>&1 >/dev/null)
rc=$?
[[ $rc != 0 ]] || fail "an unreachable node: exit 0"
[[ $err == *"could not reach node n1 at 127.0.0.1:$lp1"* ]] || fail "unreachable node: '$err'"
[[ -e $work/alone.out ]] && fail "a failed link profile wrote its file"

(( failures == 0 )) && echo "cli_profile: all checks passed"
exit $((failures > 0))

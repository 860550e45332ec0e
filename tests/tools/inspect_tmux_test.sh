#!/usr/bin/env bash
# (c) The live view of `deepcee inspect`, driven as a user drives it: the real binary in a
# tmux pane against a real `deepcee run` job. The pane shows the step, the loss and a line
# per stage; key 2 switches to the stages' op timelines, Tab to the devices; q leaves and the
# shell's prompt is back with the screen restored; Ctrl-C leaves too.
#   inspect_tmux_test.sh PATH/TO/deepcee CONFIGS_DIR
set -u
deepcee=$1
configs=$(cd "$2" && pwd)
command -v tmux >/dev/null || { echo "tmux is not installed (setup.sh installs it)"; exit 1; }
work=$(mktemp -d)
session="deepcee-inspect-$$"
job_pid=""
cleanup() {
  tmux kill-session -t "$session" 2>/dev/null
  [[ -n $job_pid ]] && kill "$job_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$(dirname "$0")/test_lib.sh"

write_corpus "$work/data"
# Many steps of a tiny model: the job lives long enough to be watched (it is interrupted at
# the end).
cat >"$work/job.toml" <<TOML
name = "tmux-test"
time = "virtual"
cluster = "$configs/local-cluster/cluster.toml"
plan = "$configs/local-cluster/plan.json"
[train]
seed = 7
steps = 100000
batch = 12
checkpoint_every = 0
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
"$deepcee" run "$work/job.toml" --out "$work/run" >"$work/run.log" 2>&1 &
job_pid=$!
addr=""
for _ in $(seq 1 200); do
  addr=$(sed -n 's|^inspect: http://||p' "$work/run.log")
  [[ -n $addr ]] && break
  sleep 0.1
done
[[ -n $addr ]] || { echo "FAIL: no inspect address: $(tail -3 "$work/run.log")"; exit 1; }

pane() { tmux capture-pane -p -t "$session"; }
# wait_for PATTERN: until the pane shows it (20 s at most: a loaded machine).
wait_for() {
  for _ in $(seq 1 200); do
    pane | grep -Eq -- "$1" && return 0
    sleep 0.1
  done
  return 1
}
tmux new-session -d -s "$session" -x 150 -y 45 "env PS1='PROMPT\$ ' bash --norc --noprofile"
wait_for '^PROMPT\$' || fail "no shell prompt in tmux"
tmux send-keys -t "$session" "$deepcee inspect $addr --interval 0.2" Enter

wait_for 'step [0-9]+/100000  loss [0-9.]+' || fail "no step and loss line: $(pane | head -12)"
wait_for '^stage p1 s1 ' || fail "no stage lines: $(pane | head -20)"
pane | grep -q '\[1 overview\]' || fail "the overview tab is not selected: $(pane | head -3)"
first=$(pane | sed -n 's/^step \([0-9]*\)\/.*/\1/p')
# A later step within 10 s (redrawn every 0.2 s).
for _ in $(seq 1 100); do
  later=$(pane | sed -n 's/^step \([0-9]*\)\/.*/\1/p')
  ((${later:-0} > ${first:-0})) && break
  sleep 0.1
done
[[ ${later:-0} -gt ${first:-0} ]] || fail "the view does not refresh (step ${first:-?} then ${later:-?})"

tmux send-keys -t "$session" 2
wait_for '^op timeline of step' || fail "key 2 did not show the stages: $(pane | head -8)"
pane | grep -q '\[2 stages\]' || fail "the stages tab is not selected"
pane | grep -Eq '^  [FBW.]{20,}' || fail "no op timeline: $(pane | head -12)"
pane | grep -q '^step [0-9]*/' && fail "the overview is still shown after key 2"
tmux send-keys -t "$session" Tab
wait_for '^device +kind' || fail "Tab did not show the devices: $(pane | head -8)"
tmux send-keys -t "$session" 4
wait_for '^link +bandwidth' && wait_for '^[^ ]+ -> [^ ]+ +[0-9.]+ [kMGT]?B/s' || fail "key 4 did not show the links: $(pane | head -8)"

tmux send-keys -t "$session" q
wait_for '^PROMPT\$ ?$' || fail "q did not give the prompt back: $(pane | grep -v '^$' | tail -3)"
pane | grep -q 'deepcee inspect http' && fail "the inspector's screen is still shown after q"
tmux send-keys -t "$session" 'echo "rc=$?"' Enter
wait_for '^rc=0$' || fail "inspect did not exit 0 on q: $(pane | grep -v '^$' | tail -3)"

# Ctrl-C leaves as q does, and the terminal echoes again.
tmux send-keys -t "$session" "clear; $deepcee inspect $addr" Enter
wait_for 'step [0-9]+/100000' || fail "the second inspector shows no step"
tmux send-keys -t "$session" C-c
wait_for '^PROMPT\$ ?$' || fail "Ctrl-C did not give the prompt back: $(pane | grep -v '^$' | tail -3)"
tmux send-keys -t "$session" 'echo typed-after-ctrl-c' Enter
wait_for '^typed-after-ctrl-c$' || fail "the terminal is not restored after Ctrl-C: $(pane | grep -v '^$' | tail -3)"

kill -INT "$job_pid"
wait "$job_pid"
rc=$?
[[ $rc -eq 130 ]] || fail "the watched job: exit $rc: $(tail -3 "$work/run.log")"
job_pid=""
if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "inspect (tmux): all checks passed"

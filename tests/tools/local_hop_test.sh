#!/usr/bin/env bash
# The local hop: a process on a node's host without the job's token cannot reach the job
# through the ports its nodes hold on 127.0.0.1 (CAF's own, and each tunnel's). A job of
# three node processes with a token runs while `deepcee inject --insecure` (no token) tries
# every such port of every node: each try fails, the job finishes with the losses of a
# quiet run, and no event is in force.
#   local_hop_test.sh PATH/TO/deepcee CONFIGS_DIR
set -u
deepcee=$1
configs=$(cd "$2" && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
source "$(dirname "$0")/test_lib.sh"
(umask 077 && openssl rand -hex 32 >"$work/token")
export DEEPCEE_TOKEN_FILE=$work/token
command -v ss >/dev/null || { echo "SKIPPED: ss (iproute2) is needed to list the nodes' local ports"; exit 77; }
read -r p0 p1 p2 < <(python3 "$(dirname "$0")/free_ports.py" 3)
write_corpus "$work/data"
steps=1500
cat >"$work/job.toml" <<TOML
name = "local-hop-test"
time = "virtual"
adapt = false
cluster = "$configs/local-cluster/cluster.toml"
plan = "$configs/local-cluster/plan.json"
coordinator = "n0"
connect_timeout = 20
$(loopback_nodes $p0 $p1 $p2)
[train]
seed = 7
steps = $steps
batch = 12
checkpoint_every = 0
eval_every = 0
out = "$work/runs"
[train.model]
n_layer = 2
d_model = 32
n_head = 2
context = 16
[train.data]
path = "$work/data"
TOML

# run_nodes NAME: the three nodes in the background (pids in pid_n0...).
run_nodes() {
  local n
  for n in n1 n2 n0; do
    timeout 120 "$deepcee" node "$work/job.toml" --name $n --out "$work/out-$1-$n" --step-timeout 30 \
      >"$work/$1-$n.log" 2>&1 &
    pids+=($!)
    eval "pid_$n=$!"
  done
}
finish_all() {
  local n p
  for n in n0 n1 n2; do
    eval "p=\$pid_$n"
    wait "$p" || fail "$1: node $n exit $?: $(tail -3 "$work/$1-$n.log")"
  done
}
losses() { grep '^step [0-9]* loss' "$1"; }
# local_ports PID: the ports on 127.0.0.1 that the deepcee process under PID (timeout's
# child) listens on, its public port aside.
local_ports() {
  local node
  node=$(pgrep -P "$1" deepcee | head -1)
  [[ -n $node ]] || return
  ss -ltnpH "src 127.0.0.1" | grep "pid=$node," | awk '{print $4}' | sed 's/.*://' |
    grep -vx -e "$p0" -e "$p1" -e "$p2"
}

run_nodes quiet
finish_all quiet

run_nodes attacked
for _ in $(seq 1 600); do grep -q '^step 2 loss' "$work/attacked-n0.log" 2>/dev/null && break; sleep 0.1; done
drop='change = { between = ["cloud", "edge"], bandwidth_scale = 0.1 }'
tries=0
for n in n0 n1 n2; do
  eval "p=\$pid_$n"
  ports=$(local_ports "$p")
  [[ $(echo "$ports" | grep -c .) -ge 2 ]] || fail "$n: fewer than 2 local ports found: '$ports'"
  for port in $ports; do
    # A dropped connection request waits for the kernel's retries: 15 s is enough to tell.
    env -u DEEPCEE_TOKEN_FILE timeout 15 "$deepcee" inject "127.0.0.1:$port" --insecure --event "$drop" \
      --connect-timeout 3 >"$work/try-$n-$port.out" 2>&1 &
    pids+=($!)
    tries=$((tries + 1))
  done
done
for pid in $(jobs -p); do
  case " $pid_n0 $pid_n1 $pid_n2 " in *" $pid "*) continue ;; esac
  wait "$pid"
done
injected=0
for f in "$work"/try-*.out; do
  if grep -q 'in force from step' "$f"; then
    fail "$(basename "$f" .out): injected without the token: $(cat "$f")"
    injected=$((injected + 1))
  fi
done
echo "$tries local ports tried without the token: $injected took an event"
finish_all attacked
cmp -s <(losses "$work/quiet-n0.log") <(losses "$work/attacked-n0.log") ||
  fail "the attacked run's losses differ from the quiet run's"
[[ $(losses "$work/attacked-n0.log" | wc -l) == "$steps" ]] || fail "the attacked run did not run all $steps steps"
[[ -e $work/out-attacked-n0/events.csv ]] && fail "an event is in force: $(cat "$work/out-attacked-n0/events.csv")"
[[ -s $work/out-attacked-n0/metrics.csv ]] || fail "no metrics.csv in $work/out-attacked-n0"
# The same step times too (virtual time): an injected change would have moved them.
cmp -s <(cut -d, -f1-8,10 "$work/out-quiet-n0/metrics.csv") <(cut -d, -f1-8,10 "$work/out-attacked-n0/metrics.csv") ||
  fail "metrics.csv differs from the quiet run's"

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "local hop: all checks passed"

#!/usr/bin/env bash
# deepcee inject into a running job of three node processes on loopback, virtual time:
# a 10x bandwidth drop on the cloud-edge WAN injected mid-run is acknowledged with the
# step it is in force from, logged in events.csv and the trace, the steps after it take
# what `deepcee simulate --timeline` predicts with the same event at that step (within
# 2%), and the losses equal those of the run without injection. Refusals (no token, a
# wrong token, nothing listening, a script naming an unknown device, node or region, a
# negative time, a non-positive bandwidth, an unknown event) are one line, non-zero
# (2 for bad input), within a few seconds, and leave the job unharmed. A job with TLS
# certificates ([security] ca) takes the drop from a client that presents a node's
# certificate (--job JOB --name NODE) and finishes with the same losses; a client of another
# CA, or one without a certificate, is refused in one line (exit 1).
#   inject_test.sh PATH/TO/deepcee CONFIGS_DIR
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
(umask 077 && openssl rand -hex 32 >"$work/token" && openssl rand -hex 32 >"$work/other-token")
export DEEPCEE_TOKEN_FILE=$work/token

# Four free ports below Linux's ephemeral range (see multiprocess_test.sh); the fourth
# stays free: nothing listens there.
read -r p0 p1 p2 p3 < <(python3 "$(dirname "$0")/free_ports.py" 4)

write_corpus "$work/data"

# A static run (adapt = false): the step times follow the script alone, as the simulator's.
steps=1500 # about 100 steps a second: the injections land mid-run
# write_job FILE SECURITY NODES: the job with this [security] table and these [[node]] tables.
write_job() {
  cat >"$1" <<TOML
name = "inject-test"
time = "virtual"
adapt = false
cluster = "$configs/local-cluster/cluster.toml"
plan = "$configs/local-cluster/plan.json"
coordinator = "n0"
connect_timeout = 20
$2
$3
[train]
seed = 7
steps = $steps
batch = 12
checkpoint_every = 0
eval_every = 1000
out = "$work/runs"
[train.model]
n_layer = 2
d_model = 32
n_head = 2
context = 16
[train.data]
path = "$work/data"
TOML
}
write_job "$work/job.toml" "" "$(loopback_nodes $p0 $p1 $p2)"

# start NAME OUT LOG: one node of $job in the background; its pid is in pid_NAME.
job=$work/job.toml
start() {
  timeout 120 "$deepcee" node "$job" --name "$1" --out "$2" --step-timeout 30 --trace-steps $steps >"$3" 2>&1 &
  pids+=($!)
  eval "pid_$1=$!"
}
# finish_all WHAT: waits for the three nodes, each of which must exit 0.
finish_all() {
  local n p
  for n in n0 n1 n2; do
    eval "p=\$pid_$n"
    wait "$p" || fail "$1: node $n exit $?: $(tail -3 "$work/$1-$n.log")"
  done
}
run_nodes() {
  local n
  for n in n1 n2 n0; do start $n "$work/out-$1" "$work/$1-$n.log"; done
}
# wait_step LOG N: until the coordinator's node has printed step N (at most 60 s). Every
# step is traced (--trace-steps), so that the trace shows the injected event.
wait_step() {
  local t
  for t in $(seq 1 600); do
    grep -q "^step $2 loss" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# 1. The run without injection.
run_nodes plain
finish_all plain

# 2. The same run with injections: first the refusals, then the drop.
run_nodes injected
wait_step "$work/injected-n0.log" 2 || fail "the injected run did not reach step 2: $(tail -3 "$work/injected-n0.log")"

# refuse WHAT WANT_RC PATTERN [ARGS...]: deepcee inject ARGS must exit WANT_RC within 10 s
# with one line on stderr matching PATTERN.
refuse() {
  local what=$1 want=$2 pattern=$3 t0=$SECONDS rc
  shift 3
  "${runner[@]}" "$deepcee" inject "$@" >"$work/refuse.out" 2>"$work/refuse.err"
  rc=$?
  local took=$((SECONDS - t0)) lines
  lines=$(wc -l <"$work/refuse.err")
  [[ $rc == "$want" ]] || fail "$what: exit $rc, expected $want: $(cat "$work/refuse.err")"
  [[ $lines == 1 ]] || fail "$what: $lines lines on stderr: $(cat "$work/refuse.err")"
  grep -Eq -- "$pattern" "$work/refuse.err" || fail "$what: '$(cat "$work/refuse.err")' does not match '$pattern'"
  ((took <= 10)) || fail "$what: took $took s"
  echo "refused ($what, exit $rc, $took s): $(cat "$work/refuse.err")"
}
runner=(timeout 30)
addr=127.0.0.1:$p0
drop='change = { between = ["cloud", "edge"], bandwidth_scale = 0.1 }'
runner=(env -u DEEPCEE_TOKEN_FILE -u DEEPCEE_TOKEN timeout 30)
refuse "no token" 2 "token is needed" "$addr" --event "$drop"
runner=(timeout 30)
refuse "unreadable token file" 2 "none" "$addr" --event "$drop" --token-file "$work/none"
refuse "wrong token" 1 "token" "$addr" --event "$drop" --token-file "$work/other-token"
printf '[[device]]\nstep = 1\ndevice = "n9/0"\nslowdown = 2\n' >"$work/bad-device.toml"
refuse "unknown device" 2 "bad-device.toml:3:" "$addr" "$work/bad-device.toml"
printf '[[node]]\nnode = "n7"\naction = "stop"\n' >"$work/bad-node.toml"
refuse "unknown node" 2 "bad-node.toml:2:" "$addr" "$work/bad-node.toml"
printf '[[change]]\nbetween = ["cloud", "moon"]\nbandwidth = "10Mbps"\n' >"$work/bad-region.toml"
refuse "unknown region" 2 "bad-region.toml:2:" "$addr" "$work/bad-region.toml"
printf '[[change]]\nat = -3\nbetween = ["cloud", "edge"]\nbandwidth_scale = 0.5\n' >"$work/bad-time.toml"
refuse "negative time" 2 "bad-time.toml:2:" "$addr" "$work/bad-time.toml"
printf '[[change]]\nbetween = ["cloud", "edge"]\nbandwidth = 0\n' >"$work/bad-bandwidth.toml"
refuse "non-positive bandwidth" 2 "bad-bandwidth.toml:3:" "$addr" "$work/bad-bandwidth.toml"
printf '[[earthquake]]\nat = 3\n' >"$work/bad-event.toml"
refuse "unknown event" 2 "bad-event.toml:1:" "$addr" "$work/bad-event.toml"
refuse "unknown event on the command line" 2 "^deepcee inject: --event:2:" "$addr" \
  --event "$drop" --event 'flood = { node = "n1" }'

# Given the job's file, the client reads the events itself: a bad one is refused before
# anything is sent (here to an address where nothing listens, which would otherwise take
# the connect timeout and fail with exit 1).
refuse "unknown device, checked by the client" 2 "^deepcee inject: .*bad-device.toml:3:" \
  127.0.0.1:1 "$work/bad-device.toml" --job "$work/job.toml"

# The drop, at the next step boundary (the client checks it against the job's file first).
if timeout 60 "$deepcee" inject "$addr" --job "$work/job.toml" --event "$drop" >"$work/inject.out" 2>"$work/inject.err"; then
  at=$(sed -n 's/.*in force from step \([0-9]*\)$/\1/p' "$work/inject.out")
  [[ -n $at ]] || fail "inject: no step in '$(cat "$work/inject.out")'"
  echo "injected: $(cat "$work/inject.out")"
else
  fail "inject: exit $?: $(cat "$work/inject.err")"
  at=
fi
finish_all injected

if [[ -n $at ]]; then
  # events.csv: the drop at the step it was acknowledged for; the trace has it too.
  python3 - "$work/out-injected/events.csv" "$at" <<'PY' || fail "events.csv"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
at = int(sys.argv[2])
assert len(rows) == 1, rows
assert int(rows[0]["step"]) == at and "cloud<->edge" in rows[0]["event"] and "x0.1" in rows[0]["event"], rows
print(f"events.csv: {rows[0]}")
PY
  grep -q '"inject: link cloud<->edge' "$work/out-injected/trace.json" || fail "trace.json has no instant of the injected event"
  grep -q "injected at" "$work/injected-n0.log" || fail "the coordinator's node did not log the event"

  # The simulator with the same event at that step.
  printf '[[change]]\nstep = %d\nbetween = ["cloud", "edge"]\nbandwidth_scale = 0.1\n' "$at" >"$work/timeline.toml"
  "$deepcee" simulate --cluster "$configs/local-cluster/cluster.toml" --plan "$configs/local-cluster/plan.json" \
    --timeline "$work/timeline.toml" --steps $steps >"$work/simulate.out" 2>&1 || fail "simulate: $(tail -2 "$work/simulate.out")"
  python3 - "$work/out-plain/metrics.csv" "$work/out-injected/metrics.csv" "$work/simulate.out" "$at" <<'PY' || fail "step times or losses"
import csv, re, sys
plain, injected = (list(csv.DictReader(open(f))) for f in sys.argv[1:3])
at = int(sys.argv[4])
units = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "min": 60.0, "h": 3600.0}
line = next(l for l in open(sys.argv[3]) if l.startswith("step times:"))
sim = [float(v) * units[u] for v, u in re.findall(r"([0-9.]+) ?(min|ms|us|µs|s|h)\b", line)]
assert len(plain) == len(injected) == len(sim), (len(plain), len(injected), len(sim))
# Losses: the math does not change.
for a, b in zip(plain, injected):
    assert a["loss"] == b["loss"], (a["step"], a["loss"], b["loss"])
# Step times: after the drop, the simulator's; before it, the plain run's.
before = [float(r["step_s"]) for r in injected[: at - 1]]
assert before == [float(r["step_s"]) for r in plain[: at - 1]], "steps before the drop changed"
worst = 0.0
for r in injected[at - 1 :]:
    k = int(r["step"])
    worst = max(worst, abs(float(r["step_s"]) - sim[k - 1]) / sim[k - 1])
slow = float(injected[at - 1]["step_s"]) / float(plain[at - 1]["step_s"])
print(f"after the drop at step {at}: step {float(plain[at-1]['step_s']):.4f} s -> {float(injected[at-1]['step_s']):.4f} s ({slow:.2f}x); "
      f"worst difference from deepcee simulate --timeline over steps {at}..{len(sim)}: {worst:.2%}; "
      f"losses of all {len(plain)} steps equal to the run without injection")
assert slow > 1.1, f"the drop did not slow the step ({slow:.2f}x)"
assert worst <= 0.02, worst
PY
fi

# 3. The job with TLS certificates: its nodes' certificates of the job's CA, and a client's
#    of another CA. Made here with the openssl command line.
pki=$work/pki
{
  make_cas "$pki" &&
    node_cert "$pki" n0 n0 ca 2 && node_cert "$pki" n1 n1 ca 2 && node_cert "$pki" n2 n2 ca 2 &&
    node_cert "$pki" other-n0 n0 other 2
} >"$work/pki.log" 2>&1 || fail "openssl: $(cat "$work/pki.log")"
# tls_nodes CERT0 CERT1 CERT2: the [[node]] tables with these certificates (pki/CERT.pem).
tls_nodes() {
  local k=0 port
  for port in $p0 $p1 $p2; do
    loopback_nodes $port | sed "s/\"n0\"/\"n$k\"/"
    printf 'certificate = "pki/%s.pem"\nkey = "pki/%s.key"\n' "$1" "$1"
    shift
    k=$((k + 1))
  done
}
write_job "$work/tls.toml" $'[security]\nca = "pki/ca.pem"' "$(tls_nodes n0 n1 n2)"
# The client's job file of another CA: its certificate for n0 chains to that CA alone.
write_job "$work/other-ca.toml" $'[security]\nca = "pki/other.pem"' "$(tls_nodes other-n0 n1 n2)"
job=$work/tls.toml
run_nodes tls
wait_step "$work/tls-n0.log" 2 || fail "the TLS run did not reach step 2: $(tail -3 "$work/tls-n0.log")"
refuse "TLS: a client of another CA" 1 "^deepcee inject: failed: cannot authenticate node n0 at $addr: its certificate does not chain to the job's CA \(" \
  "$addr" --job "$work/other-ca.toml" --name n0 --event "$drop"
refuse "TLS: a client without a certificate" 1 "^deepcee inject: failed: cannot authenticate node of the job at $addr: .*needs --job JOB --name NODE\\)$" \
  "$addr" --event "$drop"
refuse "TLS: the job's file without --name" 2 "^deepcee inject: $work/tls.toml: the job speaks TLS .*--name NODE" \
  "$addr" --job "$work/tls.toml" --event "$drop"
# The drop, from the coordinator's host with its node's certificate.
if timeout 60 "$deepcee" inject "$addr" --job "$work/tls.toml" --name n0 --event "$drop" >"$work/tls-inject.out" 2>"$work/tls-inject.err"; then
  tls_at=$(sed -n 's/.*in force from step \([0-9]*\)$/\1/p' "$work/tls-inject.out")
  [[ -n $tls_at ]] || fail "TLS inject: no step in '$(cat "$work/tls-inject.out")'"
  echo "TLS: injected: $(cat "$work/tls-inject.out")"
else
  fail "TLS inject: exit $?: $(cat "$work/tls-inject.err")"
  tls_at=
fi
finish_all tls
if [[ -n $tls_at ]]; then
  python3 - "$work/out-plain/metrics.csv" "$work/out-tls/metrics.csv" "$work/out-tls/events.csv" "$tls_at" <<'PY' || fail "TLS: losses or events.csv"
import csv, sys
plain, tls, events = (list(csv.DictReader(open(f))) for f in sys.argv[1:4])
at = int(sys.argv[4])
assert len(plain) == len(tls), (len(plain), len(tls))
for a, b in zip(plain, tls):
    assert a["loss"] == b["loss"], (a["step"], a["loss"], b["loss"])
assert len(events) == 1 and int(events[0]["step"]) == at and "cloud<->edge" in events[0]["event"], events
slow = float(tls[at - 1]["step_s"]) / float(plain[at - 1]["step_s"])
assert slow > 1.1, f"the drop did not slow the step ({slow:.2f}x)"
print(f"TLS: the drop in force from step {at} ({slow:.2f}x slower step); losses of all {len(tls)} steps equal to the run without injection")
PY
fi
# n0 names each client it refused (a client retries until its tunnel hears the refusal, so
# one client may knock twice); the other nodes saw none.
(($(grep -c "^node n0: refused a connection from 127.0.0.1:[0-9]*: " "$work/tls-n0.log") >= 2)) ||
  fail "TLS: n0 should name the two clients it refused: $(grep refused "$work/tls-n0.log")"
for n in n1 n2; do
  ! grep -q "refused a connection" "$work/tls-$n.log" || fail "TLS: $n refused a connection: $(grep refused "$work/tls-$n.log")"
done
job=$work/job.toml

# 4. A node killed by an injected event: the job goes on without it (pipeline 0 holds every
#    layer), ends all its steps, and its losses equal the run without injection. n2's
#    process lives on (the kill is the emulated cluster's) and leaves when the job ends.
run_nodes killed
wait_step "$work/killed-n0.log" 2 || fail "the killed run did not reach step 2"
timeout 60 "$deepcee" inject "$addr" --event 'node = { node = "n2", action = "kill" }' >"$work/kill.out" 2>&1 ||
  fail "inject kill: $(cat "$work/kill.out")"
finish_all killed
grep -q "node n2 lost (killed at .* s by the script): the job goes on" "$work/killed-n0.log" ||
  fail "killed: no recovery line on n0: $(grep -i lost "$work/killed-n0.log")"
# Summed in another order by the new plan, the losses drift apart at fp32's rounding, which
# a long run amplifies: they are compared over the 100 steps after the recovery.
at=$(sed -n 's/.*re-plan before step \([0-9]*\):.*/\1/p' "$work/killed-n0.log" | head -1)
python3 - "$work/out-plain/metrics.csv" "$work/out-killed/metrics.csv" "${at:-0}" <<'PY' || fail "killed: losses"
import csv, sys
plain, killed = (list(csv.DictReader(open(f))) for f in sys.argv[1:3])
at = int(sys.argv[3])
assert at > 0, "no recovery"
assert len(killed) == len(plain), (len(killed), len(plain))
diff = [(abs(float(a["loss"]) - float(b["loss"])) / abs(float(a["loss"])), int(a["step"]))
        for a, b in zip(plain, killed) if int(a["step"]) < at + 100]
worst = max(diff)
assert worst[0] <= 1e-3, worst
print(f"killed: all {len(killed)} steps ran, without n2 from step {at}; worst relative loss "
      f"difference over steps 1-{at + 99} {worst[0]:.1e}")
PY
echo "killed: $(cat "$work/kill.out"); n0: $(grep -m1 'lost (killed' "$work/killed-n0.log")"

# 5. Nothing listening: where no node ever ran, and the job's port after its end.
refuse "nothing listening" 1 "127.0.0.1:$p3" "127.0.0.1:$p3" --event "$drop"
refuse "the job has ended" 1 "$addr" "$addr" --event "$drop"

((failures == 0)) && echo "inject: all checks passed"
exit $((failures > 0))

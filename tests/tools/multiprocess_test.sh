#!/usr/bin/env bash
# A job as three node processes on loopback: the same losses as single-device training for
# every schedule; members follow the coordinator's plan and settings; every failure (a node
# that never joins, a port in use, another cluster, a node lost mid-step, a hung node or
# coordinator, an absent coordinator) ends every process non-zero within bounded time, with
# one line naming the node; Ctrl-C to the process group saves the checkpoint and ends every
# node with 130; a killed member whose layers no other node held rolls the job back to a peer
# snapshot, with the same losses.
#   multiprocess_test.sh PATH/TO/deepcee CONFIGS_DIR
set -u
deepcee=$1
configs=$(cd "$2" && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [[ -n ${group:-} ]] && kill -9 -- -"$group" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$(dirname "$0")/test_lib.sh"
# Every node of these jobs holds the same token (transport/); section 12 tries others.
(umask 077 && openssl rand -hex 32 >"$work/token")
export DEEPCEE_TOKEN_FILE=$work/token

# Three free ports below Linux's ephemeral range (32768-60999): inside it, a node's own
# outgoing connection may be given the very port another node is about to listen on.
read -r p0 p1 p2 < <(python3 "$(dirname "$0")/free_ports.py" 3)

write_corpus "$work/data"

# write_job FILE STEPS SEED CONNECT_TIMEOUT [PLAN [EXTRA_TOP_LEVEL_LINE]]
write_job() {
  cat >"$1" <<TOML
name = "multiprocess-test"
time = "virtual"
cluster = "$configs/local-cluster/cluster.toml"
plan = "${5:-$configs/local-cluster/plan.json}"
coordinator = "n0"
connect_timeout = $4
${6:-}
$(loopback_nodes $p0 $p1 $p2)
[train]
seed = $3
steps = $2
batch = 12
checkpoint_every = 2
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

# start NAME JOB LOG [OPTIONS...]: one node in the background; its pid is in pid_NAME.
start() {
  timeout 60 "$deepcee" node "$2" --name "$1" --out "$work/out-$(basename "$3" .log)" "${@:4}" >"$3" 2>&1 &
  pids+=($!)
  eval "pid_$1=$!"
}
# finish NAME: waits for the node; its exit code is in rc.
finish() {
  local p
  eval "p=\$pid_$1"
  wait "$p"
  rc=$?
}

# run_nodes JOB NAME WHAT [OPTIONS...]: the three nodes of JOB (logs NAME-NODE.log), each
# of which must exit 0; a stuck step fails within 20 s naming the stages it waits for (not
# at the 60 s of `start`).
run_nodes() {
  local n
  for n in n1 n2 n0; do start $n "$1" "$work/$2-$n.log" --step-timeout 20 "${@:4}"; done
  for n in n0 n1 n2; do
    finish $n
    [[ $rc == 0 ]] || fail "$3: node $n exit $rc: $(tail -3 "$work/$2-$n.log")"
  done
}

# 1. Same math: 30 steps as three processes equal single-device training, for every
#    schedule (the local cluster's plan with its pipelines' schedule replaced).
steps=30
cat >"$work/single.toml" <<TOML
seed = 7
steps = $steps
batch = 12
threads = 1
eval_every = 1000
[model]
n_layer = 2
d_model = 32
n_head = 2
context = 16
[data]
path = "$work/data"
TOML
"$deepcee" train --config "$work/single.toml" --out "$work/single" >/dev/null 2>&1 || fail "deepcee train"
for schedule in gpipe 1f1b zb-h1 zb-h2 greedy; do
  python3 - "$configs/local-cluster/plan.json" "$work/plan-$schedule.json" "$schedule" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
for p in plan["pipelines"]:
    p["schedule"] = sys.argv[3]
json.dump(plan, open(sys.argv[2], "w"), indent=1)
PY
  write_job "$work/job-$schedule.toml" $steps 7 10 "$work/plan-$schedule.json"
  t0=$SECONDS
  run_nodes "$work/job-$schedule.toml" $schedule "same math $schedule"
  grep '^step ' "$work/$schedule-n0.log" | awk '{print $2","$4}' >"$work/nodes-$schedule.csv"
  python3 - "$work/single/metrics.csv" "$work/nodes-$schedule.csv" $steps $schedule $((SECONDS - t0)) <<'PY' || fail "same math $schedule: losses differ"
import csv, sys
want = {int(r["step"]): float(r["loss"]) for r in csv.DictReader(open(sys.argv[1]))}
got = {int(s): float(l) for s, l in (line.strip().split(",") for line in open(sys.argv[2]))}
steps = int(sys.argv[3])
assert len(got) == steps, f"{len(got)} steps from the nodes, expected {steps}"
worst = max(abs(got[k] - want[k]) / abs(want[k]) for k in range(1, steps + 1))
print(f"same math ({sys.argv[4]}, {sys.argv[5]} s): worst relative loss difference over {steps} steps {worst:.2e}")
sys.exit(0 if worst <= 1e-3 else 1)
PY
done
# The member nodes show the coordinator's steps with deepcee run's progress line (plain
# lines in a log): every step, with the loss the coordinator's node printed.
for n in n1 n2; do
  python3 - "$work/1f1b-n0.log" "$work/1f1b-$n.log" $steps $n <<'PY' || fail "member $n: no progress line for every step"
import re, sys
steps = int(sys.argv[3])
boss = {int(m[1]): float(m[2]) for m in re.finditer(r"^step (\d+) loss ([0-9.]+)$", open(sys.argv[1]).read(), re.M)}
member = {int(m[1]): float(m[3]) for m in re.finditer(r"^(\d+)/(\d+) \| loss ([0-9.]+) \| [0-9.]+ emulated samples/s \| virtual [0-9.]+ s", open(sys.argv[2]).read(), re.M)}
assert sorted(member) == list(range(1, steps + 1)), sorted(member)
assert all(abs(member[k] - boss[k]) <= 5.1e-5 for k in member), [(k, member[k], boss[k]) for k in member if abs(member[k] - boss[k]) > 5.1e-5]
print(f"member {sys.argv[4]}: the progress line of deepcee run for each of {steps} steps, with the coordinator's losses")
PY
done

# 1b. Virtual time across processes: the plan's two pipelines share the cloud-edge WAN
# pipe in both directions (ordered by pipe actors on n0), and every step's virtual time
# equals the one-process run's, bit for bit.
"$deepcee" run "$work/job-greedy.toml" --out "$work/one" >/dev/null 2>&1 || fail "deepcee run of the job"
python3 - "$work/one/metrics.csv" "$work/out-greedy-n0/metrics.csv" <<'PY' || fail "virtual time: nodes differ from one process"
import csv, sys
one = [float(r["step_s"]) for r in csv.DictReader(open(sys.argv[1]))]
nodes = [float(r["step_s"]) for r in csv.DictReader(open(sys.argv[2]))]
assert one and one == nodes, f"one process {one[:3]}..., nodes {nodes[:3]}..."
print(f"virtual time: {len(one)} steps equal in one process and as nodes ({one[0]:.6f} s each)")
PY

# 1c. Stages whose devices span nodes: pipeline 0's last stage runs on n1 with a device on
#     n2, pipeline 1's only stage on n2 with a device on n0 (the coordinator's node). Each
#     such device is an actor of its own node, its rows and ring chunks cross in messages:
#     the same losses and virtual step times as one process, bit for bit, and within 1e-3
#     of single-device training.
python3 - "$configs/local-cluster/plan.json" "$work/plan-spread.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
p0, p1 = plan["pipelines"]
p0["schedule"], p1["schedule"] = "zb-h1", "1f1b"
p0["stages"][2].update(devices=[4, 5], samples=[1, 1])
p1["stages"] = [dict(p1["stages"][0], devices=[6, 3], samples=[1, 1], first_layer=0, last_layer=4)]
json.dump(plan, open(sys.argv[2], "w"), indent=1)
PY
spread_steps=10
# Under a script with step events, which the coordinator puts in force when the job starts
# those steps (the stages on every node resolve nothing): n1's device slows 2x from step 4,
# the WAN halves from step 6. The adapter is off: the plan stays (the traces below draw the
# stage tracks of the plan in force at the end).
write_job "$work/job-spread.toml" $spread_steps 7 10 "$work/plan-spread.json" "adapt = false"
printf '[[device]]\nstep = 4\ndevice = "n1/0"\nslowdown = 2\n[[change]]\nstep = 6\nbetween = ["cloud", "edge"]\nbandwidth_scale = 0.5\n' >"$work/spread-script.toml"
printf '[inject]\nscript = "%s"\n' "$work/spread-script.toml" >>"$work/job-spread.toml"
run_nodes "$work/job-spread.toml" spread "stages across nodes"
for s in 4 6; do
  grep -q "step $s: injected at" "$work/spread-n0.log" || fail "stages across nodes: no event of step $s in the coordinator's log"
done
grep -q "node n2 joined with 1 stage(s) and 1 device(s) of others" "$work/spread-n0.log" ||
  fail "stages across nodes: n2 should join with its device of n1's stage: $(cat "$work/spread-n0.log")"
"$deepcee" run "$work/job-spread.toml" --out "$work/one-spread" >/dev/null 2>&1 || fail "deepcee run of the spread job"
python3 - "$work/single/metrics.csv" "$work/one-spread/metrics.csv" "$work/out-spread-n0/metrics.csv" $spread_steps <<'PY' || fail "stages across nodes: losses or times differ"
import csv, sys
single = {int(r["step"]): float(r["loss"]) for r in csv.DictReader(open(sys.argv[1]))}
one, nodes = (list(csv.DictReader(open(f))) for f in sys.argv[2:4])
steps = int(sys.argv[4])
assert len(nodes) == steps == len(one), f"{len(nodes)} steps from the nodes, {len(one)} from one process, expected {steps}"
for a, b in zip(one, nodes):
    assert a["loss"] == b["loss"] and a["step_s"] == b["step_s"], (a, b)
worst = max(abs(float(r["loss"]) - single[int(r["step"])]) / single[int(r["step"])] for r in nodes)
print(f"stages across nodes: {steps} steps equal one process bit for bit; worst relative loss difference to one device {worst:.2e}")
sys.exit(0 if worst <= 1e-3 else 1)
PY
# The coordinator's node's trace: its first 3 steps with the ops, transfers (from every
# node's links), all-reduce and optimizer of every device, the same events as one process's.
for t in "$work/out-spread-n0" "$work/one-spread"; do
  python3 "$(dirname "$0")/check_trace.py" "$t/trace.json" "$configs/local-cluster/cluster.toml" \
    "$work/plan-spread.json" 3 "trace of $(basename "$t")" || fail "trace of $t"
done
python3 - "$work/one-spread/trace.json" "$work/out-spread-n0/trace.json" <<'PY' || fail "stages across nodes: the node's trace differs from one process's"
import json, sys
spans = lambda f: sorted((e["pid"], e["tid"], e["name"], e["ts"], e["dur"]) for e in json.load(open(f))["traceEvents"] if e["ph"] == "X")
one, nodes = spans(sys.argv[1]), spans(sys.argv[2])
assert one == nodes, (len(one), len(nodes), [x for x in one if x not in nodes][:3], [x for x in nodes if x not in one][:3])
print(f"stages across nodes: the coordinator's node's trace holds the {len(one)} events of one process's")
PY
#     The same in wall time, the links shaped: the same losses (the math does not depend
#     on how time passes).
sed 's/^time = "virtual"/time = "wall"\nshape_links = true/' "$work/job-spread.toml" >"$work/job-spread-wall.toml"
run_nodes "$work/job-spread-wall.toml" spread-wall "stages across nodes, wall time"
for s in 4 6; do
  grep -q "step $s: injected at" "$work/spread-wall-n0.log" || fail "stages across nodes, wall time: no event of step $s in the coordinator's log"
done
python3 - "$work/out-spread-n0/metrics.csv" "$work/out-spread-wall-n0/metrics.csv" <<'PY' || fail "stages across nodes, wall time: losses differ"
import csv, sys
virtual, wall = ([r["loss"] for r in csv.DictReader(open(f))] for f in sys.argv[1:3])
assert len(wall) == len(virtual) and wall == virtual, (virtual, wall)
print(f"stages across nodes, shaped wall time: {len(wall)} losses equal virtual time's bit for bit")
PY

# 1d. The adapter's allocations across processes, each ordered at a known step with
#     --adapt-to (as the policy orders its decisions), on the 1f1b plan with micro-batches
#     of 4 (2 + 1 of them): from step 8 the micro-batches move between the pipelines
#     (-> 1 + 2), from step 15 the two-device stages split 3:1 and 1:3, from step 22
#     pipeline 0's hop from n0 to n1 sends fp16. Each is in force from its step on every
#     node, and the losses stay single-device training's.
python3 - "$work/plan-1f1b.json" "$work" <<'PY'
import copy, json, sys
plan = json.load(open(sys.argv[1]))
plan["micro_batch_size"] = 4
plan["pipelines"][0]["micro_batches"], plan["pipelines"][1]["micro_batches"] = 2, 1
for p in plan["pipelines"]:
    for s in p["stages"]:
        s["samples"] = [2 * n for n in s["samples"]]
a = copy.deepcopy(plan)
a["pipelines"][0]["micro_batches"], a["pipelines"][1]["micro_batches"] = 1, 2
b = copy.deepcopy(a)
b["pipelines"][0]["stages"][0]["samples"] = [3, 1]
b["pipelines"][1]["stages"][1]["samples"] = [1, 3]
c = copy.deepcopy(b)
c["pipelines"][0]["stages"][1]["send_compression"] = "fp16"
for name, p in (("base", plan), ("a", a), ("b", b), ("c", c)):
    json.dump(p, open(f"{sys.argv[2]}/plan-adapt-{name}.json", "w"), indent=1)
PY
write_job "$work/job-adapt.toml" $steps 7 10 "$work/plan-adapt-base.json"
run_nodes "$work/job-adapt.toml" adapt "adapter allocations" --adapt-to "8:$work/plan-adapt-a.json" \
  --adapt-to "15:$work/plan-adapt-b.json" --adapt-to "22:$work/plan-adapt-c.json"
for at in 8 15 22; do
  grep -q "adapter: .*ordered .*in force from step $at$" "$work/adapt-n0.log" ||
    fail "adapter allocations: no decision in force from step $at in: $(grep adapter "$work/adapt-n0.log")"
done
grep '^step ' "$work/adapt-n0.log" | awk '{print $2","$4}' >"$work/nodes-adapt.csv"
python3 - "$work/single/metrics.csv" "$work/nodes-adapt.csv" $steps <<'PY' || fail "adapter allocations: losses differ"
import csv, sys
want = {int(r["step"]): float(r["loss"]) for r in csv.DictReader(open(sys.argv[1]))}
got = {int(s): float(l) for s, l in (line.strip().split(",") for line in open(sys.argv[2]))}
steps = int(sys.argv[3])
assert len(got) == steps, f"{len(got)} steps from the nodes, expected {steps}"
worst = max(abs(got[k] - want[k]) / abs(want[k]) for k in range(1, steps + 1))
print(f"adapter allocations across nodes (rebalance, resplit, compression): worst relative loss difference over {steps} steps {worst:.2e}")
sys.exit(0 if worst <= 1e-3 else 1)
PY

# 1e. A re-plan across processes, ordered at step 10 with --adapt-to: pipeline 0's last
#     stage (n1's Jetson) takes block 2 over from its middle stage (n0's T4). Its weights and
#     AdamW moments come peer to peer from the nearest holder, pipeline 1's last stage on n2,
#     not through n0; every node spawns its part of the new plan, the old stages stop, and
#     the losses stay single-device training's.
python3 - "$work/plan-1f1b.json" "$work/plan-replan.json" <<'PY'
import copy, json, sys
plan = json.load(open(sys.argv[1]))
stages = plan["pipelines"][0]["stages"]
assert [(s["first_layer"], s["last_layer"]) for s in stages] == [(0, 1), (1, 3), (3, 4)]
stages[1]["last_layer"] = 2
stages[2]["first_layer"] = 2
json.dump(plan, open(sys.argv[2], "w"), indent=1)
PY
write_job "$work/job-replan.toml" $steps 7 10 "$work/plan-1f1b.json"
run_nodes "$work/job-replan.toml" replan "re-plan across nodes" --adapt-to "10:$work/plan-replan.json"
grep -q "re-plan before step 10: 2 pipeline(s): \[0-1 | 1-3 | 3-4\], \[0-2 | 2-4\] -> 2 pipeline(s): \[0-1 | 1-2 | 2-4\]" "$work/replan-n0.log" ||
  fail "re-plan across nodes: no re-plan before step 10 in: $(grep -i re-plan "$work/replan-n0.log")"
grep -q "spawned 1 stage(s) of the re-plan" "$work/replan-n1.log" ||
  fail "re-plan across nodes: n1 spawned no stage of the new plan: $(tail -3 "$work/replan-n1.log")"
grep '^step ' "$work/replan-n0.log" | awk '{print $2","$4}' >"$work/nodes-replan.csv"
python3 - "$work/single/metrics.csv" "$work/nodes-replan.csv" $steps <<'PY' || fail "re-plan across nodes: losses differ"
import csv, sys
want = {int(r["step"]): float(r["loss"]) for r in csv.DictReader(open(sys.argv[1]))}
got = {int(s): float(l) for s, l in (line.strip().split(",") for line in open(sys.argv[2]))}
steps = int(sys.argv[3])
assert len(got) == steps, f"{len(got)} steps from the nodes, expected {steps}"
worst = max(abs(got[k] - want[k]) / abs(want[k]) for k in range(1, steps + 1))
print(f"re-plan across nodes (a block moves from n0 to n1, its state from n2): worst relative loss difference over {steps} steps {worst:.2e}")
sys.exit(0 if worst <= 1e-3 else 1)
PY

# 1f. The adapter's own re-plan across processes, and its active probes: the cloud-edge WAN
#     drops 100x at step 4; the policy re-plans onto the cloud alone, which no transfer of
#     the WAN measures any more, so the adapter probes its drifted pairs every two steps; the
#     WAN comes back at 1.6875 s (virtual, a few re-planned steps later), the probes see it
#     and the drift ends. The losses stay single-device training's.
cat >"$work/probe-script.toml" <<'TOML'
[[change]]
step = 4
between = ["cloud", "edge"]
bandwidth_scale = 0.01
[[change]]
at = 1.6875
between = ["cloud", "edge"]
bandwidth_scale = 100
TOML
write_job "$work/job-probe.toml" $steps 7 10 "$configs/local-cluster/plan.json" \
  $'adapt = true\n[inject]\nscript = "'"$work/probe-script.toml"'"'
run_nodes "$work/job-probe.toml" probe "probes across nodes"
adapter_lines=$(grep "adapter: step" "$work/probe-n0.log")
replan_at=$(printf '%s\n' "$adapter_lines" | grep -m1 ": replan (" | sed 's/.*adapter: step \([0-9]*\):.*/\1/')
[[ -n $replan_at ]] || fail "probes across nodes: no re-plan in: $adapter_lines"
printf '%s\n' "$adapter_lines" | grep -q "step $((replan_at + 2)): probes link" ||
  fail "probes across nodes: no probe two steps after the re-plan at step $replan_at in: $adapter_lines"
printf '%s\n' "$adapter_lines" | grep -q "(nothing drifted" ||
  fail "probes across nodes: the probes never saw the WAN recover in: $adapter_lines"
grep '^step ' "$work/probe-n0.log" | awk '{print $2","$4}' >"$work/nodes-probe.csv"
python3 - "$work/single/metrics.csv" "$work/nodes-probe.csv" $steps <<'PY' || fail "probes across nodes: losses differ"
import csv, sys
want = {int(r["step"]): float(r["loss"]) for r in csv.DictReader(open(sys.argv[1]))}
got = {int(s): float(l) for s, l in (line.strip().split(",") for line in open(sys.argv[2]))}
steps = int(sys.argv[3])
assert len(got) == steps, f"{len(got)} steps from the nodes, expected {steps}"
worst = max(abs(got[k] - want[k]) / abs(want[k]) for k in range(1, steps + 1))
print(f"the adapter's re-plan and probes across nodes: worst relative loss difference over {steps} steps {worst:.2e}")
sys.exit(0 if worst <= 1e-3 else 1)
PY

# expect_failure LOG PATTERN: one line from deepcee that matches.
expect_line() {
  local got
  got=$(grep '^deepcee node' "$1")
  [[ $(printf '%s\n' "$got" | grep -c .) == 1 ]] || fail "$1: expected one failure line, got: $(cat "$1")"
  [[ $got =~ $2 ]] || fail "$1: '$got' does not match '$2'"
}

# 2. A node that never joins: the coordinator gives up after the connect timeout, naming it.
write_job "$work/short.toml" 5 7 2
start n0 "$work/short.toml" "$work/missing-n0.log"
start n1 "$work/short.toml" "$work/missing-n1.log"
t0=$SECONDS
finish n0; [[ $rc == 1 ]] || fail "missing node: coordinator should exit 1"
finish n1; [[ $rc != 0 ]] || fail "missing node: n1 should exit non-zero"
(( SECONDS - t0 <= 15 )) || fail "missing node: took $((SECONDS - t0)) s"
echo "missing node: every process ended within $((SECONDS - t0)) s"
expect_line "$work/missing-n0.log" "node n0: node\(s\) n2 did not join within 2"
expect_line "$work/missing-n1.log" "node n1: job stopped by n0: node\(s\) n2 did not join"

# 3. A port in use: the node names itself and the port.
python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT
s.bind(('127.0.0.1', $p0)); s.listen(); time.sleep(30)" &
holder=$!
pids+=($holder)
for _ in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/$p0) 2>/dev/null && break; sleep 0.05; done # it listens
start n0 "$work/short.toml" "$work/port.log"
finish n0; [[ $rc == 1 ]] || fail "port in use: exit code"
expect_line "$work/port.log" "node n0: port $p0 on 127.0.0.1 is in use"
kill $holder 2>/dev/null
wait $holder 2>/dev/null

# 4. The coordinator's node is the one source of the plan and the training settings. Members
#    whose job files say plan = "auto", another [train] seed and other steps follow it: the
#    same losses as case 1's greedy run, bit for bit (within the warm-up the learning rate
#    does not depend on the total steps).
write_job "$work/follow.toml" 5 7 10 "$work/plan-greedy.json"
write_job "$work/member.toml" 50 8 10 auto
start n1 "$work/member.toml" "$work/follow-n1.log"
start n2 "$work/member.toml" "$work/follow-n2.log"
start n0 "$work/follow.toml" "$work/follow-n0.log" --step-timeout 20
for n in n0 n1 n2; do
  finish $n
  [[ $rc == 0 ]] || fail "follow the coordinator: node $n exit $rc: $(tail -3 "$work/follow-$n.log")"
done
grep -q "node n1: runs the plan and \[train\] settings of the coordinator's node n0 (virtual time, seed 7, 5 steps)" "$work/follow-n1.log" ||
  fail "follow the coordinator: n1 should say what it runs: $(cat "$work/follow-n1.log")"
python3 - "$work/out-greedy-n0/metrics.csv" "$work/out-follow-n0/metrics.csv" <<'PY' || fail "follow the coordinator: losses differ"
import csv, sys
before = [r["loss"] for r in csv.DictReader(open(sys.argv[1]))][:5]
now = [r["loss"] for r in csv.DictReader(open(sys.argv[2]))]
assert len(now) == 5 and now == before, (now, before)
print("members with another plan and seed follow the coordinator: 5 losses bit-identical")
PY

#    A member that read another cluster (a slower WAN) is refused by name, and the job
#    stops at once.
sed 's/^cross_region = { bandwidth = "100Mbps"/cross_region = { bandwidth = "50Mbps"/' \
  "$configs/local-cluster/cluster.toml" >"$work/other-cluster.toml"
cmp -s "$configs/local-cluster/cluster.toml" "$work/other-cluster.toml" && fail "other cluster: sed changed nothing"
write_job "$work/patient.toml" 5 7 10
sed "s|^cluster = .*|cluster = \"$work/other-cluster.toml\"|" "$work/patient.toml" >"$work/other.toml"
t0=$SECONDS
start n0 "$work/patient.toml" "$work/wrong-n0.log"
start n1 "$work/patient.toml" "$work/wrong-n1.log"
start n2 "$work/other.toml" "$work/wrong-n2.log"
finish n2; [[ $rc == 1 ]] || fail "other cluster: n2 exit code $rc"
finish n0; [[ $rc == 1 ]] || fail "other cluster: n0 exit code $rc"
finish n1; [[ $rc != 0 ]] || fail "other cluster: n1 exit code"
(( SECONDS - t0 <= 9 )) || fail "other cluster: took $((SECONDS - t0)) s, the connect timeout is 10 s"
echo "other cluster: every process ended within $((SECONDS - t0)) s"
expect_line "$work/wrong-n2.log" "node n2: refused by the coordinator's node n0: node 'n2' read a different cluster than the coordinator's node"
expect_line "$work/wrong-n0.log" "node n0: node 'n2' read a different cluster"
# n1 asks or joins before or after the job failed: either way it names the coordinator's node.
expect_line "$work/wrong-n1.log" "node n1: (job stopped by n0: node 'n2' read a different cluster|refused by the coordinator's node n0: (it ended the job before this node joined|node 'n2' read a different cluster))"

# 5. A member killed mid-step (kill -9): the coordinator re-plans onto n0 and n1 (pipeline 0
#    holds every layer n2 held), the step in flight runs again with the same samples, and
#    the job ends all its steps with single-device training's losses.
write_job "$work/long.toml" 100000 7 10
lost_steps=400
write_job "$work/lost.toml" $lost_steps 7 10
sed -e "s/^steps = $steps/steps = $lost_steps/" "$work/single.toml" >"$work/single-lost.toml"
"$deepcee" train --config "$work/single-lost.toml" --out "$work/single-lost" >/dev/null 2>&1 || fail "deepcee train ($lost_steps steps)"
for n in n1 n2 n0; do start $n "$work/lost.toml" "$work/lost-$n.log"; done
for _ in $(seq 1 200); do grep -q '^step 3 ' "$work/lost-n0.log" 2>/dev/null && break; sleep 0.05; done
pkill -9 -P "$pid_n2" # the node itself, under its timeout wrapper
killed_at=$(date +%s.%N)
for _ in $(seq 1 400); do grep -q "re-plan before step" "$work/lost-n0.log" && break; sleep 0.025; done
recovered_s=$(awk -v a="$killed_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
finish n0; [[ $rc == 0 ]] || fail "lost node: n0 exit $rc: $(tail -3 "$work/lost-n0.log")"
finish n1; [[ $rc == 0 ]] || fail "lost node: n1 exit $rc: $(tail -3 "$work/lost-n1.log")"
finish n2
grep -q "node n2 lost (disconnected: .*): the job goes on with the planner's plan for the survivors" "$work/lost-n0.log" ||
  fail "lost node: no recovery line on n0: $(grep -i lost "$work/lost-n0.log")"
python3 - "$work/single-lost/metrics.csv" "$work/lost-n0.log" $lost_steps <<'PY' || fail "lost node: losses"
import csv, re, sys
single = {int(r["step"]): float(r["loss"]) for r in csv.DictReader(open(sys.argv[1]))}
log = open(sys.argv[2]).read()
steps = {int(m[0]): float(m[1]) for m in re.findall(r"^step (\d+) loss ([0-9.]+)", log, re.M)}
assert sorted(steps) == list(range(1, int(sys.argv[3]) + 1)), "steps missing"
worst = max(abs(l - single[k]) / single[k] for k, l in steps.items())
assert worst <= 1e-3, worst
at = re.search(r"re-plan before step (\d+)", log)
print(f"lost node: n2 killed, the job went on from step {at[1]} on n0 and n1; all {len(steps)} steps, "
      f"worst relative loss difference from single-device training {worst:.1e}")
PY
echo "lost node: the survivors' plan was in force $recovered_s s after the kill"
# The last checkpoint, written by the plan that replaced n2's, evaluates, and --resume
# continues from it on all three nodes.
ckpt=$(grep '^checkpoint at step' "$work/lost-n0.log" | tail -1)
k=$(echo "$ckpt" | sed 's/^checkpoint at step \([0-9]*\):.*/\1/')
ckpt=${ckpt#*: }
"$deepcee" eval --checkpoint "$ckpt" --data "$work/data" --batch 12 --batches 1 | grep -q "step $k)" || fail "lost node: checkpoint '$ckpt' of step '$k' does not evaluate"
run_nodes "$work/long.toml" resume "resume" --steps $((k + 2)) --resume "$ckpt"
[[ $(grep -m1 '^step ' "$work/resume-n0.log" | cut -d' ' -f2) == $((k + 1)) ]] || fail "resume should start at step $((k + 1))"
python3 - "$work/single/metrics.csv" "$work/lost-n0.log" "$work/resume-n0.log" $((k + 1)) <<'PY' || fail "resume: losses differ"
import csv, sys
single = {int(r["step"]): float(r["loss"]) for r in csv.DictReader(open(sys.argv[1]))}
steps = lambda f: {int(l.split()[1]): l.split()[3] for l in open(f) if l.startswith("step ") and " loss " in l}
lost, resumed, first = steps(sys.argv[2]), steps(sys.argv[3]), int(sys.argv[4])
assert sorted(resumed) == [first, first + 1], sorted(resumed)
for s, loss in resumed.items():
    assert s not in lost or lost[s] == loss, (s, lost[s], loss)
    assert s > 20 or abs(float(loss) - single[s]) / single[s] <= 1e-3, (s, loss, single[s])
print(f"resume after the lost node: steps {first}-{first + 1} from the step {first - 1} checkpoint")
PY

# 5b. A lost member started again joins the running job as a spare, and the job re-plans
#     onto it: three Raspberry Pi 4 nodes, each holding the whole model (three pipelines of
#     one stage). n2 is killed; the job goes on with two; n2's new process joins, and the
#     planner's plan for the three (faster by more than its move costs over 20 steps) takes
#     its layers from the others. Up to that re-plan the losses equal one process's within
#     1e-3; the planner's plan sends int8 and bf16 between its stages, which changes the
#     math a little: within 2% over the 20 steps after it (compressed_boundaries' bound).
cat >"$work/pis.toml" <<'TOML'
name = "three-pis"
[links]
same_region = { bandwidth = "1Gbps", latency = "0.2ms" }
[[region]]
name = "end"
tier = "end"
[[node]]
name = "n0"
region = "end"
devices = [{ kind = "Raspberry-Pi-4" }]
[[node]]
name = "n1"
region = "end"
devices = [{ kind = "Raspberry-Pi-4" }]
[[node]]
name = "n2"
region = "end"
devices = [{ kind = "Raspberry-Pi-4" }]
TOML
python3 - "$configs/local-cluster/plan.json" "$work/pis-plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p.update(strategy="three-replicas", micro_batch_size=8, global_batch=96)
p["pipelines"] = [{"micro_batches": 4, "schedule": "1f1b", "stages": [{"devices": [d], "samples": [8],
                   "first_layer": 0, "last_layer": 4, "send_compression": "none"}]} for d in range(3)]
json.dump(p, open(sys.argv[2], "w"))
PY
write_job "$work/pis-job.toml" 300 7 10 "$work/pis-plan.json"
sed -i -e "s|^cluster = .*|cluster = \"$work/pis.toml\"|" -e 's/^batch = 12/batch = 96/' "$work/pis-job.toml"
"$deepcee" run "$work/pis-job.toml" --out "$work/pis-one" >/dev/null 2>&1 || fail "rejoin: the one-process run"
for n in n1 n2 n0; do start $n "$work/pis-job.toml" "$work/rejoin-$n.log"; done
for _ in $(seq 1 200); do grep -q '^step 3 ' "$work/rejoin-n0.log" 2>/dev/null && break; sleep 0.05; done
pkill -9 -P "$pid_n2"
finish n2
for _ in $(seq 1 100); do grep -q "node n2 lost" "$work/rejoin-n0.log" && break; sleep 0.05; done
start n2 "$work/pis-job.toml" "$work/rejoin-n2-again.log"
for n in n0 n1 n2; do finish $n; [[ $rc == 0 ]] || fail "rejoin: $n exit $rc: $(tail -2 "$work/rejoin-$n.log")"; done
grep -q "node n2: the job of the coordinator's node n0 runs already: joining it as a spare" "$work/rejoin-n2-again.log" ||
  fail "rejoin: n2 did not join as a spare: $(cat "$work/rejoin-n2-again.log")"
grep -q "node n2 joined the running job: re-planning onto it" "$work/rejoin-n0.log" ||
  fail "rejoin: no re-plan onto n2: $(grep -i 'joined\|lost' "$work/rejoin-n0.log")"
grep -q "spawned 1 stage(s) of the re-plan" "$work/rejoin-n2-again.log" || fail "rejoin: n2 runs no stage"
joined_at=$(sed -n 's/.*re-plan before step \([0-9]*\):.*/\1/p' "$work/rejoin-n0.log" | tail -1)
python3 - "$work/pis-one/metrics.csv" "$work/out-rejoin-n0/metrics.csv" "${joined_at:-0}" <<'PY' || fail "rejoin: losses"
import csv, sys
one, nodes = (list(csv.DictReader(open(f))) for f in sys.argv[1:3])
at = int(sys.argv[3])
assert len(nodes) == len(one) == 300 and at > 0, (len(nodes), len(one), at)
diff = lambda a, b: abs(float(a["loss"]) - float(b["loss"])) / float(a["loss"])
before = max(diff(a, b) for a, b in zip(one, nodes) if int(a["step"]) < at)
after = max(diff(a, b) for a, b in zip(one, nodes) if at <= int(a["step"]) < at + 20)
assert before <= 1e-3 and after <= 2e-2, (before, after)
print(f"rejoin: n2 killed, started again, joined as a spare, re-planned onto from step {at}; 300 steps, "
      f"worst relative loss difference from one process {before:.1e} before, {after:.1e} over 20 steps after (compressed hops)")
PY

#     With adapt = false the plan in force stays when the spare joins: it runs nothing.
sed '0,/^name = .*/s//&\nadapt = false/' "$work/pis-job.toml" >"$work/pis-static.toml"
for n in n1 n2 n0; do start $n "$work/pis-static.toml" "$work/static-spare-$n.log"; done
for _ in $(seq 1 200); do grep -q '^step 3 ' "$work/static-spare-n0.log" 2>/dev/null && break; sleep 0.05; done
pkill -9 -P "$pid_n2"
finish n2
for _ in $(seq 1 100); do grep -q "node n2 lost" "$work/static-spare-n0.log" && break; sleep 0.05; done
start n2 "$work/pis-static.toml" "$work/static-spare-n2-again.log"
for n in n0 n1 n2; do finish $n; [[ $rc == 0 ]] || fail "static spare: $n exit $rc: $(tail -2 "$work/static-spare-$n.log")"; done
grep -q "node n2 joined the running job; the plan in force stays: adapt = false" "$work/static-spare-n0.log" ||
  fail "static spare: $(grep -i 'joined' "$work/static-spare-n0.log")"
! grep -q "re-planning onto it" "$work/static-spare-n0.log" || fail "static spare: re-planned with adapt = false"

# 6. A node that hangs mid-step (stopped, its connections open): the step timeout names it.
for n in n1 n2 n0; do start $n "$work/long.toml" "$work/hung-$n.log" --step-timeout 2; done
for _ in $(seq 1 200); do grep -q '^step 3 ' "$work/hung-n0.log" 2>/dev/null && break; sleep 0.1; done
pkill -STOP -P "$pid_n2"
t0=$SECONDS
finish n0; [[ $rc == 1 ]] || fail "hung node: n0 exit code"
finish n1; [[ $rc == 1 ]] || fail "hung node: n1 exit code"
(( SECONDS - t0 <= 10 )) || fail "hung node: took $((SECONDS - t0)) s"
echo "hung node: n0 and n1 ended within $((SECONDS - t0)) s of the stop"
pkill -CONT -P "$pid_n2"
finish n2; [[ $rc != 0 ]] || fail "hung node: n2 should exit non-zero once resumed"
# Stopped during compute, n2's stages never report; stopped during the optimizer step,
# they never acknowledge it: either way the coordinator names the stages it waits for.
expect_line "$work/hung-n0.log" "node n0: step [0-9]+: (no report from|no optimizer acknowledgement among) .*\(node n2\).* within 2.0 s"
# Resumed, n2 reads either the coordinator's last word or the closed connection.
# (or, its heartbeat clock resuming before its sockets are read, the coordinator's silence).
expect_line "$work/hung-n2.log" "node n2: (job stopped by n0: step [0-9]+: no (report|optimizer acknowledgement)|lost the coordinator's node n0|node n0 is silent)"

# 6b. A coordinator's node that hangs mid-run (stopped, its connections open): the others
#     hear no heartbeat and stop, naming it.
write_job "$work/beats.toml" 100000 7 10 "" "heartbeat_interval = 0.25
heartbeat_timeout = 1.5"
for n in n1 n2 n0; do start $n "$work/beats.toml" "$work/silent-$n.log"; done
for _ in $(seq 1 200); do grep -q '^step 3 ' "$work/silent-n0.log" 2>/dev/null && break; sleep 0.1; done
# n1 is interrupted first: it waits for the coordinator's node, which never ends the job,
# so its heartbeat timeout ends it as it ends n2.
pkill -INT -P "$pid_n1"
sleep 0.3
pkill -STOP -P "$pid_n0"
t0=$SECONDS
finish n1; [[ $rc == 1 ]] || fail "silent coordinator: n1 exit code $rc"
finish n2; [[ $rc == 1 ]] || fail "silent coordinator: n2 exit code $rc"
(( SECONDS - t0 <= 8 )) || fail "silent coordinator: took $((SECONDS - t0)) s"
echo "silent coordinator: n1 and n2 ended within $((SECONDS - t0)) s of the stop"
pkill -KILL -P "$pid_n0"
finish n0
expect_line "$work/silent-n1.log" "node n1: node n0 is silent: no heartbeat for 1.5 s"
grep -q "node n1: interrupted: its stages keep running" "$work/silent-n1.log" || fail "silent coordinator: n1 should say it was interrupted"
expect_line "$work/silent-n2.log" "node n2: node n0 is silent: no heartbeat for 1.5 s"

# 8. Ctrl-C in a terminal: SIGINT to the whole process group of the three nodes. The
#    members keep their stages until the coordinator's node has gathered pipeline 0's
#    stages (one of them on n1) for its final checkpoint, then every node exits 130.
#    A launcher leads the group (ignoring SIGINT itself) and records each node's exit code.
python3 - "$work/group" "$deepcee" node "$work/long.toml" <<'PY' &
import os, signal, subprocess, sys
os.setpgid(0, 0)
signal.signal(signal.SIGINT, signal.SIG_IGN)
out, cmd = sys.argv[1], sys.argv[2:]
nodes = {}
for n in ["n1", "n2", "n0"]:
    nodes[n] = subprocess.Popen(cmd + ["--name", n, "--out", out + "-run"],
                                stdout=open(f"{out}-{n}.log", "w"), stderr=subprocess.STDOUT,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
for n, p in nodes.items():
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = "timeout"
    open(f"{out}-{n}.rc", "w").write(str(rc))
PY
group=$!
pids+=($group)
for _ in $(seq 1 200); do grep -q '^step 3 ' "$work/group-n0.log" 2>/dev/null && break; sleep 0.1; done
kill -INT -- -"$group"
t0=$SECONDS
wait "$group"
(( SECONDS - t0 <= 10 )) || fail "Ctrl-C to the group: took $((SECONDS - t0)) s"
for n in n0 n1 n2; do
  [[ $(cat "$work/group-$n.rc" 2>/dev/null) == 130 ]] || fail "Ctrl-C to the group: $n exit $(cat "$work/group-$n.rc" 2>/dev/null): $(tail -3 "$work/group-$n.log")"
done
k=$(sed -n 's/^node n0: interrupted after step \([0-9]*\)$/\1/p' "$work/group-n0.log")
[[ -n $k ]] || fail "Ctrl-C to the group: n0 should say after which step it stopped"
for n in n1 n2; do
  grep -q "^node $n: stopped because the coordinator's node n0 was interrupted: Ctrl-C after step $k, checkpoint saved$" "$work/group-$n.log" ||
    fail "Ctrl-C to the group: $n should say the coordinator's node was interrupted: $(tail -2 "$work/group-$n.log")"
done
"$deepcee" eval --checkpoint "$work/group-run/checkpoint.safetensors" --data "$work/data" --batch 12 --batches 1 | grep -q "step $k)" ||
  fail "Ctrl-C to the group: the checkpoint of step '$k' does not evaluate"
ls "$work/group-run" | grep -q '\.tmp' && fail "Ctrl-C to the group: a temporary file was left behind"
echo "Ctrl-C to the group: checkpoint of step $k saved, every node exited 130 within $((SECONDS - t0)) s"

# 9. Ctrl-C on one member alone: it keeps serving and the job goes on; a second Ctrl-C ends
#    it at once (130), and the job goes on without it (pipeline 1 holds n1's layers) until
#    Ctrl-C on the coordinator's node ends it.
for n in n1 n2 n0; do start $n "$work/long.toml" "$work/twice-$n.log"; done
for _ in $(seq 1 200); do grep -q '^step 3 ' "$work/twice-n0.log" 2>/dev/null && break; sleep 0.1; done
pkill -INT -P "$pid_n1"
for _ in $(seq 1 50); do grep -q 'node n1: interrupted: its stages keep running' "$work/twice-n1.log" && break; sleep 0.1; done
k=$(grep -c '^step ' "$work/twice-n0.log")
for _ in $(seq 1 100); do (( $(grep -c '^step ' "$work/twice-n0.log") >= k + 3 )) && break; sleep 0.1; done
(( $(grep -c '^step ' "$work/twice-n0.log") >= k + 3 )) || fail "one Ctrl-C on n1: the job should go on"
pkill -INT -P "$pid_n1"
t0=$SECONDS
finish n1; [[ $rc == 130 ]] || fail "second Ctrl-C on n1: exit $rc"
# At once: without it n1 would serve until the job's 100000 steps end (5 s leaves room for
# a loaded 2-core machine; SECONDS counts whole seconds).
(( SECONDS - t0 <= 5 )) || fail "second Ctrl-C on n1: took $((SECONDS - t0)) s"
grep -q "^node n1: interrupted twice: leaving now" "$work/twice-n1.log" || fail "second Ctrl-C on n1: its line: $(tail -2 "$work/twice-n1.log")"
for _ in $(seq 1 100); do grep -q "node n1 lost (disconnected" "$work/twice-n0.log" && break; sleep 0.1; done
k=$(grep -c '^step ' "$work/twice-n0.log")
for _ in $(seq 1 100); do (( $(grep -c '^step ' "$work/twice-n0.log") >= k + 3 )) && break; sleep 0.1; done
(( $(grep -c '^step ' "$work/twice-n0.log") >= k + 3 )) || fail "n1 left: the job should go on without it: $(grep -i 'lost\|^node n0' "$work/twice-n0.log")"
pkill -INT -P "$pid_n0"
finish n0; [[ $rc == 130 ]] || fail "Ctrl-C on n0 after n1 left: n0 exit $rc"
finish n2; [[ $rc == 130 ]] || fail "Ctrl-C on n0 after n1 left: n2 exit $rc"
echo "Ctrl-C on one member: the job went on; a second one took n1 out within $((SECONDS - t0)) s, and the job went on without it"

# 10. The planner's plan for the cloud-edge-end cluster (configs/cee-mixed-nodes: one stage
#     of 8 devices over two cloud nodes) as two processes: the one-process run's losses and
#     virtual step times, bit for bit.
sed -e "s/^port = 29200/port = $p0/" -e "s/^port = 29201/port = $p1/" -e "s/^port = 29202/port = $p2/" \
  -e "s|^cluster = .*|cluster = \"$configs/clusters/cee-mixed.toml\"|" \
  -e "s|^plan = .*|plan = \"$configs/cee-mixed-nodes/plan.json\"|" \
  -e "s|^path = .*|path = \"$work/data\"|" "$configs/cee-mixed-nodes/job.toml" >"$work/cee.toml"
start end0 "$work/cee.toml" "$work/cee-end0.log" --steps 3
start cloud1 "$work/cee.toml" "$work/cee-cloud1.log" --steps 3
start cloud0 "$work/cee.toml" "$work/cee-cloud0.log" --steps 3
for n in cloud0 cloud1 end0; do
  finish $n
  [[ $rc == 0 ]] || fail "cee-mixed nodes: $n exit $rc: $(tail -3 "$work/cee-$n.log")"
done
"$deepcee" run "$work/cee.toml" --steps 3 --out "$work/cee-one" >/dev/null 2>&1 || fail "deepcee run of the cee-mixed job"
cmp -s <(cut -d, -f1-2,5 "$work/cee-one/metrics.csv") <(cut -d, -f1-2,5 "$work/out-cee-cloud0/metrics.csv") &&
  echo "cee-mixed plan over two nodes: 3 steps equal one process bit for bit" ||
  fail "cee-mixed nodes: losses or step times differ from one process"
grep -q "^node end0: the plan of the coordinator's node cloud0 uses none of its devices (.*50 Mbps.*); nothing to run$" "$work/cee-end0.log" ||
  fail "cee-mixed nodes: end0 should say the plan leaves it out: $(cat "$work/cee-end0.log")"
#     cloud1 runs no stage, only devices of cloud0's one stage: killed mid-step, it is named
#     at once, with the layers no other node held.
start cloud1 "$work/cee.toml" "$work/cee-lost-cloud1.log"
start cloud0 "$work/cee.toml" "$work/cee-lost-cloud0.log" --steps 100000
for _ in $(seq 1 200); do grep -q '^step 3 ' "$work/cee-lost-cloud0.log" 2>/dev/null && break; sleep 0.1; done
pkill -9 -P "$pid_cloud1"
t0=$SECONDS
finish cloud0; [[ $rc == 1 ]] || fail "cee-mixed lost devices: cloud0 exit $rc"
# At once, by the closed connection, not after the heartbeat timeout (3 s; SECONDS counts
# whole seconds).
(( SECONDS - t0 <= 4 )) || fail "cee-mixed lost devices: took $((SECONDS - t0)) s"
finish cloud1
expect_line "$work/cee-lost-cloud0.log" "node cloud0: step [0-9]+: node cloud1 lost \\(disconnected.*\\): no other node held layers 0-"
echo "cee-mixed lost devices: cloud0 ended within $((SECONDS - t0)) s of the kill, naming cloud1"

# 7. No coordinator: a node gives up after the connect timeout, naming the coordinator.
start n1 "$work/short.toml" "$work/alone.log"
finish n1; [[ $rc == 1 ]] || fail "no coordinator: exit code"
expect_line "$work/alone.log" "node n1: could not reach the coordinator's node n0 at 127.0.0.1:$p0 within 2"

# 12. Security (transport/): every node's port is a gate that only the job's token opens.
# rss_kb NAME: the resident memory of node NAME's process (the child of its `timeout`).
rss_kb() {
  local p child
  eval "p=\$pid_$1"
  child=$(pgrep -P "$p" | head -1)
  awk '/^VmRSS:/{print $2}' "/proc/${child:-$p}/status" 2>/dev/null || echo 0
}
losses() { grep '^step [0-9]* loss' "$1"; }
#     a) Noise at every node's port during a run: random bytes, a truncated handshake,
#        three 32-byte CAF headers that each claim a 4 GiB payload (held open), and a foreign
#        CAF node (one without the token, posing as n1): no node grows, crashes or stops,
#        and the losses are those of the same run without the noise.
noise_steps=400
write_job "$work/noise.toml" $noise_steps 7 10
run_nodes "$work/noise.toml" quiet "quiet run"
for n in n1 n2 n0; do start $n "$work/noise.toml" "$work/noise-$n.log" --step-timeout 20; done
for _ in $(seq 1 200); do grep -q '^step 2 ' "$work/noise-n0.log" 2>/dev/null && break; sleep 0.05; done
rss_before=$(($(rss_kb n0) + $(rss_kb n1) + $(rss_kb n2)))
python3 - "$p0" "$p1" "$p2" >"$work/noise-sender.log" 2>&1 <<'PY' &
import os, socket, struct, sys, time
held = []
for port in map(int, sys.argv[1:]):
    def conn():
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        return s
    with conn() as s:
        s.sendall(os.urandom(4096))
    with conn() as s:
        s.sendall(b"DCG1" + os.urandom(10))  # a truncated hello
        time.sleep(0.2)
    for _ in range(3):  # a BASP client_handshake header: op 1, 2 padding, flags,
        s = conn()      # payload_len 4 GiB - 1, 3 x u64 (CAF's own port allocates it)
        s.sendall(struct.pack(">BBBBIQQQ", 1, 0, 0, 0, 0xFFFFFFFF, 0, 0, 0))
        held.append(s)
print("sent", flush=True)
time.sleep(3)
PY
noise=$!
# A foreign CAF node at each node's port: a node without the token that takes that node for
# its coordinator's (its own port another, free one).
foreign=()
for k in 0 1 2; do
  eval "target=n$k; port=\$p$k"
  as=$([[ $k == 0 ]] && echo n1 || echo n0)
  eval "own=\$p${as#n}"
  pf=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  sed -e "s/^coordinator = .*/coordinator = \"$target\"/" -e "s/^port = $own\$/port = $pf/" \
    "$work/noise.toml" >"$work/foreign-$target.toml"
  timeout 30 "$deepcee" node "$work/foreign-$target.toml" --name "$as" --insecure --connect-timeout 2 \
    --out "$work/out-foreign-$target" >"$work/noise-foreign-$target.log" 2>&1 &
  foreign+=($!)
  pids+=($!)
done
for _ in $(seq 1 100); do grep -q '^sent' "$work/noise-sender.log" && break; sleep 0.05; done
sleep 0.3 # the headers are read (and, before the gate, their payloads allocated)
rss_during=0
for n in n0 n1 n2; do
  r=$(rss_kb $n)
  (( r > 0 )) || fail "noise: node $n had ended before the noise was all sent; make the job longer"
  rss_during=$((rss_during + r))
done
wait $noise
for n in n0 n1 n2; do
  finish $n
  [[ $rc == 0 ]] || fail "noise: node $n exit $rc: $(tail -3 "$work/noise-$n.log")"
done
for k in 0 1 2; do
  wait "${foreign[$k]}"
  [[ $? != 0 ]] || fail "noise: the foreign CAF node at n$k's port should fail"
done
grep -q '^sent' "$work/noise-sender.log" || fail "noise: the sender failed: $(cat "$work/noise-sender.log")"
# The nodes' resident memory grew by less than 64 MB (CAF allocated 212 MB to 4.3 GB per
# header before the gate).
(( rss_during - rss_before < 65536 )) || fail "noise: resident memory grew from $rss_before to $rss_during kB"
cmp -s <(losses "$work/quiet-n0.log") <(losses "$work/noise-n0.log") ||
  fail "noise: the losses differ from the quiet run"
[[ $(losses "$work/noise-n0.log" | wc -l) == "$noise_steps" ]] || fail "noise: not all $noise_steps steps ran"
# The foreign nodes never got through: each names the node it could not reach.
expect_line "$work/noise-foreign-n0.log" "node n1: could not reach the coordinator's node n0 at 127.0.0.1:$p0 within 2"
expect_line "$work/noise-foreign-n1.log" "node n0: could not reach the coordinator's node n1 at 127.0.0.1:$p1 within 2"
expect_line "$work/noise-foreign-n2.log" "node n0: could not reach the coordinator's node n2 at 127.0.0.1:$p2 within 2"
for n in n0 n1 n2; do
  grep -q "^node $n: refused a connection from 127.0.0.1:[0-9]*: the TLS handshake failed" "$work/noise-$n.log" ||
    fail "noise: $n should name the peer it refused: $(grep refused "$work/noise-$n.log" | head -3)"
done
echo "noise at every port: $noise_steps steps with the quiet run's losses; resident memory $rss_before -> $rss_during kB; $(grep -c refused "$work"/noise-n[012].log | awk -F: '{s+=$2} END {print s}') connections refused"

#     b) A wrong token: the member names the coordinator's node and its address within a
#        few seconds; the coordinator's node names the address it refused and goes on.
(umask 077 && openssl rand -hex 32 >"$work/other-token")
start n0 "$work/short.toml" "$work/token-n0.log"
for _ in $(seq 1 100); do grep -q 'coordinator at' "$work/token-n0.log" 2>/dev/null && break; sleep 0.05; done
t0=$SECONDS
write_job "$work/other-token.toml" 5 7 2 "" "[security]
token_file = \"other-token\"" # relative to the job file; before the environment's
start n1 "$work/other-token.toml" "$work/token-n1.log"
finish n1; [[ $rc == 1 ]] || fail "wrong token: n1 exit $rc"
(( SECONDS - t0 <= 5 )) || fail "wrong token: took $((SECONDS - t0)) s"
expect_line "$work/token-n1.log" "node n1: cannot authenticate node n0 at 127.0.0.1:$p0: it does not hold the job's token"
finish n0
grep -q "^node n0: refused a connection from 127.0.0.1:[0-9]*: " "$work/token-n0.log" || fail "wrong token: n0 should name the peer it refused"
grep -q "^node n0: refused a connection from 127.0.0.1:[0-9]*: it does not hold the job's token (its PSK identity is another job's)" "$work/token-n0.log" ||
  fail "wrong token: n0 should say the PSK identity is another job's: $(grep refused "$work/token-n0.log")"
#     c) No token, a weak one, or one that others may read: exit 2 in one line naming the flag
#        or the file, before any port opens.
out=$(env -u DEEPCEE_TOKEN_FILE "$deepcee" node "$work/short.toml" --name n0 2>&1); rc=$?
[[ $rc == 2 && $out == *"--token-file"*"--insecure"* ]] || fail "no token: exit $rc: $out"
# refuse_token WHAT FILE PATTERN
refuse_token() {
  local out rc
  out=$("$deepcee" node "$work/short.toml" --name n0 --token-file "$2" 2>&1); rc=$?
  [[ $rc == 2 && $(printf '%s\n' "$out" | grep -c .) == 1 && $out == *"$3"* ]] || fail "$1: exit $rc: $out"
}
(umask 077 && echo "short" >"$work/short-token" && echo "passwordpasswordpasswordpassword" >"$work/weak-token")
refuse_token "short token" "$work/short-token" "$work/short-token: the job token is too weak: about 24 bits of entropy, at least 128 are needed (make one with \`(umask 077; openssl rand -hex 32 > FILE)\`)"
refuse_token "a word repeated" "$work/weak-token" "$work/weak-token: the job token is too weak: about 38 bits"
cp "$work/token" "$work/shared-token" && chmod 640 "$work/shared-token"
refuse_token "group-readable token" "$work/shared-token" "$work/shared-token: the token file may be read by group or others (mode 0640); a secret must be private, as ssh wants its keys: chmod 600 $work/shared-token"
out=$(DEEPCEE_TOKEN=passwordpasswordpasswordpassword env -u DEEPCEE_TOKEN_FILE "$deepcee" node "$work/short.toml" --name n0 2>&1); rc=$?
[[ $rc == 2 && $out == *"DEEPCEE_TOKEN: the job token is too weak"* ]] || fail "weak DEEPCEE_TOKEN: exit $rc: $out"
#     The token's text is in no log or output of any run above.
! grep -rqF "$(cat "$work/token")" "$work"/*.log "$work"/out-* 2>/dev/null || fail "the token appears in a log"
echo "wrong token: n1 ended within $((SECONDS - t0)) s naming n0's address; no token: exit 2"

#     --insecure: no token, no gate; CAF on the nodes' ports as before.
run_nodes "$work/short.toml" insecure "insecure run" --insecure
[[ $(losses "$work/insecure-n0.log" | wc -l) == 5 ]] || fail "insecure run: not 5 steps"

#     e) Strangers who hold connections open: 64 idle ones at every node's port, each reopened
#        as soon as a gate closes it, while the members join and `deepcee inject` gets
#        through. Every node ends 0 after all its steps.
write_job "$work/strangers.toml" 1000 7 20
start n0 "$work/strangers.toml" "$work/strangers-n0.log"
python3 "$(dirname "$0")/hold_connections.py" 64 60 "$p0" "$p1" "$p2" >"$work/strangers.out" 2>&1 &
strangers=$!
pids+=($strangers)
for _ in $(seq 1 100); do grep -q "^holding $p0\$" "$work/strangers.out" && break; sleep 0.05; done
grep -q "^holding $p0\$" "$work/strangers.out" || fail "strangers: not holding n0's port: $(cat "$work/strangers.out")"
for n in n1 n2; do start $n "$work/strangers.toml" "$work/strangers-$n.log"; done
for _ in $(seq 1 200); do grep -q '^step 2 ' "$work/strangers-n0.log" 2>/dev/null && break; sleep 0.05; done
for _ in $(seq 1 100); do [[ $(grep -c '^holding' "$work/strangers.out") == 3 ]] && break; sleep 0.05; done
[[ $(grep -c '^holding' "$work/strangers.out") == 3 ]] || fail "strangers: not at every port: $(cat "$work/strangers.out")"
timeout 30 "$deepcee" inject "127.0.0.1:$p0" --event 'change = { between = ["cloud", "edge"], bandwidth_scale = 1.0 }' \
  >"$work/strangers-inject.out" 2>&1 || fail "strangers: inject failed: $(cat "$work/strangers-inject.out")"
grep -q "in force from step" "$work/strangers-inject.out" || fail "strangers: inject: $(cat "$work/strangers-inject.out")"
for n in n0 n1 n2; do
  finish $n
  [[ $rc == 0 ]] || fail "strangers: node $n exit $rc: $(tail -3 "$work/strangers-$n.log")"
done
[[ $(losses "$work/strangers-n0.log" | wc -l) == 1000 ]] || fail "strangers: not all 1000 steps ran"
kill "$strangers" 2>/dev/null
wait "$strangers" 2>/dev/null
echo "64 strangers at every port: the members joined, $(cat "$work/strangers-inject.out"), 1000 steps; $(grep -h 'sent nothing within' "$work"/strangers-n[012].log | wc -l) idle connections closed (logged, rate-limited)"

#     d) A member stopped (SIGSTOP) past the heartbeat timeout: the coordinator's node
#        declares it lost and the job goes on without it; resumed, the member is told it is
#        out of the job, says so in one line and exits 1, without blaming the coordinator's
#        node for the silence.
for n in n1 n2 n0; do start $n "$work/beats.toml" "$work/stopped-$n.log"; done
for _ in $(seq 1 200); do grep -q '^step 3 ' "$work/stopped-n0.log" 2>/dev/null && break; sleep 0.1; done
pkill -STOP -P "$pid_n2"
sleep 3
pkill -CONT -P "$pid_n2"
finish n2; [[ $rc == 1 ]] || fail "stopped member: n2 exit $rc"
expect_line "$work/stopped-n2.log" "node n2: node n0 heard no heartbeat from this node for 1.5 s, and the job went on without it: it is out of the job"
! grep -q "node n0 is silent" "$work/stopped-n2.log" || fail "stopped member: n2 blames n0: $(grep silent "$work/stopped-n2.log")"
grep -q "node n2 lost (no heartbeat for 1.5 s): the job goes on" "$work/stopped-n0.log" || fail "stopped member: n0 did not declare n2 lost: $(grep -i lost "$work/stopped-n0.log")"
k=$(grep -c '^step ' "$work/stopped-n0.log")
for _ in $(seq 1 100); do (( $(grep -c '^step ' "$work/stopped-n0.log") >= k + 3 )) && break; sleep 0.1; done
(( $(grep -c '^step ' "$work/stopped-n0.log") >= k + 3 )) || fail "stopped member: the job should go on without n2"
pkill -INT -P "$pid_n0"
for n in n0 n1; do finish $n; [[ $rc == 130 ]] || fail "stopped member: $n exit $rc after Ctrl-C on n0"; done
echo "stopped member: n0 declared n2 lost and went on; n2, resumed: $(grep '^node n2: ' "$work/stopped-n2.log" | tail -1)"

#     e) A member that stalls for 2 s (SIGSTOP, then SIGCONT), under the default heartbeat
#        timeout (3 s), is slow, not lost: the job ends all its steps on the three nodes.
write_job "$work/stall.toml" 600 7 10
for n in n1 n2 n0; do start $n "$work/stall.toml" "$work/stall-$n.log"; done
for _ in $(seq 1 200); do grep -q '^step 3 ' "$work/stall-n0.log" 2>/dev/null && break; sleep 0.1; done
pkill -STOP -P "$pid_n2"
sleep 2
pkill -CONT -P "$pid_n2"
for n in n0 n1 n2; do finish $n; [[ $rc == 0 ]] || fail "stalled member: $n exit $rc: $(tail -2 "$work/stall-$n.log")"; done
! grep -q "lost" "$work/stall-n0.log" || fail "stalled member: declared lost: $(grep lost "$work/stall-n0.log")"
[[ $(grep -c '^step [0-9]* loss' "$work/stall-n0.log") == 600 ]] || fail "stalled member: not all 600 steps"
echo "stalled member: a 2 s stop of n2 under the 3 s heartbeat timeout; all 600 steps on the three nodes"

# 13. Layers held once: peer snapshots. One pipeline across the three nodes (layer 0 on n0,
#     layers 1-2 on n1, layer 3 on n2), so each layer lives on one node only: its stages
#     snapshot to a stage on another node every 5 steps ([recovery] snapshot_every). n1 is
#     killed (kill -9) after a snapshot; the job rolls back to the newest complete one on the
#     planner's plan for n0 and n2, replays the steps since with the same samples, and ends
#     all its steps with single-device training's losses.
python3 - "$configs/local-cluster/plan.json" "$work/plan-once.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
pipe = plan["pipelines"][0]
pipe["micro_batches"] = 6
pipe["schedule"] = "1f1b"
pipe["stages"] = [
    {"devices": [0], "samples": [2], "first_layer": 0, "last_layer": 1, "send_compression": "none"},
    {"devices": [4], "samples": [2], "first_layer": 1, "last_layer": 3, "send_compression": "none"},
    {"devices": [5], "samples": [2], "first_layer": 3, "last_layer": 4, "send_compression": "none"},
]
plan["pipelines"] = [pipe]
plan["strategy"] = "one-pipeline"
json.dump(plan, open(sys.argv[2], "w"), indent=1)
PY
once_steps=$lost_steps # the single-device run of section 5: the same schedule of rates
# snapshot_rollback TIME: the section in time mode TIME (the adapter off: no other re-plan).
snapshot_rollback() {
  write_job "$work/once.toml" $once_steps 7 10 "$work/plan-once.json" $'[recovery]\nsnapshot_every = 5'
  sed -i "s/^time = .*/time = \"$1\"\nadapt = false/" "$work/once.toml"
  for n in n1 n2 n0; do start $n "$work/once.toml" "$work/once-$1-$n.log"; done
  for _ in $(seq 1 400); do grep -q '^step 12 ' "$work/once-$1-n0.log" 2>/dev/null && break; sleep 0.05; done
  grep -q '^step 12 ' "$work/once-$1-n0.log" ||
    fail "snapshots ($1): no step 12 within 20 s; n1: $(ps -o pid=,stat=,wchan=,etime= --ppid "$pid_n1")"
  pkill -9 -P "$pid_n1"
  killed_at=$(date +%s.%N)
  for _ in $(seq 1 400); do grep -q "rollback: the job goes back" "$work/once-$1-n0.log" && break; sleep 0.025; done
  rolled_s=$(awk -v a="$killed_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  finish n0; [[ $rc == 0 ]] || fail "snapshots ($1): n0 exit $rc: $(tail -3 "$work/once-$1-n0.log")"
  finish n2; [[ $rc == 0 ]] || fail "snapshots ($1): n2 exit $rc: $(tail -3 "$work/once-$1-n2.log")"
  finish n1
  grep -q "snapshots: layers 0-3 live on one node only; pipeline 0's 3 stage(s) snapshot every 5 step(s)" "$work/once-$1-n0.log" ||
    fail "snapshots ($1): no snapshot line on n0: $(grep -i snapshot "$work/once-$1-n0.log")"
  python3 - "$work/single-lost/metrics.csv" "$work/once-$1-n0.log" $once_steps "$1" <<'PY' || fail "snapshots ($1): rollback or losses"
import csv, re, sys
single = {int(r["step"]): float(r["loss"]) for r in csv.DictReader(open(sys.argv[1]))}
log = open(sys.argv[2]).read()
lost = re.search(r"node n1 lost \(disconnected: .*\): no other node held layers 1-2; the job rolls back to its snapshot of step (\d+)", log)
assert lost, "no rollback line"
back = re.search(r"rollback: the job goes back to the snapshot of step (\d+); steps? (\d+)(?:-(\d+))? run again", log)
snapshot, first, step = int(back[1]), int(back[2]), int(back[3] or back[2])
assert snapshot == int(lost[1]) and snapshot % 5 == 0 and first == snapshot + 1 and step > snapshot, back[0]
steps = {int(m[0]): float(m[1]) for m in re.findall(r"^step (\d+) loss ([0-9.]+)", log, re.M)}
assert sorted(steps) == list(range(1, int(sys.argv[3]) + 1)), "steps missing"
worst = max(abs(l - single[k]) / single[k] for k, l in steps.items())
assert worst <= 1e-3, worst
ran = f"step {step}" if first == step else f"steps {first}-{step}"
print(f"snapshots ({sys.argv[4]}): n1 killed in step {step}, the job rolled back to the snapshot of step {snapshot} "
      f"and ran {ran} again on n0 and n2; all {len(steps)} steps, worst relative loss "
      f"difference from single-device training {worst:.1e}")
PY
  echo "snapshots ($1): the rollback began $rolled_s s after the kill"
}
snapshot_rollback virtual
# In wall time the snapshots travel and the kill comes at a real moment.
snapshot_rollback wall

if ((failures)); then
  echo "$failures failure(s); logs:"
  for f in "$work"/*.log; do echo "== $f"; cat "$f"; done
  exit 1
fi
grep -h '^deepcee node' "$work"/{missing,port,wrong,lost,hung,silent,twice,alone,token,stopped}*.log
echo "multiprocess: all checks passed"

#!/usr/bin/env bash
# deepcee lab on this host: a 3-node lab's namespaces, addresses and qdiscs as the cluster
# file says (read back with ip -j and tc -j), shaped rates measured by a transfer between
# namespaces, a tiny wall-time job run through `lab run` with its script applied to the lab
# (the qdisc seen changed while it runs, lab-events.csv), and bad input: no root, no ip or
# tc, a cluster too large, a lab already up, a job of another cluster, scripts naming an
# unknown node or no path, a failure mid-build rolled back. Whatever happens, nothing with
# the test's prefixes is left (namespaces, cgroups, processes).
#   lab_test.sh PATH/TO/deepcee CONFIGS_DIR
set -u
deepcee=$1
configs=$(cd "$2" && pwd)
rate_py=$configs/../tools/lab_rate.py # a TCP transfer between namespaces
source "$(dirname "$0")/lab_requirements.sh"

work=$(mktemp -d)
state=$work/state
prefixes=(dctest dctbad)
leftovers() { # what is left with the test's prefixes: namespaces, cgroups, processes
  local p
  for p in "${prefixes[@]}"; do
    ip netns list | grep -E "^$p-" | sed 's/^/namespace /'
    ls -d /sys/fs/cgroup/cpu/"$p"-* /sys/fs/cgroup/"$p"-* 2>/dev/null | sed 's/^/cgroup /'
  done
  pgrep -af -- "$work/" | grep -v pgrep | sed 's/^/process /'
}
cleanup() {
  local p
  for p in "${prefixes[@]}"; do "$deepcee" lab down --prefix "$p" --state-dir "$state" >/dev/null 2>&1; done
  [[ -n ${watcher:-} ]] && kill "$watcher" 2>/dev/null
  local left
  left=$(leftovers)
  [[ -z $left ]] || { echo "FAIL: left behind after lab down: $left"; failures=$((failures + 1)); }
  [[ -n $keep ]] && cp -r "$work" "$keep"
  rm -rf "$work"
  echo "lab test: $failures failure(s)"
  exit $((failures > 0))
}
trap cleanup EXIT
keep=${LAB_TEST_KEEP:-}
source "$(dirname "$0")/test_lib.sh"

# cloud: n0 (100 Mbps nic), n1 (50 Mbps); edge: n2 (unshaped); 20 Mbps between the regions.
cat >"$work/cluster.toml" <<'TOML'
name = "lab-3"
[links]
same_node = { bandwidth = "16GB/s", latency = "10us" }
same_region = { bandwidth = "1Gbps", latency = "1ms" }
cross_region = { bandwidth = "20Mbps", latency = "10ms" }
[[region]]
name = "cloud"
tier = "cloud"
[[region]]
name = "edge"
tier = "edge"
[[node]]
name = "n0"
region = "cloud"
nic = "100Mbps"
devices = [{ kind = "A100-80GB", count = 2 }, { kind = "T4", count = 2 }]
[[node]]
name = "n1"
region = "cloud"
nic = "50Mbps"
devices = [{ kind = "Jetson-AGX-Orin", count = 1 }]
[[node]]
name = "n2"
region = "edge"
devices = [{ kind = "Jetson-AGX-Orin", count = 2 }]
TOML
lab() { "$deepcee" lab "$@" --state-dir "$state"; }

# 1. Bad input before any lab: one line, exit 2, nothing built.
err=$(setpriv --inh-caps=-net_admin --bounding-set=-net_admin "$deepcee" lab up "$work/cluster.toml" --prefix dctbad --state-dir "$state" 2>&1 >/dev/null)
rc=$?
[[ $rc == 2 && $err == *"needs root (CAP_NET_ADMIN)"* && $(wc -l <<<"$err") == 1 ]] || fail "without CAP_NET_ADMIN: exit $rc: $err"
err=$(PATH=/nonexistent "$deepcee" lab up "$work/cluster.toml" --prefix dctbad --state-dir "$state" 2>&1 >/dev/null)
rc=$?
[[ $rc == 2 && $err == *"'ip' is not on PATH"* ]] || fail "without ip on PATH: exit $rc: $err"
expect_error "cluster too large" "cee-1024.toml: cluster 'cee-1024' has 464 nodes; this host holds a lab of at most" -- \
  lab up "$configs/clusters/cee-1024.toml" --prefix dctbad --state-dir "$state"
expect_error "bad prefix" "prefix 'Bad!'" -- lab up "$work/cluster.toml" --prefix 'Bad!' --state-dir "$state"
expect_error "bad --cpu" "--cpu 'n7=1'" -- lab up "$work/cluster.toml" --prefix dctbad --cpu n7=1 --state-dir "$state"
expect_error "status of no lab" "no lab is up under prefix 'dctbad'" -- lab status --prefix dctbad --state-dir "$state"
# A failure mid-build (here: the state file cannot be written) rolls back all that was made.
err=$("$deepcee" lab up "$work/cluster.toml" --prefix dctbad --state-dir /dev/null/x 2>&1)
[[ $? == 1 ]] || fail "a failure mid-build should exit 1: $err"
[[ -z $(leftovers) ]] || fail "a failed lab up left: $(leftovers)"
[[ $(lab down --prefix dctbad) == "lab dctbad: nothing to remove" ]] || fail "lab down of no lab"

# 2. The lab: namespaces, addresses, qdiscs as the file says.
out=$(lab up "$work/cluster.toml" --prefix dctest --cpu n2=1.5) || fail "lab up: $out"
echo "$out"
[[ $out == *"no netem"* || $out == *"latencies are left out"* ]] || fail "lab up should say what it leaves out: $out"
for ns in dctest-r0 dctest-r1 dctest-n0 dctest-n1 dctest-n2; do
  ip netns list | grep -q "^$ns\b" || fail "namespace $ns missing"
done
addr_of() { ip -n "$1" -j addr show dev "$2" | python3 -c 'import json,sys; print(" ".join(a["local"] for i in json.load(sys.stdin) for a in i["addr_info"] if a["family"]=="inet"))'; }
rate_of() { tc -n "$1" -j qdisc show dev "$2" | python3 -c 'import json,sys; q=[q for q in json.load(sys.stdin) if q["kind"]=="tbf"]; print(q[0]["options"]["rate"]*8 if q else "none")'; }
[[ $(addr_of dctest-n0 dctest-nic) == 10.99.0.2 ]] || fail "n0's address: $(addr_of dctest-n0 dctest-nic)"
[[ $(addr_of dctest-n2 dctest-nic) == 10.99.1.2 ]] || fail "n2's address: $(addr_of dctest-n2 dctest-nic)"
check_rate() { # NS DEV BITS
  local r
  r=$(rate_of "$1" "$2")
  [[ $r == "$3" ]] || fail "$1/$2 shaped to $r bit/s, expected $3"
}
check_rate dctest-n0 dctest-nic 100000000
check_rate dctest-r0 dctest-n0 100000000
check_rate dctest-n1 dctest-nic 50000000
check_rate dctest-r0 dctest-n1 50000000
check_rate dctest-r0 dctest-w1 20000000
check_rate dctest-r1 dctest-w0 20000000
check_rate dctest-n2 dctest-nic none
[[ $(cat /sys/fs/cgroup/cpu/dctest-n2/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 /sys/fs/cgroup/dctest-n2/cpu.max) == 150000 ]] ||
  fail "n2's CPU quota is not 1.5 cores"
expect_error "lab already up" "a lab is already up under prefix 'dctest'" -- lab up "$work/cluster.toml" --prefix dctest --state-dir "$state"
ip netns list | grep -q "^dctest-n0\b" || fail "a refused second lab up removed the first lab"
lab status --prefix dctest | grep -E "wan cloud<->edge \(->\) +dctest-r0/dctest-w1 +20 Mbit/s +20 Mbit/s" >/dev/null ||
  fail "lab status: $(lab status --prefix dctest)"

# 3. Shaped rates, measured: a 3 s transfer from one namespace to another (loose bounds).
measure() { # FROM_NS TO_NS TO_ADDR BITS: prints Mbit/s received
  ip netns exec "$2" python3 "$rate_py" rx "$3" 5201 >"$work/rx" &
  local rx=$!
  sleep 0.5
  ip netns exec "$1" python3 "$rate_py" tx "$3" 5201 --bytes $(($4 * 3 / 8))
  wait $rx
  cat "$work/rx"
}
within() { python3 -c "import sys; m, s = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if 0.6 * s <= m <= 1.1 * s else 1)" "$1" "$2"; }
m=$(measure dctest-n0 dctest-n1 10.99.0.3 50000000)
echo "measured n0 -> n1 (n1's nic, set 50 Mbit/s): $m Mbit/s"
within "$m" 50 || fail "n0 -> n1 measured $m Mbit/s, shaped 50"
m=$(measure dctest-n2 dctest-n0 10.99.0.2 20000000)
echo "measured n2 -> n0 (the WAN path, set 20 Mbit/s): $m Mbit/s"
within "$m" 20 || fail "n2 -> n0 measured $m Mbit/s, shaped 20"

# 4. A tiny wall-time job through lab run, the WAN cut to 5 Mbps when it starts step 4,
#    n1's interface to 10 Mbps at step 6, n2's CPU quota cut to a third at step 2, n1
#    stopped 1 s after the start and resumed 1 s later: the qdisc changes while it runs, every
#    event is logged, the job ends well, and the lab is put back.
write_corpus "$work/data"
cat >"$work/script.toml" <<'TOML'
[[device]]
step = 2
device = "n2/0"
slowdown = 3
[[node]]
at = 1
node = "n1"
action = "stop"
[[node]]
at = 2
node = "n1"
action = "resume"
[[change]]
step = 4
between = ["cloud", "edge"]
bandwidth = "5Mbps"
[[change]]
step = 6
of = "n1"
bandwidth = "10Mbps"
TOML
cat >"$work/job.toml" <<TOML
name = "lab-test"
time = "wall"
cluster = "cluster.toml"
plan = "$configs/local-cluster/plan.json"
coordinator = "n0"
connect_timeout = 20
[[node]]
name = "n0"
port = 29100
[[node]]
name = "n1"
port = 29101
[[node]]
name = "n2"
port = 29102
[train]
seed = 7
steps = 100
batch = 12
out = "$work/runs"
[train.model]
n_layer = 2
d_model = 32
n_head = 2
context = 16
[train.data]
path = "$work/data/a.txt"
val_fraction = 0.05
[inject]
script = "script.toml"
TOML
cp "$work/job.toml" "$work/job.orig"
( while sleep 0.05; do [[ $(rate_of dctest-r0 dctest-w1 2>/dev/null) == 5000000 ]] && touch "$work/seen-5mbit"; done ) 2>/dev/null &
watcher=$!
lab run "$work/job.toml" --prefix dctest --out "$work/run" >"$work/run.out" 2>&1 || fail "lab run: $(cat "$work/run.out"; tail -5 "$work"/run/*.log)"
kill "$watcher" 2>/dev/null
cat "$work/run.out"
[[ -f $work/seen-5mbit ]] || fail "the WAN's qdisc was never seen at 5 Mbit/s during the run"
cmp -s "$work/job.toml" "$work/job.orig" || fail "lab run changed the user's job file"
grep -Eq "host = [\"']10.99.1.2[\"']" "$work/run/job.toml" || fail "derived job: n2 not at its lab address"
grep -q '^\[inject\]' "$work/run/job.toml" && fail "derived job still has [inject]"
[[ $(tail -n +2 "$work/run/job/metrics.csv" | wc -l) == 100 ]] || fail "the job did not run 100 steps"
python3 - "$work/run/lab-events.csv" <<'PY' || fail "lab-events.csv: $(cat "$work/run/lab-events.csv")"
import csv, sys
rows = {r["event"]: r for r in csv.DictReader(open(sys.argv[1]))}
assert len(rows) == 5, rows
wan, nic = rows["link cloud<->edge bandwidth 5 Mbps"], rows["links of n1 bandwidth 10 Mbps"]
assert int(wan["step"]) >= 3 and "20Mbit -> 5Mbit" in wan["lab"], wan
assert int(nic["step"]) >= 5 and "dctest-n1/dctest-nic 50Mbit -> 10Mbit" in nic["lab"], nic
cpu = rows["device n2/0 slowdown x3"]
assert int(cpu["step"]) >= 1 and cpu["lab"] == "cpu quota 0.500000 cores", cpu
stop, resume = rows["node n1 stop"], rows["node n1 resume"]
assert stop["lab"].startswith("SIGSTOP to pid") and float(stop["wall_s"]) >= 1, stop
assert resume["lab"].startswith("SIGCONT to pid") and float(resume["wall_s"]) >= 2, resume
print("lab events:", [(r["wall_s"], r["step"], e) for e, r in rows.items()])
PY
check_rate dctest-r0 dctest-w1 20000000 # put back after the run
[[ $(cat /sys/fs/cgroup/cpu/dctest-n2/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 /sys/fs/cgroup/dctest-n2/cpu.max) == 150000 ]] ||
  fail "n2's CPU quota not put back to 1.5 cores after the run"
for n in n0 n1 n2; do [[ -s $work/run/$n.log ]] || fail "no log of $n"; done

# 4b. A partition and a kill: n1's interface goes down, n2 is killed; lab run exits 1 with
#     every node ended, and puts n1's interface back up.
printf '[[node]]\nstep = 3\nnode = "n1"\naction = "partition"\n[[node]]\nstep = 3\nnode = "n2"\naction = "kill"\n' >"$work/script.toml"
lab run "$work/job.toml" --prefix dctest --out "$work/run-kill" >"$work/run-kill.out" 2>&1
rc=$?
[[ $rc == 1 ]] || fail "lab run with a node killed: exit $rc, expected 1: $(cat "$work/run-kill.out")"
grep -q 'node n2: exit 137' "$work/run-kill.out" || fail "n2 should end by SIGKILL: $(cat "$work/run-kill.out")"
grep -q '"node n1 partition","dctest-n1/dctest-nic down"' "$work/run-kill/lab-events.csv" ||
  fail "no partition in lab-events.csv: $(cat "$work/run-kill/lab-events.csv")"
grep -q '"node n2 kill","SIGKILL to pid' "$work/run-kill/lab-events.csv" || fail "no kill in lab-events.csv"
ip -n dctest-n1 -j link show dev dctest-nic | grep -q '"UP"' || fail "n1's interface not put back up after the run"
ip -n dctest-n1 route show default | grep -q "via 10.99.0.1" || fail "n1's default route not put back after the run"
[[ -z $(pgrep -af -- "$work/run-kill/job.toml" | grep -v pgrep) ]] || fail "nodes left after lab run ended"

# 4d. A partition that heals: n1's interface goes down at step 3. n0 hears no heartbeat from
#     it for 3 s and goes on without it (pipeline 1 holds every layer); n1, hearing none from
#     n0 either, leaves. The job ends its 100 steps with the undisturbed run's losses, and lab
#     run exits 0: a member lost on the way does not fail the job.
printf '[[node]]\nstep = 3\nnode = "n1"\naction = "partition"\n[[node]]\nstep = 40\nnode = "n1"\naction = "heal"\n' >"$work/script.toml"
lab run "$work/job.toml" --prefix dctest --out "$work/run-part" >"$work/run-part.out" 2>&1 ||
  fail "lab run with a partition: exit $?: $(cat "$work/run-part.out")"
grep -q "node n1 lost (no heartbeat for 3.0 s): the job goes on" "$work/run-part/n0.log" ||
  fail "partition: n0 did not go on without n1: $(grep -i 'lost\|failed' "$work/run-part/n0.log")"
grep -Eq 'node n1: exit [1-9]' "$work/run-part.out" || fail "partition: n1 should leave: $(cat "$work/run-part.out")"
python3 - "$work/run/job/metrics.csv" "$work/run-part/job/metrics.csv" <<'PY' || fail "partition: losses"
import csv, sys
quiet, parted = (list(csv.DictReader(open(f))) for f in sys.argv[1:3])
assert len(parted) == len(quiet) == 100, (len(parted), len(quiet))
worst = max(abs(float(a["loss"]) - float(b["loss"])) / float(a["loss"]) for a, b in zip(quiet, parted))
assert worst <= 1e-3, worst
print(f"partition: n1 cut off at step 3, the job went on without it; 100 steps, worst relative loss difference {worst:.1e}")
PY

# 4c. Ctrl-C: passed on to every node once; the coordinator saves its checkpoint; exit 130.
: >"$work/script.toml"
"$deepcee" lab run "$work/job.toml" --prefix dctest --state-dir "$state" --out "$work/run-int" -- --steps 100000 >"$work/run-int.out" 2>&1 &
runner=$!
for _ in $(seq 1 300); do
  [[ $(wc -l <"$work/run-int/job/metrics.csv" 2>/dev/null || echo 0) -gt 3 ]] && break
  sleep 0.1
done
kill -INT $runner
wait $runner
rc=$?
[[ $rc == 130 ]] || fail "lab run after Ctrl-C: exit $rc, expected 130: $(cat "$work/run-int.out")"
[[ -f $work/run-int/job/checkpoint.safetensors ]] || fail "no checkpoint after Ctrl-C"
[[ -z $(pgrep -af -- "$work/run-int/job.toml" | grep -v pgrep) ]] || fail "nodes left after Ctrl-C"

# 5. Jobs and scripts that do not fit the lab: one line, exit 2, nothing started.
sed 's/^time = "wall"/time = "wall"\nshape_links = true/' "$work/job.toml" >"$work/job-shaped.toml"
sed 's/^time = "wall"/time = "virtual"/' "$work/job.toml" >"$work/job-virtual.toml"
for j in job-shaped job-virtual; do
  expect_error "$j" "$j.toml: a lab runs jobs in time = \"wall\" without shape_links" -- lab run "$work/$j.toml" --prefix dctest --state-dir "$state"
done
sed 's/^time = "virtual"/time = "wall"/' "$configs/default.toml" | sed "s|clusters/edge-end.toml|$configs/clusters/edge-end.toml|; s|default-script.toml|$configs/default-script.toml|" >"$work/default-wall.toml"
expect_error "a job of another cluster" "are not the lab's" -- lab run "$work/default-wall.toml" --prefix dctest --state-dir "$state"
printf '[[node]]\nstep = 2\nnode = "n9"\naction = "partition"\n' >"$work/script.toml"
expect_error "a script naming an unknown node" "script.toml:3: unknown node 'n9'" -- lab run "$work/job.toml" --prefix dctest --state-dir "$state"
printf '[[change]]\nstep = 2\nbetween = ["n0", "n1"]\nbandwidth_scale = 0.5\n[[change]]\nstep = 2\nbetween = ["edge", "edge"]\nbandwidth = 1\n' >"$work/script.toml"
expect_error "a script naming no path" "script.toml:5: this change names no path of the lab" -- lab run "$work/job.toml" --prefix dctest --state-dir "$state"
expect_error "lab run sets --out itself" "sets the nodes' --out" -- lab run "$work/job.toml" --prefix dctest --state-dir "$state" -- --out x

# 6. Down removes everything, the nodes of a crashed lab run included, and twice is fine.
: >"$work/script.toml"
"$deepcee" lab run "$work/job.toml" --prefix dctest --state-dir "$state" --out "$work/run-crash" -- --steps 100000 >/dev/null 2>&1 &
runner=$!
for _ in $(seq 1 300); do
  [[ $(wc -l <"$work/run-crash/job/metrics.csv" 2>/dev/null || echo 0) -gt 3 ]] && break
  sleep 0.1
done
kill -9 $runner
wait $runner 2>/dev/null
[[ -n $(pgrep -af -- "$work/run-crash/job.toml" | grep -v pgrep) ]] || fail "the crashed run's nodes should still run before lab down"
lab down --prefix dctest | grep -q "removed 5 namespaces" || fail "lab down"
[[ -z $(leftovers) ]] || fail "left after lab down: $(leftovers)"
[[ $(lab down --prefix dctest) == "lab dctest: nothing to remove" ]] || fail "second lab down"

#!/usr/bin/env bash
# The inspection endpoint under attack before any authentication, against a real
# `deepcee run` with a token: an endless request line (300 MB), header lines without end
# (300 MB) and idle connections from 20 addresses at once. The job's memory stays within
# 64 MB of what it was (VmRSS sampled throughout), a client with the watch credential on
# another address gets /api/snapshot and /metrics all along, refused peers are logged by
# address and rate-limited, and the job goes on to later steps.
#   inspect_flood_test.sh PATH/TO/deepcee CONFIGS_DIR
set -u
deepcee=$1
configs=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
started=()
cleanup() {
  for pid in "${started[@]}"; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$(dirname "$0")/test_lib.sh"

write_corpus "$work/data"
cat >"$work/job.toml" <<TOML
name = "inspect-flood"
time = "virtual"
cluster = "$configs/local-cluster/cluster.toml"
plan = "$configs/local-cluster/plan.json"
[train]
seed = 7
steps = 100000
batch = 12
checkpoint_every = 0
eval_every = 0
[train.model]
n_layer = 2
d_model = 32
n_head = 2
context = 16
[train.data]
path = "$work/data"
TOML
token=$(openssl rand -hex 32)
(umask 077 && echo "$token" >"$work/token")
watch=$("$deepcee" inspect --watch-credential --token-file "$work/token")
DEEPCEE_TOKEN=$token "$deepcee" run "$work/job.toml" --out "$work/out" >"$work/job.log" 2>&1 &
job=$!
started+=("$job")
addr=""
for _ in $(seq 1 200); do
  addr=$(sed -n 's|^inspect: http://||p' "$work/job.log")
  [[ -n $addr ]] && break
  sleep 0.1
done
[[ -n $addr ]] || { echo "FAIL: no endpoint: $(tail -3 "$work/job.log")"; exit 1; }

rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$job/status"; }
step_now() {
  "$deepcee" inspect "$addr" --once --token-file "$work/token" 2>/dev/null |
    sed -n 's|^.*step \([0-9]*\)/.*|\1|p' | head -1
}
# get PATH: one request from 127.0.0.1 with the watch credential; prints its status code.
get() {
  python3 - "$addr" "$1" "$watch" <<'PY'
import sys, urllib.request
req = urllib.request.Request(f"http://{sys.argv[1]}{sys.argv[2]}",
                             headers={"Authorization": f"Bearer {sys.argv[3]}"})
try:
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()
        print(r.status)
except Exception as e:
    print(f"failed: {e}")
PY
}
for _ in $(seq 1 100); do [[ $(get /api/snapshot) == 200 ]] && break; sleep 0.1; done
# One of each refused head first: its answer, and one line naming its peer.
raw() { python3 "$here/inspect_raw_request.py" "$addr" "$(printf "$1" | xxd -p | tr -d '\n')"; }
status=$(raw "GET /$(head -c 5000 /dev/zero | tr '\0' a) HTTP/1.1\r\n\r\n")
[[ $status == "HTTP/1.1 414 URI Too Long" ]] || fail "a request line of 5000 bytes got '$status'"
status=$(raw "GET /metrics HTTP/1.1\r\n$(for i in $(seq 1 65); do printf 'X-%d: 1\\r\\n' "$i"; done)\r\n")
[[ $status == "HTTP/1.1 431 Request Header Fields Too Large" ]] || fail "65 header lines got '$status'"
status=$(raw "GET /metrics HTTP/1.1\r\nX: $(head -c 17000 /dev/zero | tr '\0' a)\r\n\r\n")
[[ $status == "HTTP/1.1 431 Request Header Fields Too Large" ]] || fail "a head of 17 kB got '$status'"
for _ in $(seq 1 20); do grep -q 'head over' "$work/job.log" && break; sleep 0.1; done
for why in 'request line over 4096 bytes' 'more than 64 header lines' 'request head over 16384 bytes'; do
  grep -q "inspect: refused 127\.0\.0\.1:[0-9]*: $why" "$work/job.log" || fail "no line naming the peer: $why"
done

before_step=$(step_now)
before=$(rss)

# The two floods, then the idle connections, one after the other; a client polls all along.
{
  python3 "$here/inspect_flood.py" line "$addr" 300 >"$work/line.out" 2>&1
  python3 "$here/inspect_flood.py" headers "$addr" 300 >"$work/headers.out" 2>&1
  python3 "$here/inspect_flood.py" idle "$addr" 20 8 8 >"$work/idle.out" 2>&1
} &
attack=$!
started+=("$attack")
# The job's memory sampled every 50 ms while the attack lasts: its peak in $work/peak.
{
  peak=$before
  while kill -0 "$attack" 2>/dev/null; do
    now=$(rss)
    ((${now:-0} > peak)) && peak=$now && echo "$peak" >"$work/peak"
    sleep 0.05
  done
} &
sampler=$!
started+=("$sampler")
echo "$before" >"$work/peak"
answered=0
while kill -0 "$attack" 2>/dev/null; do
  for path in /api/snapshot /metrics; do
    status=$(get "$path")
    if [[ $status == 200 ]]; then
      answered=$((answered + 1))
    elif kill -0 "$attack" 2>/dev/null; then
      fail "$path during the attack: $status"
    fi
  done
done
wait "$attack" "$sampler"
peak=$(cat "$work/peak")
grep -q '^sent 300 MB' "$work/line.out" || fail "the endless line: $(cat "$work/line.out")"
grep -q '^sent 300 MB' "$work/headers.out" || fail "the endless headers: $(cat "$work/headers.out")"
grep -q '^reopened [1-9]' "$work/idle.out" || fail "no idle connection was closed: $(cat "$work/idle.out")"
[[ $answered -ge 4 ]] || fail "only $answered requests answered during the attack"
grown=$(((peak - before) / 1024))
echo "VmRSS ${before} kB before, ${peak} kB at most during the attack (+${grown} MB); $answered requests answered"
[[ $grown -le 64 ]] || fail "the job grew by $grown MB under attack"
grep -q 'similar line(s) left out' "$work/job.log" || fail "refusal lines not rate-limited"
lines=$(grep -c 'inspect: refused' "$work/job.log")
[[ $lines -le 200 ]] || fail "$lines refusal lines logged"
for _ in $(seq 1 100); do
  after_step=$(step_now)
  ((${after_step:-0} > ${before_step:-0})) && break
  sleep 0.1
done
((${after_step:-0} > ${before_step:-0})) || fail "the job did not go on (step ${before_step:-none} -> ${after_step:-none})"
kill -INT "$job"
wait "$job"
rc=$?
[[ $rc -eq 130 ]] || fail "the job under attack: exit $rc: $(tail -3 "$work/job.log")"

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "inspect flood: all checks passed"

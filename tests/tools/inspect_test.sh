#!/usr/bin/env bash
# End-to-end checks of `deepcee inspect` against real `deepcee run` jobs:
# (a) attaching never changes the job: with one inspector streaming and one polling --once,
#     metrics.csv and eval.csv hold the same losses and virtual times, bit for bit, as the
#     same run with no endpoint at all; the stream's snapshots are well formed and in order;
# (b) a client that opens /api/stream and never reads does not keep the job from finishing,
#     and the frames it did not take are counted (dropped_frames > 0);
# (d) a job with a token refuses a wrong or missing one in one line naming the address (exit
#     non-zero) and never prints it; a broken HTTP request gets a 4xx and the job goes on;
#     an address where nothing listens, or that answers something else, is one line, exit
#     non-zero, in under 5 s.
#   inspect_test.sh PATH/TO/deepcee CONFIGS_DIR
set -u
deepcee=$1
configs=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
started=()
cleanup() {
  for pid in "${started[@]}"; do kill "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
source "$(dirname "$0")/test_lib.sh"

write_corpus "$work/data"
# The local cluster's job (two pipelines of 3 and 2 stages): a tiny model, many fast steps.
cat >"$work/job.toml" <<TOML
name = "inspect-test"
time = "virtual"
cluster = "$configs/local-cluster/cluster.toml"
plan = "$configs/local-cluster/plan.json"
[train]
seed = 7
steps = 1500
batch = 12
checkpoint_every = 0
eval_every = 500
eval_batches = 2
[train.model]
n_layer = 2
d_model = 32
n_head = 2
context = 16
[train.data]
path = "$work/data"
TOML

# start_job NAME ARGS...: `deepcee run` in the background; sets job_pid and addr (HOST:PORT).
start_job() {
  local name=$1
  shift
  "$deepcee" run "${job_file:-$work/job.toml}" --out "$work/$name" "$@" >"$work/$name.log" 2>&1 &
  job_pid=$!
  started+=("$job_pid")
  addr=""
  for _ in $(seq 1 200); do
    addr=$(sed -n 's|^inspect: http://||p' "$work/$name.log")
    [[ -n $addr ]] && return 0
    kill -0 "$job_pid" 2>/dev/null || break
    sleep 0.1
  done
  fail "$name: no 'inspect: http://' line: $(tail -3 "$work/$name.log")"
  return 1
}
# finish_job NAME: waits (300 s at most: a loaded 2-core machine runs the 1500 steps several
# times slower) for the job started last; fails unless it exits 0.
finish_job() {
  local name=$1
  for _ in $(seq 1 3000); do
    kill -0 "$job_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$job_pid" 2>/dev/null; then
    fail "$name: still running after 300 s"
    kill "$job_pid"
  fi
  wait "$job_pid" || fail "$name: exit $?: $(tail -3 "$work/$name.log")"
}
# The metrics of a run without the real-time column (elapsed_s, the 9th).
steps_of() { cut -d, -f1-8,10 "$work/$1/metrics.csv"; }
max_dropped_frames() { sed -n 's/^dropped: .*message(s), \([0-9]*\) frame(s)$/\1/p' "$@" | sort -n | tail -1; }

# (a) The same job without an endpoint, then with two inspectors attached.
"$deepcee" run "$work/job.toml" --out "$work/alone" --inspect off >"$work/alone.log" 2>&1 ||
  fail "run --inspect off: $(tail -3 "$work/alone.log")"
grep -q '^inspect:' "$work/alone.log" && fail "--inspect off still printed an endpoint"
if start_job watched; then
  "$deepcee" inspect "$addr" --json >"$work/stream.jsonl" 2>"$work/stream.err" &
  streamer=$!
  started+=("$streamer")
  polls=0
  while kill -0 "$job_pid" 2>/dev/null; do
    "$deepcee" inspect "$addr" --once >"$work/poll.txt" 2>/dev/null && grep -q '^step ' "$work/poll.txt" &&
      polls=$((polls + 1))
    sleep 0.2
  done
  finish_job watched
  wait "$streamer" || fail "inspect --json: exit $? when the job ended: $(cat "$work/stream.err")"
  [[ $polls -ge 3 ]] || fail "only $polls --once polls answered during the run"
  if [[ $(steps_of alone) != "$(steps_of watched)" ]]; then
    fail "metrics.csv differs with inspectors attached: $(diff <(steps_of alone) <(steps_of watched) | head -4)"
  fi
  [[ $(steps_of watched | wc -l) -eq 1501 ]] || fail "the watched run has $(steps_of watched | wc -l) metrics lines"
  cmp -s <(cut -d, -f1-2 "$work/alone/eval.csv") <(cut -d, -f1-2 "$work/watched/eval.csv") ||
    fail "eval.csv differs with inspectors attached"
  python3 - "$work/stream.jsonl" <<'PY' || fail "the stream's snapshots: see above"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) >= 10, f"only {len(lines)} snapshots streamed"
versions = [json.loads(l)["version"] for l in lines]
assert versions == sorted(set(versions)), "versions not strictly increasing"
last = json.loads(lines[-1])
assert last["job"] == "inspect-test" and last["steps"] == 1500, last["job"]
assert len(last["stages"]) == 5, f'{len(last["stages"])} stages, expected 5'
assert all(s["ops"] for s in last["stages"]), "a stage without ops"
assert last["links"], "no links"
assert all(" -> " in l["name"] and l["bytes_sent"] > 0 for l in last["links"]), last["links"]
assert last["allocation"]["micro_batches"] and last["decisions"] == [] and last["events"] == []
PY
fi

# (b) A client that never reads its stream.
if start_job stuck; then
  python3 "$here/inspect_stuck_client.py" "$addr" 120 >"$work/stuck.out" 2>&1 &
  stuck=$!
  started+=("$stuck")
  : >"$work/stuck_polls.txt"
  while kill -0 "$job_pid" 2>/dev/null; do
    "$deepcee" inspect "$addr" --once >>"$work/stuck_polls.txt" 2>/dev/null
    sleep 0.3
  done
  finish_job stuck
  kill "$stuck" 2>/dev/null
  grep -q 'stuck: connected' "$work/stuck.out" || fail "the stuck client did not connect: $(cat "$work/stuck.out")"
  dropped=$(max_dropped_frames "$work/stuck_polls.txt")
  [[ ${dropped:-0} -gt 0 ]] || fail "no dropped frame counted for the client that never reads"
  [[ $(steps_of stuck | wc -l) -eq 1501 ]] || fail "the job with a stuck client did not run every step"
fi

# (d) Tokens, broken requests, nowhere to attach.
good=$(openssl rand -hex 32)
bad=$(openssl rand -hex 32)
(umask 077 && echo "$good" >"$work/token" && echo "$bad" >"$work/wrong")
{ cat "$work/job.toml"; printf '[inspect]\nhosts = ["gpu-box.test"]\n'; } >"$work/hosts.toml"
if job_file=$work/hosts.toml DEEPCEE_TOKEN=$good start_job secured --steps 100000; then
  out=$("$deepcee" inspect "$addr" --once --token-file "$work/wrong" 2>"$work/err")
  rc=$?
  [[ $rc -ne 0 && -z $out && $(wc -l <"$work/err") -eq 1 ]] && grep -q "$addr.*token" "$work/err" ||
    fail "a wrong token: rc $rc, stdout '$out', stderr '$(cat "$work/err")'"
  env -u DEEPCEE_TOKEN "$deepcee" inspect "$addr" --json >/dev/null 2>"$work/err" &&
    fail "no token: the stream was served"
  grep -q "401" "$work/err" || fail "no token: $(cat "$work/err")"
  "$deepcee" inspect "$addr" --once --token-file "$work/token" >"$work/ok.txt" 2>&1 &&
    grep -q '^step ' "$work/ok.txt" || fail "the right token file: $(head -3 "$work/ok.txt")"
  DEEPCEE_TOKEN=$good "$deepcee" inspect "$addr" --once >/dev/null 2>&1 ||
    fail "the right token from DEEPCEE_TOKEN was refused"
  step_now() {
    DEEPCEE_TOKEN=$good "$deepcee" inspect "$addr" --once 2>/dev/null | sed -n 's|^step \([0-9]*\)/.*|\1|p'
  }
  before=$(step_now)
  for request in "$(printf 'GARBAGE\r\n\r\n' | xxd -p)" "$(printf 'GET /api/snapshot HTTP/9.9 x\r\n\r\n' | xxd -p)" \
    "$(head -c 3000 /dev/urandom | xxd -p | tr -d '\n')"; do
    status=$(python3 "$here/inspect_raw_request.py" "$addr" "$request")
    [[ $status == "HTTP/1.1 4"* || $status == "no answer" ]] || fail "a broken request got '$status'"
  done
  status=$(python3 "$here/inspect_raw_request.py" "$addr" "$(printf 'GARBAGE / HTTP/1.1\r\n\r\n' | xxd -p)")
  [[ $status == "HTTP/1.1 4"* ]] || fail "an unknown method got '$status'"
  # Only the watch credential opens the endpoint: the job's token never crosses the wire,
  # and a request that names another host (DNS rebinding) is refused.
  watch=$("$deepcee" inspect --watch-credential --token-file "$work/token")
  [[ $watch == dcw1-* && $watch != *"$good"* ]] || fail "the watch credential: '$watch'"
  (umask 077 && echo "$watch" >"$work/watch")
  "$deepcee" inspect "$addr" --once --token-file "$work/watch" >/dev/null 2>&1 ||
    fail "the watch credential's file was refused"
  raw_get() { # AUTH [HOST]
    local host=""
    [[ -n ${2:-} ]] && host="Host: $2"$'\r\n'
    python3 "$here/inspect_raw_request.py" "$addr" "$(printf 'GET /api/snapshot HTTP/1.1\r\n%sAuthorization: Bearer %s\r\n\r\n' "$host" "$1" | xxd -p)"
  }
  status=$(raw_get "$good")
  [[ $status == "HTTP/1.1 401 Unauthorized" ]] || fail "the job's token as a bearer: '$status'"
  status=$(raw_get "$watch" "attacker.example:80")
  [[ $status == "HTTP/1.1 403 Forbidden" ]] || fail "a foreign Host header: '$status'"
  grep -q "inspect: refused 127.0.0.1:[0-9]*: its Host header names another host" "$work/secured.log" ||
    fail "a foreign Host header was not logged naming the peer: $(grep 'inspect:' "$work/secured.log" | tail -3)"
  grep -q "inspect: refused 127.0.0.1:[0-9]*: it sent no valid watch credential" "$work/secured.log" ||
    fail "the job's token as a bearer was not logged naming the peer"
  # A browser's Host: the job file's [inspect] hosts, this host's name, any address.
  for host in "gpu-box.test:${addr##*:}" "$(hostname)" "10.1.2.3:80" "[::1]:${addr##*:}"; do
    status=$(raw_get "$watch" "$host")
    [[ $status == "HTTP/1.1 200 OK" ]] || fail "Host: $host: '$status'"
  done
  status=$(raw_get "$watch" "$addr")
  [[ $status == "HTTP/1.1 200 OK" ]] || fail "the job stopped answering after broken requests: '$status'"
  # The job goes on: a later step within 10 s (a loaded machine may stall it for a moment).
  for _ in $(seq 1 100); do
    after=$(step_now)
    ((${after:-0} > ${before:-0})) && break
    sleep 0.1
  done
  [[ ${after:-0} -gt ${before:-0} ]] || fail "the job did not go on after broken requests (step ${before:-none} -> ${after:-none})"
  # It is stopped as Ctrl-C stops it: after its current step, with its checkpoint.
  kill -INT "$job_pid"
  wait "$job_pid"
  rc=$?
  [[ $rc -eq 130 && -f $work/secured/checkpoint.safetensors ]] ||
    fail "the job with broken requests: exit $rc: $(tail -3 "$work/secured.log")"
  grep -q "$good" "$work/secured.log" && fail "the job printed its token"
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start=$(date +%s%N)
"$deepcee" inspect "127.0.0.1:$port" --once >"$work/out" 2>"$work/err"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
[[ $rc -ne 0 && ! -s $work/out && $(wc -l <"$work/err") -eq 1 && $ms -lt 5000 ]] &&
  grep -q "127.0.0.1:$port" "$work/err" ||
  fail "nothing listening: rc $rc in $ms ms, stderr '$(cat "$work/err")'"
# Something that answers, but not as the endpoint does.
python3 - "$port" >"$work/fake.out" 2>&1 <<'PY' &
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
print("listening", flush=True)
s.settimeout(20)
c, _ = s.accept()
c.recv(4096)
c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\nhello world")
c.close()
PY
fake=$!
started+=("$fake")
for _ in $(seq 1 50); do grep -qs listening "$work/fake.out" && break; sleep 0.1; done
"$deepcee" inspect "127.0.0.1:$port" --once >"$work/out" 2>"$work/err"
rc=$?
[[ $rc -ne 0 && $(wc -l <"$work/err") -eq 1 ]] && grep -q "127.0.0.1:$port.*broken reply" "$work/err" ||
  fail "a broken reply: rc $rc, stderr '$(cat "$work/err")'"
"$deepcee" inspect "nowhere" --once 2>"$work/err"
[[ $? -eq 2 ]] && grep -q 'HOST:PORT' "$work/err" || fail "a malformed ADDR: $(cat "$work/err")"
"$deepcee" run "$work/job.toml" --inspect 127.0.0.1:99999 --out "$work/bad" 2>"$work/err" >/dev/null
[[ $? -eq 2 && ! -e $work/bad ]] && grep -q -- '--inspect' "$work/err" || fail "a bad --inspect: $(cat "$work/err")"

# The job file's [inspect] addr: off, an address, and a value of the wrong kind.
{ cat "$work/job.toml"; printf '[inspect]\naddr = "off"\n'; } >"$work/off.toml"
"$deepcee" run "$work/off.toml" --steps 1 --out "$work/off" >"$work/off.log" 2>&1 || fail "[inspect] addr = off: $(tail -2 "$work/off.log")"
grep -q '^inspect:' "$work/off.log" && fail "[inspect] addr = off still served"
"$deepcee" run "$work/off.toml" --steps 1 --out "$work/on" --inspect 127.0.0.1:0 >"$work/on.log" 2>&1 &&
  grep -q '^inspect: http://127.0.0.1:[1-9]' "$work/on.log" || fail "--inspect over [inspect] addr: $(grep inspect "$work/on.log")"
{ cat "$work/job.toml"; printf '[inspect]\naddr = 5\n'; } >"$work/badaddr.toml"
line=$(wc -l <"$work/badaddr.toml")
"$deepcee" run "$work/badaddr.toml" --out "$work/badaddr" >/dev/null 2>"$work/err"
[[ $? -eq 2 && ! -e $work/badaddr ]] && grep -q "badaddr.toml:$line: .*addr" "$work/err" ||
  fail "[inspect] addr = 5: $(cat "$work/err")"

{ cat "$work/job.toml"; printf '[inspect]\nhosts = ["a b"]\n'; } >"$work/badhosts.toml"
line=$(wc -l <"$work/badhosts.toml")
"$deepcee" run "$work/badhosts.toml" --out "$work/badhosts" >/dev/null 2>"$work/err"
[[ $? -eq 2 && ! -e $work/badhosts ]] && grep -q "badhosts.toml:$line: .*hosts" "$work/err" ||
  fail "[inspect] hosts = [\"a b\"]: $(cat "$work/err")"

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "inspect: all checks passed"

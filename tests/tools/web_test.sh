#!/usr/bin/env bash
# End-to-end checks of the inspection endpoint's /metrics and web page against a real
# `deepcee run` job with a token:
# (a) /metrics parses line by line (check_metrics.py: HELP and TYPE before each family's
#     samples, deepcee_ names, escaped labels, numbers), holds every family docs/watching.md
#     lists, and its step, loss, clock and emulated samples/s are those of metrics.csv at that
#     step (its validation loss that of eval.csv); it needs the token, the page does not;
# (b) the page, opened in headless Chromium with the token in its URL fragment and every host
#     but the node unresolvable, plots points in each chart (read from its DOM) and
#     references no external URL; its screenshot is kept in ARTIFACT_DIR (path printed);
# (c) broken requests (unknown path, other methods, a huge header or URI, a huge body,
#     malformed lines, binary bytes) get a 4xx, and the job goes on and ends as Ctrl-C ends it.
#   web_test.sh PATH/TO/deepcee CONFIGS_DIR ARTIFACT_DIR
set -u
deepcee=$1
configs=$(cd "$2" && pwd)
mkdir -p "$3"
artifacts=$(cd "$3" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
started=()
cleanup() {
  for pid in "${started[@]}"; do kill "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
source "$(dirname "$0")/test_lib.sh"
finish() {
  if [[ $failures -gt 0 ]]; then
    echo "$failures failure(s)"
    exit 1
  fi
  echo "web: all checks passed"
  exit 0
}

write_corpus "$work/data"
# The local cluster's job (two pipelines of 3 and 2 stages, links inside a node and across
# the WAN): a tiny model, steps enough to outlast the test; it is stopped with Ctrl-C.
cat >"$work/job.toml" <<TOML
name = "web \"test\""
time = "virtual"
cluster = "$configs/local-cluster/cluster.toml"
plan = "$configs/local-cluster/plan.json"
[train]
seed = 7
steps = 1000000
batch = 12
checkpoint_every = 0
eval_every = 200
eval_batches = 2
[train.model]
n_layer = 2
d_model = 32
n_head = 2
context = 16
[train.data]
path = "$work/data"
TOML

token=$(openssl rand -hex 32)
# Watchers hold the read-only watch credential; the job's token never opens the endpoint.
job_token=$token
token=$(DEEPCEE_TOKEN=$job_token "$deepcee" inspect --watch-credential)
DEEPCEE_TOKEN=$job_token "$deepcee" run "$work/job.toml" --out "$work/run" >"$work/run.log" 2>&1 &
job_pid=$!
started+=("$job_pid")
addr=""
for _ in $(seq 1 200); do
  addr=$(sed -n 's|^inspect: http://||p' "$work/run.log")
  [[ -n $addr ]] && break
  kill -0 "$job_pid" 2>/dev/null || break
  sleep 0.1
done
[[ -n $addr ]] || { fail "no 'inspect: http://' line: $(tail -3 "$work/run.log")"; finish; }

# get PATH [TOKEN]: prints the body to stdout and "STATUS" to fd 3.
get() {
  python3 - "http://$addr$1" "${2:-}" <<'PY'
import os, sys, urllib.error, urllib.request
req = urllib.request.Request(sys.argv[1])
if sys.argv[2]:
    req.add_header("Authorization", "Bearer " + sys.argv[2])
try:
    with urllib.request.urlopen(req, timeout=10) as res:
        status, body = res.status, res.read()
except urllib.error.HTTPError as e:
    status, body = e.code, e.read()
sys.stdout.buffer.write(body)
os.write(3, f"{status}\n".encode())
PY
}
status_of() { get "$1" "${2:-}" 3>&1 >/dev/null; }

# Wait for the first validation (step 200), so that every family has its sample.
for _ in $(seq 1 300); do
  get /metrics "$token" 2>/dev/null 3>/dev/null | grep -q '^deepcee_validation_loss ' && break
  sleep 0.1
done

# (a) /metrics
[[ $(status_of /metrics) == 401 ]] || fail "/metrics without the token: $(status_of /metrics)"
[[ $(status_of /metrics wrong) == 401 ]] || fail "/metrics with a wrong token was served"
[[ $(status_of /metrics "$job_token") == 401 ]] || fail "/metrics with the job's token was served"
get /metrics "$token" >"$work/metrics.txt" 3>"$work/metrics.status"
[[ $(cat "$work/metrics.status") == 200 ]] || fail "/metrics: status $(cat "$work/metrics.status")"
python3 "$here/check_metrics.py" "$work/metrics.txt" >"$work/metrics.json" ||
  fail "/metrics is not well-formed Prometheus text (above)"

# (b) The page, with the token given once in the URL fragment.
for path in / /static/inspect_page.js /static/chart.min.js; do
  [[ $(status_of "$path") == 200 ]] || fail "$path without a token: $(status_of "$path")"
done
for path in / /static/inspect_page.js; do
  get "$path" 3>/dev/null | grep -Eo '(https?:)?//[a-zA-Z0-9.-]+\.[a-z]+' >"$work/external" &&
    fail "$path references an external URL: $(head -3 "$work/external")"
done
cmp -s <(get /static/chart.min.js 3>/dev/null) /usr/share/javascript/chart.js/chart.min.js ||
  fail "/static/chart.min.js is not Debian's chart.min.js"
# Every name but the node's address resolves to nothing, so the page works only if everything
# it loads comes from the node.
offline="--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
chromium() {
  timeout 120 /usr/bin/chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "$offline" \
    --window-size=1280,900 --virtual-time-budget=8000 "$@" "http://$addr/#token=$token" 2>>"$work/chromium.log"
}
# Opened late: the charts hold the run from its first step (/api/history), not only the
# steps polled since.
opened_at=$(get /metrics "$token" 3>/dev/null | sed -n 's/^deepcee_step //p')
screenshot=$artifacts/web_page.png
rm -f "$screenshot"
chromium --screenshot="$screenshot" >/dev/null
[[ -s $screenshot ]] && echo "screenshot: $screenshot" || fail "no screenshot: $(tail -3 "$work/chromium.log")"
chromium --dump-dom >"$work/dom.html"
python3 - "$work/dom.html" "${opened_at:-0}" <<'PY' || fail "the page's DOM (above)"
import re, sys
dom = open(sys.argv[1]).read()
def number(id):
    m = re.search(rf'id="{id}"[^>]*>(\d+)<', dom)
    assert m, f"no #{id} in the DOM"
    return int(m.group(1))
state = re.search(r'id="state"[^>]*>([^<]*)<', dom).group(1)
assert state == "live", f"the page says {state!r}"
assert number("polls") >= 3, f'only {number("polls")} snapshots read'
opened_at = int(sys.argv[2])
assert opened_at >= 200, f"opened at step {opened_at}, before the first validation"
assert number("first-step") == 1, f'the loss chart starts at step {number("first-step")}'
# The history keeps at least 256 points per series however long the run (run_history.hpp).
assert number("points-loss") >= min(opened_at, 256), \
    f'loss: {number("points-loss")} points on a page opened at step {opened_at}'
for chart, least in (("loss", 3), ("throughput", 6), ("links", 12)):
    assert number(f"points-{chart}") >= least, f'{chart}: {number(f"points-{chart}")} points'
assert "web &quot;test&quot;" in dom or 'web "test"' in dom, "the job's name is not shown"
assert dom.count("<tr>") >= 1 + 10, "the links table has fewer than 10 links"
PY
# Without the token, the page says it needs one and shows nothing of the job.
timeout 120 /usr/bin/chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=3000 "$offline" \
  --dump-dom "http://$addr/" 2>>"$work/chromium.log" >"$work/dom_no_token.html"
grep -q 'unauthorized' "$work/dom_no_token.html" && ! grep -q 'id="points-loss">[1-9]' "$work/dom_no_token.html" ||
  fail "the page without a token: $(grep -o 'id="state"[^<]*<' "$work/dom_no_token.html")"

# (c) Broken requests.
step_now() { get /metrics "$token" 3>/dev/null | sed -n 's/^deepcee_step //p'; }
before=$(step_now)
raw() { python3 "$here/web_raw_request.py" "$addr" "$1"; }
auth="b'Authorization: Bearer $token\\r\\n'"
for request in \
  "b'GET /nope HTTP/1.1\\r\\n' + $auth + b'\\r\\n'" \
  "b'DELETE /metrics HTTP/1.1\\r\\n' + $auth + b'\\r\\n'" \
  "b'POST / HTTP/1.1\\r\\nContent-Length: 3\\r\\n\\r\\nabc'" \
  "b'GET /metrics HTTP/1.1\\r\\n' + $auth + b'X-Big: ' + b'a' * 100000 + b'\\r\\n\\r\\n'" \
  "b'GET /' + b'a' * 30000 + b' HTTP/1.1\\r\\n\\r\\n'" \
  "b'GET /metrics HTTP/1.1\\r\\n' + $auth + b'Content-Length: 99999999\\r\\n\\r\\nabc'" \
  "b'GET /metrics\\r\\n\\r\\n'" \
  "b'GET /metrics HTTP/1.1\\r\\nno colon here\\r\\n\\r\\n'" \
  "b'\\x00\\xff\\xfe GET\\r\\n\\r\\n'"; do
  status=$(raw "$request")
  [[ $status == "HTTP/1.1 4"* ]] || fail "a broken request got '$status': ${request:0:60}"
done
status=$(raw "b'GET /metrics HTTP/1.1\\r\\n' + $auth + b'\\r\\n'")
[[ $status == "HTTP/1.1 200 OK" ]] || fail "/metrics after the broken requests: '$status'"
# The job goes on: a later step within 10 s (a loaded machine may stall it for a moment).
for _ in $(seq 1 100); do
  after=$(step_now)
  ((${after:-0} > ${before:-0})) && break
  sleep 0.1
done
[[ ${after:-0} -gt ${before:-0} ]] || fail "the job did not go on after broken requests (step ${before:-none} -> ${after:-none})"

kill -INT "$job_pid"
wait "$job_pid"
rc=$?
[[ $rc -eq 130 ]] || fail "the job: exit $rc: $(tail -3 "$work/run.log")"
grep -q -e "$token" -e "$job_token" "$work/run.log" && fail "the job printed its token or credential"

# (a) again: the scraped values against metrics.csv and eval.csv, now that the job is done.
python3 - "$work/metrics.json" "$work/run/metrics.csv" "$work/run/eval.csv" <<'PY' || fail "/metrics against metrics.csv (above)"
import csv, json, math, sys
scraped = json.load(open(sys.argv[1]))
families, samples = scraped["families"], scraped["samples"]
for name in ["deepcee_job_info", "deepcee_step", "deepcee_steps", "deepcee_loss",
             "deepcee_validation_loss", "deepcee_validation_step", "deepcee_clock_seconds",
             "deepcee_samples_per_second", "deepcee_stage_bubble_ratio",
             "deepcee_device_utilization_ratio", "deepcee_device_memory_used_bytes",
             "deepcee_device_memory_capacity_bytes", "deepcee_link_bandwidth_bytes_per_second",
             "deepcee_link_latency_seconds", "deepcee_link_plan_bandwidth_bytes_per_second",
             "deepcee_link_plan_latency_seconds", "deepcee_link_sent_bytes_total",
             "deepcee_link_transfers_total", "deepcee_link_drifted",
             "deepcee_dropped_messages_total",
             "deepcee_dropped_frames_total", "deepcee_adapter_decisions_total",
             "deepcee_injected_events_total"]:
    assert name in families, f"no family {name}"
def one(name, **labels):
    found = [v for n, l, v in samples if n == name and l == labels]
    assert len(found) == 1, f"{name}{labels}: {len(found)} samples"
    return found[0]
def near(a, b, what):
    assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), f"{what}: /metrics {a!r}, csv {b!r}"
step = int(one("deepcee_step"))
rows = {int(r["step"]): r for r in csv.DictReader(open(sys.argv[2]))}
assert step in rows, f"step {step} not in metrics.csv"
row = rows[step]
near(one("deepcee_loss"), float(row["loss"]), f"loss at step {step}")
near(one("deepcee_clock_seconds"), float(row["time_s"]), f"clock at step {step}")
near(one("deepcee_samples_per_second", clock="emulated"), float(row["samples_per_s"]),
     f"samples/s at step {step}")
assert one("deepcee_samples_per_second", clock="real") > 0
val_step = int(one("deepcee_validation_step"))
evals = {int(r["step"]): float(r["val_loss"]) for r in csv.DictReader(open(sys.argv[3]))}
assert 0 < val_step <= step and val_step in evals, f"validation step {val_step}"
near(one("deepcee_validation_loss"), evals[val_step], f"validation loss at step {val_step}")
assert one("deepcee_steps") == 1000000
info = [l for n, l, v in samples if n == "deepcee_job_info"]
assert info == [{"job": 'web "test"', "model": "custom", "cluster": "local-3",
                 "strategy": "two-pipelines", "time_mode": "virtual"}], info
# Every directed link the plan sends on: both directions of each stage boundary of both
# pipelines (10 device pairs), each with the adapter's estimates. In virtual time on an
# undisturbed cluster a link's latency is the cluster file's, and its bandwidth at most that,
# both within the rounding of drains of a few microseconds on a clock at hundreds of seconds.
links = [l for n, l, v in samples if n == "deepcee_link_sent_bytes_total"]
assert len(links) == 10, links
for l in links:
    assert {"from": l["to"], "to": l["from"]} in links, f"{l}: no link back"
    bandwidth = one("deepcee_link_bandwidth_bytes_per_second", **l)
    plan_bandwidth = one("deepcee_link_plan_bandwidth_bytes_per_second", **l)
    assert 0 < bandwidth <= plan_bandwidth * (1 + 1e-3), (l, bandwidth, plan_bandwidth)
    latency = one("deepcee_link_latency_seconds", **l)
    plan_latency = one("deepcee_link_plan_latency_seconds", **l)
    assert math.isclose(latency, plan_latency, rel_tol=1e-6), (l, latency, plan_latency)
    assert one("deepcee_link_drifted", **l) == 0, l
for n, l, v in samples:
    if n == "deepcee_link_sent_bytes_total":
        assert v > 0, (n, l, v)
    if n == "deepcee_device_utilization_ratio":
        assert 0 <= v <= 1, (n, l, v)
assert len([1 for n, l, v in samples if n == "deepcee_device_utilization_ratio"]) == 7
assert len([1 for n, l, v in samples if n == "deepcee_stage_bubble_ratio"]) == 5
print(f"/metrics at step {step} matches metrics.csv (loss {row['loss']}, validation at {val_step})")
PY
finish

#!/usr/bin/env bash
# deepcee profile on a real network: `deepcee lab profile` on the lab of
# configs/lab/fidelity-cluster.toml (three nodes, each behind a 10 Mbps interface the kernel
# shapes) times every directed link between the nodes, one node at a time. Checks that the
# profile has all six links and that each measures within 10% of the rate the lab sets (two
# nodes timing at once into one interface would each measure half of it), that the
# simulator reads the profile, and that lab profile refuses options it sets itself. Nothing
# with the test's prefix is left, pass or fail.
#   lab_fidelity_test.sh PATH/TO/deepcee CONFIGS_DIR
set -u
deepcee=$1
lab=$(cd "$2/lab" && pwd)
source "$(dirname "$0")/lab_requirements.sh"

work=$(mktemp -d)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cleanup() {
  "$deepcee" lab down --prefix dctfd --state-dir "$work" >/dev/null 2>&1
  local left
  left=$(ip netns list | grep -E '^dctfd-'; pgrep -af -- "$work/" | grep -v pgrep)
  [[ -z $left ]] || fail "left behind: $left"
  rm -rf "$work"
  echo "lab fidelity test: $failures failure(s)"
  exit $((failures > 0))
}
trap cleanup EXIT

"$deepcee" lab up "$lab/fidelity-cluster.toml" --prefix dctfd --state-dir "$work" >/dev/null || exit 1
cat >"$work/job.toml" <<TOML
name = "lab-fidelity-test"
time = "wall"
cluster = "$lab/fidelity-cluster.toml"
plan = "$lab/three-nodes-plan.json"
model = "small"
connect_timeout = 30
[[node]]
name = "n0"
port = 29330
[[node]]
name = "n1"
port = 29331
[[node]]
name = "n2"
port = 29332
[train]
out = "$work/runs"
TOML

"$deepcee" lab profile "$work/job.toml" --prefix dctfd --state-dir "$work" --profile "$work/p.toml" \
  -- --name n1 >"$work/bad.out" 2>&1
rc=$?
[[ $rc == 2 ]] && grep -q -- "--name" "$work/bad.out" || fail "--name after -- not refused (exit $rc): $(cat "$work/bad.out")"

"$deepcee" lab profile "$work/job.toml" --prefix dctfd --state-dir "$work" --profile "$work/profile.toml" \
  --out "$work/run" -- --micro-batches 4 --repetitions 3 --no-gpu >"$work/profile.out" 2>&1 ||
  fail "lab profile: $(tail -3 "$work/profile.out"; tail -3 "$work"/run/*.log)"

python3 - "$work/profile.toml" <<'PY' || failures=$((failures + 1))
import sys, tomllib
links = tomllib.load(open(sys.argv[1], "rb")).get("link", [])
pairs = sorted((l["from"], l["to"]) for l in links)
want = sorted((a, b) for a in ("n0", "n1", "n2") for b in ("n0", "n1", "n2") if a != b)
if pairs != want:
    sys.exit(f"FAIL: the profile's links are {pairs}, not every directed pair")
rate = 10e6 / 8
bad = []
for l in links:
    print(f"{l['from']}->{l['to']}: {l['bandwidth'] * 8 / 1e6:.2f} Mbit/s of 10 ({l['bandwidth'] / rate:.3f})")
    if abs(l["bandwidth"] / rate - 1) > 0.10:
        bad.append(f"{l['from']}->{l['to']}")
if bad:
    sys.exit(f"FAIL: not within 10% of the 10 Mbit/s the lab sets: {', '.join(bad)}")
PY

"$deepcee" simulate --cluster "$lab/fidelity-cluster.toml" --plan "$lab/three-nodes-plan.json" \
  --profile "$work/profile.toml" >"$work/simulate.out" 2>&1 && grep -q '^simulated: ' "$work/simulate.out" ||
  fail "simulate with the lab's profile: $(tail -2 "$work/simulate.out")"

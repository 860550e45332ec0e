#!/usr/bin/env bash
# Measured against set: every ordered node pair of a network lab, a 3 s TCP transfer from
# one node's namespace to the other's, received rate beside the narrowest rate the lab sets
# on its path (the sender's interface out, the WAN path between their regions, the
# receiver's interface in). As root; the lab is brought up under the prefix dcbnch and
# removed however it ends.
#   bench/bench_lab_rates.sh PATH/TO/deepcee CLUSTER.toml
set -u
deepcee=$1
cluster=$2
state=$(mktemp -d)
trap '"$deepcee" lab down --prefix dcbnch --state-dir "$state" >/dev/null; rm -rf "$state"' EXIT
"$deepcee" lab up "$cluster" --prefix dcbnch --state-dir "$state" >/dev/null || exit $?
python3 - "$state/dcbnch.json" "$(cd "$(dirname "$0")/.." && pwd)/tools/lab_rate.py" <<'PY'
import json, subprocess, sys, time
t = json.load(open(sys.argv[1]))["topology"]
nodes, links = t["nodes"], t["links"]
inf = float("inf")
def rate(port):
    return port["rate_Bps"] * 8 / 1e6 if port["rate_Bps"] else inf
def path_rate(i, j):
    mine = [l for l in links if not l["wan"] and l["from"] in (i, j)]
    out = next(rate(l["a"]) for l in mine if l["from"] == i)
    into = next(rate(l["b"]) for l in mine if l["from"] == j)
    ri, rj = nodes[i]["region"], nodes[j]["region"]
    wan = inf
    for l in links:
        if l["wan"] and {l["from"], l["to"]} == {ri, rj} and ri != rj:
            wan = rate(l["a"] if l["from"] == ri else l["b"])
    return min(out, wan, into)
rate_py = sys.argv[2]
print(f"{'from':>8} {'to':>8} {'set (Mbit/s)':>13} {'measured':>9} {'ratio':>6}")
for i, a in enumerate(nodes):
    for j, b in enumerate(nodes):
        if i == j:
            continue
        rx = subprocess.Popen(["ip", "netns", "exec", b["netns"], "python3", rate_py, "rx",
                               b["address"], "5202"], stdout=subprocess.PIPE, text=True)
        time.sleep(0.3)
        subprocess.run(["ip", "netns", "exec", a["netns"], "python3", rate_py, "tx", b["address"],
                        "5202", "3"], check=True)
        got = float(rx.communicate()[0])
        want = path_rate(i, j)
        ratio = f"{got / want:.2f}" if want != inf else "-"
        print(f"{a['name']:>8} {b['name']:>8} {want if want != inf else 'unshaped':>13} {got:9.1f} {ratio:>6}")
PY

#!/usr/bin/env python3
"""Checks a run's trace.json (deepcee run, or the coordinator's node of deepcee node): the
first STEPS steps, each with its ops, transfers, all-reduce buckets and one optimizer step
per device of the plan; every track named; device rows and link rows named by the devices'
names in the cluster file (or its regions, for a WAN pipe that several pairs share).
    check_trace.py TRACE.json CLUSTER.toml PLAN.json STEPS LABEL"""
import json, re, sys, tomllib
trace = json.load(open(sys.argv[1]))["traceEvents"]
cluster = tomllib.load(open(sys.argv[2], "rb"))
plan = json.load(open(sys.argv[3]))
devices = set()
for node in cluster["node"]:
    n = 0
    for group in node["devices"]:
        for _ in range(group.get("count", 1)):
            devices.add(f'{node["name"]}/{n}'); n += 1
regions = {r["name"] for r in cluster["region"]}
used = {d for p in plan["pipelines"] for s in p["stages"] for d in s["devices"]}
procs = {e["pid"]: e["args"]["name"] for e in trace if e["ph"] == "M" and e["name"] == "process_name"}
tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace if e["ph"] == "M" and e["name"] == "thread_name"}
per_step = {}
for e in trace:
    if e["ph"] != "X":
        continue
    assert (e["pid"], e["tid"]) in tracks, e
    kind = {"stages": "ops", "links": "transfers"}.get(procs[e["pid"]])
    if kind is None:
        kind = "optimizer" if e["name"] == "optimizer" else "allreduce" if e["name"].startswith("allreduce L") else None
        assert kind, e
        assert tracks[(e["pid"], e["tid"])] in devices, e
    per_step.setdefault(int(e["args"]["step"]), {}).setdefault(kind, []).append(e)
steps = int(sys.argv[4])
assert sorted(per_step) == list(range(1, steps + 1)), sorted(per_step)
for step, kinds in per_step.items():
    for kind in ("ops", "transfers", "allreduce", "optimizer"):
        assert kinds.get(kind), (step, kind)
    assert len(kinds["optimizer"]) == len(used), (step, len(kinds["optimizer"]), len(used))
links = [name for (pid, _), name in tracks.items() if procs[pid] == "links"]
assert links
for name in links:
    m = re.fullmatch(r"link (\S+) -> (\S+)( \(WAN pipe\))?", name)
    assert m, name
    assert {m[1], m[2]} <= (regions if m[3] else devices), name
print(f"{sys.argv[5]}: steps 1-{steps} with ops, transfers, all-reduce and {len(used)} optimizer steps each; {len(links)} links named by endpoints")

"""Writes a plan of one pipeline for the small model, for the fidelity benchmarks.

    write_plan.py OUT.json SCHEDULE MICRO_BATCH MICRO_BATCHES STAGE...

Each STAGE is "devices:samples:first:last:compression" (devices and samples joined by '+').
The plan's strategy is OUT's file name without .json.
"""
import json
import sys

out, schedule, mb, count, *stages = sys.argv[1:]
mb, count = int(mb), int(count)


def stage(s):
    devices, samples, first, last, comp = s.split(":")
    return {"devices": [int(d) for d in devices.split("+")],
            "samples": [int(x) for x in samples.split("+")],
            "first_layer": int(first), "last_layer": int(last), "send_compression": comp}


plan = {"format": "deepcee-plan", "version": 1, "strategy": out.split("/")[-1][:-5],
        "model_name": "small",
        "model": {"n_layer": 4, "d_model": 128, "n_head": 4, "context": 128, "vocab": 256},
        "micro_batch_size": mb, "global_batch": mb * count,
        "pipelines": [{"micro_batches": count, "schedule": schedule,
                       "stages": [stage(s) for s in stages]}], "excluded": []}
json.dump(plan, open(out, "w"), indent=1)

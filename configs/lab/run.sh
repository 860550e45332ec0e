#!/usr/bin/env bash
# The lab demo, as root: the default job's cluster as a real network on this host (deepcee
# lab up), the small model trained on it in wall time while its script cuts the path between
# the sites from 100 to 10 Mbps at step 30 and restores it at step 60 (deepcee lab run), the
# throughput before, during and after the drop from the run's metrics.csv, and the lab
# removed however it ends.
#   configs/lab/run.sh [RUN_DIR] [-- NODE OPTIONS]
set -u
here=$(cd "$(dirname "$0")" && pwd)
deepcee=${DEEPCEE:-$here/../../build/tools/deepcee}
out=${1:-runs/lab-demo-$(date +%Y%m%d-%H%M%S)}
shift $(($# > 0 ? 1 : 0))
"$deepcee" lab up "$here/../clusters/edge-end.toml" --prefix dcdemo || exit $?
trap '"$deepcee" lab down --prefix dcdemo >/dev/null' EXIT
"$deepcee" lab run "$here/edge-end.toml" --prefix dcdemo --out "$out" "$@"
rc=$?
python3 - "$out/job/metrics.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for name, first, last in [("before the drop", 5, 29), ("during the drop", 32, 59), ("after it", 62, 90)]:
    rates = [float(r["samples_per_s"]) for r in rows if first <= int(r["step"]) <= last]
    if rates:
        print(f"{name} (steps {first}-{last}): median {statistics.median(rates):.1f} samples/s")
PY
exit $rc

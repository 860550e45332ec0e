#!/usr/bin/env bash
# What the gates cost in time: the local cluster's job (configs/local-cluster, three node
# processes on loopback) run for STEPS steps with the job's token (TLS 1.3 through every
# gate and tunnel, the local hop guarded) and with --insecure (CAF straight to CAF), the two
# alternated RUNS times. Prints each run's wall time (process start to last exit), the
# medians and their ratio, with the load average before and after.
#   bench/bench_gate_cost.sh [DEEPCEE] [STEPS] [RUNS]
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
deepcee=${1:-$here/build/tools/deepcee}
steps=${2:-1000}
runs=${3:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
load() { cut -d' ' -f1 /proc/loadavg; }
echo "load average before: $(load)"
timed_run() { # NAME [node options]: prints the run's seconds
  local name=$1
  shift
  local t0 t1
  t0=$(date +%s.%N)
  "$here/tools/run_local_cluster.sh" "$deepcee" "$here/configs/local-cluster/job.toml" \
    "$work/$name" -- --steps "$steps" --out "$work/$name/out" "$@" >/dev/null 2>&1 ||
    { echo "run $name failed: $(tail -2 "$work/$name"/*.log)" >&2; exit 1; }
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}
printf '%-6s %12s %12s\n' run "token (s)" "insecure (s)"
token=() insecure=()
for r in $(seq 1 "$runs"); do
  token+=("$(timed_run "token$r")") || exit 1
  insecure+=("$(timed_run "insecure$r" --insecure)") || exit 1
  printf '%-6s %12s %12s\n' "$r" "${token[-1]}" "${insecure[-1]}"
done
python3 - "${token[*]}" "${insecure[*]}" <<'PY'
import statistics, sys
t = statistics.median(map(float, sys.argv[1].split()))
i = statistics.median(map(float, sys.argv[2].split()))
print(f"{'median':<6} {t:12.2f} {i:12.2f}")
print(f"token / insecure: {t / i:.3f}")
PY
echo "load average after: $(load)"

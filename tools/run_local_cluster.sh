#!/usr/bin/env bash
# Starts every node of a multi-process job as its own process on this host and waits for
# them; exits non-zero when any node does. Each node's output goes to LOGDIR/NODE.log.
#   run_local_cluster.sh [DEEPCEE] [JOB] [LOGDIR] [-- extra deepcee node options]
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
deepcee=${1:-$here/build/tools/deepcee}
job=${2:-$here/configs/local-cluster/job.toml}
logs=${3:-$(mktemp -d)}
shift $(($# < 3 ? $# : 3))
[[ ${1:-} == -- ]] && shift
mkdir -p "$logs"
# The nodes are the [[node]] names of the job file.
mapfile -t nodes < <(awk '/^\[\[node\]\]/{n=1;next} n&&/^name *=/{gsub(/.*= *"|".*/,"");print;n=0}' "$job")
(( ${#nodes[@]} > 0 )) || { echo "run_local_cluster: $job names no [[node]]" >&2; exit 2; }
pids=()
for n in "${nodes[@]}"; do
  "$deepcee" node "$job" --name "$n" "$@" >"$logs/$n.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"
  rc=$?
  echo "node ${nodes[$i]}: exit $rc (log $logs/${nodes[$i]}.log)"
  (( rc == 0 )) || status=1
done
exit $status

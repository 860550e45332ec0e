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
# The nodes prove to each other that they hold the job's token: unless one is given
# (--token-file, DEEPCEE_TOKEN_FILE or DEEPCEE_TOKEN, or --insecure), a fresh one is made
# for this run, readable by this user only.
if [[ -z ${DEEPCEE_TOKEN_FILE:-}${DEEPCEE_TOKEN:-} && " $* " != *" --token-file "* && " $* " != *" --insecure "* ]]; then
  (umask 077 && openssl rand -hex 32 >"$logs/token") || { echo "run_local_cluster: openssl rand failed" >&2; exit 2; }
  export DEEPCEE_TOKEN_FILE=$logs/token
fi
pids=()
for n in "${nodes[@]}"; do
  "$deepcee" node "$job" --name "$n" "$@" >"$logs/$n.log" 2>&1 &
  pids+=($!)
done
# Ctrl-C reaches every node (the terminal's process group): the coordinator's node stops
# after its current step and saves its checkpoint, the others wait for it, all exit 130.
# This script keeps waiting for them meanwhile.
trap 'echo "run_local_cluster: interrupted: the nodes stop after the current step" >&2' INT
status=0
for i in "${!pids[@]}"; do
  while true; do # a trapped Ctrl-C ends `wait` early: wait again while the node lives
    wait "${pids[$i]}"
    rc=$?
    kill -0 "${pids[$i]}" 2>/dev/null || break
  done
  echo "node ${nodes[$i]}: exit $rc (log $logs/${nodes[$i]}.log)"
  (( rc == 0 )) || status=1
done
exit $status

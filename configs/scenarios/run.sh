#!/usr/bin/env bash
# Runs every planner scenario of docs/results.md: configs/scenarios/run.sh [path/to/deepcee]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
clusters="$here/../clusters"
deepcee="${1:-$here/../../build/tools/deepcee}"
run() {
  echo "=== scenario $1: $2 $3 batch $4"
  "$deepcee" plan --cluster "$clusters/$2.toml" --model "$3" --batch "$4" | sed -n '/^strategy/,$p'
}
run a1 deepcee-testbed gpt2-124m 512
run a2 deepcee-testbed gpt2-355m 512
run b deepcee-testbed-500mbps gpt2-124m 512
run c cee-mixed gpt2-355m 512
run d datacenter-mixed gpt2-355m 512
run e cee-1024 gpt2-1.5b 1024

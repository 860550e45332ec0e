# Sourced by the fidelity benchmarks: the simulator's step for a plan from a profile, beside
# the measured one.
# fidelity_row DEEPCEE CLUSTER PLAN_JSON PROFILE MEASURED_S BOUND: prints the plan's name (the
# file's, without .json), the simulated and measured step and the error (simulated /
# measured - 1); returns 0 when the error is within BOUND (a fraction, 0.1 for 10%).
fidelity_row() {
  local simulated sim_s name
  name=$(basename "$3" .json)
  simulated=$("$1" simulate --cluster "$2" --plan "$3" --profile "$4" |
    sed -n 's/^simulated: .* step \([0-9.]*\) \([mu]*s\),.*/\1 \2/p')
  sim_s=$(awk -v v="${simulated% *}" -v u="${simulated#* }" \
    'BEGIN {print v * (u == "ms" ? 1e-3 : u == "us" ? 1e-6 : 1)}')
  awk -v p="$name" -v s="$sim_s" -v m="$5" \
    'BEGIN {printf "%-18s %11.1f ms %11.1f ms %+8.1f%%\n", p, s * 1e3, m * 1e3, (s / m - 1) * 100}'
  awk -v s="$sim_s" -v m="$5" -v b="$6" 'BEGIN {exit !(s / m - 1 <= b && s / m - 1 >= -b)}'
}

#include "runtime/adapt/stage_compute.hpp"

#include "runtime/sim/simulator.hpp"

#include <stdexcept>
#include <utility>

namespace deepcee::runtime {

namespace {

/// The (pipeline, stage) of flat index `flat` in `p`.
std::pair<size_t, size_t> stage_at(const plan& p, int32_t flat) {
  if (flat < 0)
    throw std::out_of_range("op of stage " + std::to_string(flat));
  size_t q = 0, s = static_cast<size_t>(flat);
  while (s >= p.pipelines.at(q).stages.size())
    s -= p.pipelines.at(q++).stages.size();
  return {q, s};
}

} // namespace

std::vector<std::vector<double>> stage_compute(const cluster& c, const plan& p,
                                               const std::vector<op_span>& ops) {
  std::vector<std::vector<double>> out(p.pipelines.size());
  std::vector<std::vector<double>> trips(p.pipelines.size());
  for (size_t q = 0; q < p.pipelines.size(); ++q) {
    out[q].assign(p.pipelines[q].stages.size(), 0.0);
    for (const auto& st : p.pipelines[q].stages)
      trips[q].push_back(apart_round_trip_s(c, st));
  }
  for (const auto& op : ops) {
    const auto [q, s] = stage_at(p, op.stage);
    out[q][s] += stage_compute_s(op.end_s - op.start_s, trips[q][s]);
  }
  return out;
}

} // namespace deepcee::runtime

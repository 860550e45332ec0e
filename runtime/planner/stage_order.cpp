#include "runtime/planner/stage_order.hpp"

#include <utility>

namespace deepcee::runtime {
namespace {

/// The blocks of `stages` as [first, last) ranges of stages of one kind.
std::vector<std::pair<size_t, size_t>> blocks_of(const cluster& c,
                                                 const std::vector<std::vector<int>>& stages) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t k = 0; k < stages.size(); ++k) {
    const std::string& kind = c.devices[size_t(stages[k].front())].kind;
    if (!out.empty() && c.devices[size_t(stages[out.back().first].front())].kind == kind)
      out.back().second = k + 1;
    else
      out.emplace_back(k, k + 1);
  }
  return out;
}

/// The stages 0 to count - 1 with [first, last) moved to stand before the `to`-th of the
/// others (after all of them when `to` is their number).
std::vector<size_t> moved(size_t count, size_t first, size_t last, size_t to) {
  std::vector<size_t> rest, out;
  for (size_t k = 0; k < count; ++k)
    if (k < first || k >= last)
      rest.push_back(k);
  for (size_t k = 0; k <= rest.size(); ++k) {
    if (k == to)
      for (size_t b = first; b < last; ++b)
        out.push_back(b);
    if (k < rest.size())
      out.push_back(rest[k]);
  }
  return out;
}

} // namespace

std::vector<std::vector<pipeline_layout>>
stage_orders_moved(const cluster& c, const std::vector<pipeline_layout>& layout) {
  const size_t stages = layout.front().stages.size();
  for (const auto& pl : layout)
    if (pl.stages.size() != stages)
      return {};
  if (stages < 2 || stages > max_reordered_stages)
    return {};
  std::vector<std::vector<pipeline_layout>> out;
  for (const auto& [first, last] : blocks_of(c, layout.front().stages)) {
    const size_t others = stages - (last - first);
    for (size_t to = 0; to <= others; ++to) {
      if (to == first) // where the block stands now
        continue;
      const std::vector<size_t> order = moved(stages, first, last, to);
      std::vector<pipeline_layout> l(layout.size());
      for (size_t pi = 0; pi < layout.size(); ++pi)
        for (size_t k : order)
          l[pi].stages.push_back(layout[pi].stages[k]);
      out.push_back(std::move(l));
    }
  }
  return out;
}

std::vector<pipeline_layout> layout_of(const plan& p) {
  std::vector<pipeline_layout> out;
  for (const auto& pp : p.pipelines) {
    pipeline_layout l;
    for (const auto& st : pp.stages)
      l.stages.push_back(st.devices);
    out.push_back(std::move(l));
  }
  return out;
}

} // namespace deepcee::runtime

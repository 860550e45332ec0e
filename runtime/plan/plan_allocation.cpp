#include "runtime/plan/plan_allocation.hpp"

#include <numeric>
#include <stdexcept>
#include <string>

namespace deepcee::runtime {

plan_allocation allocation_of(const plan& p) {
  plan_allocation a;
  for (const auto& pp : p.pipelines) {
    a.micro_batches.push_back(pp.micro_batches);
    for (const auto& sp : pp.stages) {
      a.samples.push_back(sp.samples);
      a.compressions.push_back(sp.send_compression);
    }
  }
  return a;
}

plan with_allocation(const plan& base, const plan_allocation& a) {
  const auto fail = [](const std::string& why) {
    throw std::invalid_argument("allocation: " + why);
  };
  if (a.micro_batches.size() != base.pipelines.size())
    fail(std::to_string(a.micro_batches.size()) + " micro-batch counts for " +
         std::to_string(base.pipelines.size()) + " pipelines");
  size_t stages = 0;
  for (const auto& pp : base.pipelines)
    stages += pp.stages.size();
  if (a.samples.size() != stages || a.compressions.size() != stages)
    fail(std::to_string(a.samples.size()) + " device splits and " +
         std::to_string(a.compressions.size()) + " compressions for " + std::to_string(stages) +
         " stages");
  plan out = base;
  size_t flat = 0;
  for (size_t q = 0; q < out.pipelines.size(); ++q) {
    auto& pp = out.pipelines[q];
    if (a.micro_batches[q] < 1)
      fail("pipeline " + std::to_string(q) + " gets " + std::to_string(a.micro_batches[q]) +
           " micro-batches");
    pp.micro_batches = a.micro_batches[q];
    for (auto& sp : pp.stages) {
      const auto& split = a.samples[flat];
      const auto where = "pipeline " + std::to_string(q) + " stage " + std::to_string(flat);
      if (split.size() != sp.devices.size())
        fail(where + ": " + std::to_string(split.size()) + " shares for " +
             std::to_string(sp.devices.size()) + " devices");
      for (int n : split)
        if (n < 1) // as validate_plan: a device of a stage holds its layers' weights
          fail(where + ": a device with " + std::to_string(n) + " samples");
      if (std::accumulate(split.begin(), split.end(), 0) != out.micro_batch_size)
        fail(where + ": shares do not sum to the micro-batch size " +
             std::to_string(out.micro_batch_size));
      sp.samples = split;
      sp.send_compression = a.compressions[flat];
      ++flat;
    }
  }
  if (out.global_batch() != base.global_batch())
    fail("global batch " + std::to_string(out.global_batch()) + " differs from the plan's " +
         std::to_string(base.global_batch()));
  return out;
}

bool same_layout(const plan& from, const plan& to) {
  if (from.micro_batch_size != to.micro_batch_size || from.pipelines.size() != to.pipelines.size())
    return false;
  for (size_t q = 0; q < from.pipelines.size(); ++q) {
    const auto& a = from.pipelines[q].stages;
    const auto& b = to.pipelines[q].stages;
    if (a.size() != b.size())
      return false;
    for (size_t s = 0; s < a.size(); ++s)
      if (a[s].devices != b[s].devices || a[s].first_layer != b[s].first_layer ||
          a[s].last_layer != b[s].last_layer)
        return false;
  }
  return true;
}

} // namespace deepcee::runtime

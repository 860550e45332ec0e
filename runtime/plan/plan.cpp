#include "runtime/plan/plan.hpp"

#include <algorithm>

#include "runtime/base/errors.hpp"

#include <map>

namespace deepcee::runtime {

int plan::global_batch() const {
  int total = 0;
  for (const auto& p : pipelines)
    total += p.micro_batches * micro_batch_size;
  return total;
}

namespace {

std::string stage_name(size_t p, size_t s) {
  return "pipeline " + std::to_string(p) + " stage " + std::to_string(s);
}

/// Structural checks; device_count < 0 skips the range check of device ids (no cluster).
void check_plan(const plan& pl, int device_count, const std::filesystem::path& source) {
  const auto fail = [&](const std::string& what) { fail_input(source, 0, what); };
  const auto& m = pl.model;
  if (m.n_layer < 1 || m.d_model < 1 || m.n_head < 1 || m.context < 1 || m.vocab < 1)
    fail("model sizes must be positive");
  if (m.d_model % m.n_head != 0)
    fail("model d_model " + std::to_string(m.d_model) + " is not divisible by n_head " +
         std::to_string(m.n_head));
  if (pl.micro_batch_size < 1)
    fail("micro_batch_size must be at least 1, got " + std::to_string(pl.micro_batch_size));
  if (pl.pipelines.empty())
    fail("the plan has no pipeline");
  const int layers = m.n_layer + 2;
  std::map<int, std::string> used; // device -> where it serves
  const auto check_id = [&](int d, const std::string& where) {
    if (d < 0 || (device_count >= 0 && d >= device_count))
      fail(where + ": device " + std::to_string(d) + " does not exist" +
           (device_count >= 0 ? " (the cluster has " + std::to_string(device_count) + ")" : ""));
  };
  for (size_t pi = 0; pi < pl.pipelines.size(); ++pi) {
    const auto& pp = pl.pipelines[pi];
    const std::string pname = "pipeline " + std::to_string(pi);
    if (pp.micro_batches < 1)
      fail(pname + ": micro_batches must be at least 1, got " + std::to_string(pp.micro_batches));
    if (pp.stages.empty())
      fail(pname + ": no stage");
    int next_layer = 0;
    for (size_t si = 0; si < pp.stages.size(); ++si) {
      const auto& st = pp.stages[si];
      const std::string where = stage_name(pi, si);
      if (st.first_layer != next_layer)
        fail(where + ": starts at layer " + std::to_string(st.first_layer) + ", expected " +
             std::to_string(next_layer) + " (stages must be contiguous from layer 0)");
      if (st.last_layer <= st.first_layer)
        fail(where + ": empty layer range [" + std::to_string(st.first_layer) + ", " +
             std::to_string(st.last_layer) + ")");
      if (st.last_layer > layers)
        fail(where + ": ends at layer " + std::to_string(st.last_layer) + " beyond the model's " +
             std::to_string(layers) + " pipeline layers");
      next_layer = st.last_layer;
      if (st.devices.empty())
        fail(where + ": no device");
      if (st.samples.size() != st.devices.size())
        fail(where + ": " + std::to_string(st.samples.size()) + " sample shares for " +
             std::to_string(st.devices.size()) + " devices");
      int sum = 0;
      for (size_t k = 0; k < st.samples.size(); ++k) {
        if (st.samples[k] < 1)
          fail(where + ": device " + std::to_string(st.devices[k]) + " has share " +
               std::to_string(st.samples[k]) + " (at least 1 sample)");
        sum += st.samples[k];
      }
      if (sum != pl.micro_batch_size)
        fail(where + ": shares sum to " + std::to_string(sum) + ", not the micro-batch size " +
             std::to_string(pl.micro_batch_size));
      for (int d : st.devices) {
        check_id(d, where);
        auto [it, fresh] = used.emplace(d, where);
        if (!fresh)
          fail(where + ": device " + std::to_string(d) + " already serves " + it->second);
      }
    }
    if (next_layer != layers)
      fail(pname + ": covers layers [0, " + std::to_string(next_layer) + ") of " +
           std::to_string(layers));
  }
  for (const auto& e : pl.excluded) {
    check_id(e.device, "excluded");
    if (auto it = used.find(e.device); it != used.end())
      fail("excluded device " + std::to_string(e.device) + " also serves " + it->second);
  }
}

} // namespace

void validate_plan(const plan& p, int device_count, const std::filesystem::path& source) {
  check_plan(p, device_count, source);
}

std::vector<rows_pair> rows_between(const std::vector<int>& from_samples,
                                    const std::vector<int>& to_samples) {
  std::vector<rows_pair> out;
  int a0 = 0;
  for (size_t i = 0; i < from_samples.size(); ++i) {
    const int a1 = a0 + from_samples[i];
    int b0 = 0;
    for (size_t j = 0; j < to_samples.size(); ++j) {
      const int b1 = b0 + to_samples[j];
      if (const int overlap = std::min(a1, b1) - std::max(a0, b0); overlap > 0)
        out.push_back({i, j, overlap});
      b0 = b1;
    }
    a0 = a1;
  }
  return out;
}

} // namespace deepcee::runtime

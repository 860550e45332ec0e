#include "runtime/base/host_resources.hpp"

#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/base/model_spec.hpp"

#include <algorithm>

namespace deepcee::runtime {

namespace {

/// Beyond this, the exact figures are not needed (no machine has a petabyte of memory),
/// and make_model_spec's int64 products could overflow.
constexpr double beyond_any_host = 1e16;

/// A lower bound of the need that cannot overflow: the blocks' matrices (12 C^2 weights,
/// 4 fp32 values each with gradients and moments) and the attention probabilities
/// (H T^2 fp32 per block and sample) alone.
double rough_bytes(const model_config& m, int64_t batch, double values_per_param) {
  const double C = m.d_model, T = m.context, H = m.n_head, L = m.n_layer;
  return values_per_param * 4.0 * L * 12.0 * C * C + 4.0 * double(batch) * L * H * T * T;
}

double spec_bytes(const model_config& m, int64_t batch, double values_per_param, bool backward) {
  const double rough = rough_bytes(m, batch, values_per_param);
  if (rough > beyond_any_host)
    return rough;
  // One block stands for all: the blocks are alike, and a spec of a million layers would
  // itself take gigabytes.
  model_config one = m;
  one.n_layer = 1;
  const model_spec spec = make_model_spec(one);
  double state = 0, kept = 0;
  for (const layer_spec& l : spec.layers) {
    const double copies = l.kind == layer_kind::block ? double(m.n_layer) : 1.0;
    state += copies * double(l.param_bytes) * values_per_param;
    kept += copies * double(backward ? l.act_until_b + l.act_until_w : l.act_until_b);
  }
  const double tokens = 2.0 * 4.0 * double(m.context); // int32 ids and targets per sample
  return state + double(batch) * (kept + tokens);
}

} // namespace

double training_bytes(const model_config& model, int64_t batch) {
  return spec_bytes(model, batch, 4.0, true);
}

double evaluation_bytes(const model_config& model, int64_t batch) {
  return spec_bytes(model, batch, 2.0, false);
}

std::string memory_problem(double needed, const host_resources& host, const std::string& what) {
  // A host whose memory cannot be read is not judged.
  if (host.available_bytes <= 0 || needed <= host.available_bytes)
    return {};
  return what + " needs at least " + byte_size_text(needed) + " of memory, but this machine has " +
         byte_size_text(host.available_bytes) + " available";
}

std::string threads_problem(int threads, const host_resources& host) {
  if (threads <= host.cores)
    return {};
  return "'threads' = " + std::to_string(threads) + " is more than the " +
         std::to_string(host.cores) + " cores of this machine";
}

void require_fits_host(const train_config& c, const host_resources& host, batch_use use) {
  const config_origin& origin = c.origin;
  const std::filesystem::path file = origin.file.empty() ? "train config" : origin.file;
  if (auto problem = threads_problem(c.threads, host); !problem.empty())
    fail_input(file, origin.line("threads"), problem);
  const model_config& m = c.model;
  const double model_alone = training_bytes(m, 1);
  const double needed =
      use == batch_use::whole
          ? training_bytes(m, c.batch)
          : model_alone + 2.0 * 4.0 * double(m.context) * double(std::max(0, c.batch - 1));
  const std::string what = "training a model of " + std::to_string(m.n_layer) +
                           " layers (d_model " + std::to_string(m.d_model) + ", context " +
                           std::to_string(m.context) + ") on batches of " + std::to_string(c.batch);
  const std::string problem = memory_problem(needed, host, what);
  if (problem.empty())
    return;
  // Point at what to change: the model when it does not fit even for one sample.
  int64_t line = 0;
  if (!memory_problem(model_alone, host, what).empty()) {
    for (const char* key :
         {"model.n_layer", "model.d_model", "model.context", "model.n_head", "model"})
      if ((line = origin.line(key)) > 0)
        break;
  } else {
    line = origin.line("batch");
  }
  fail_input(file, line, problem);
}

} // namespace deepcee::runtime

#include "runtime/step/device_rows_check.hpp"

namespace deepcee::runtime {

rows_shape expected_rows(op_kind kind, int samples, const model_config& model, bool first_stage,
                         bool last_stage) {
  const bool forward = kind == op_kind::forward;
  const bool writes = (forward && !last_stage) || (kind == op_kind::backward_input && !first_stage);
  const int64_t token_values = int64_t{samples} * model.context;
  rows_shape shape;
  shape.output_values = writes ? token_values * model.d_model : 0;
  shape.tokens = forward && first_stage ? token_values : 0;
  shape.targets = forward && last_stage ? token_values : 0;
  return shape;
}

std::string device_rows_refusal(const rows_request& rows, int samples, const model_config& model,
                                bool first_stage, bool last_stage) {
  const auto what = "device_rows m" + std::to_string(rows.micro) + ": ";
  if (rows.samples != samples)
    return what + std::to_string(rows.samples) + " samples, the plan gives this device " +
           std::to_string(samples);
  const rows_shape shape = expected_rows(rows.kind, samples, model, first_stage, last_stage);
  if (rows.output_values != shape.output_values)
    return what + "asks for " + std::to_string(rows.output_values) +
           " output values, the op writes " + std::to_string(shape.output_values);
  if (static_cast<int64_t>(rows.tokens.size()) != shape.tokens ||
      static_cast<int64_t>(rows.targets.size()) != shape.targets)
    return what + std::to_string(rows.tokens.size()) + " tokens and " +
           std::to_string(rows.targets.size()) + " targets for " + std::to_string(samples) +
           " samples of " + std::to_string(model.context);
  for (const auto values : {rows.tokens, rows.targets})
    for (int32_t t : values)
      if (t < 0 || t >= model.vocab)
        return what + "token " + std::to_string(t) + " outside the vocabulary of " +
               std::to_string(model.vocab);
  return {};
}

} // namespace deepcee::runtime

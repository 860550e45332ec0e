#pragma once

#include "runtime/base/train_config.hpp"
#include "runtime/schedule/schedule.hpp"

#include <cstdint>
#include <span>
#include <string>

/// The check a device applies to a request for one op on its rows that came from a stage on
/// another node: nothing in it is trusted before it is allocated or indexed.
namespace deepcee::runtime {

/// What a device's rows request carries (actors' device_rows), as the check reads it.
struct rows_request {
  op_kind kind = op_kind::forward;
  int micro = 0;
  int samples = 0;
  int64_t output_values = 0; ///< the values the answer is to carry
  std::span<const int32_t> tokens;
  std::span<const int32_t> targets;
};

/// The values one op on `samples` rows of a device carries, by where its stage sits.
struct rows_shape {
  int64_t output_values = 0; ///< the rows the op writes: samples * T * C, or 0
  int64_t tokens = 0;        ///< the first stage's F: samples * T, else 0
  int64_t targets = 0;       ///< the last stage's F: samples * T, else 0
};

/// An F writes rows for the next stage unless it is the last stage (the loss ends it there),
/// a B writes them for the previous stage unless it is the first; a W writes none. The
/// first stage's F reads tokens (they index the embedding), the last stage's F targets.
rows_shape expected_rows(op_kind kind, int samples, const model_config& model, bool first_stage,
                         bool last_stage);

/// Why `rows` may not run on a device that the plan gives `samples` samples, of a stage that
/// is the pipeline's first and/or last (empty: it may). Its samples must be the plan's, its
/// output values, tokens and targets the expected_rows of them, and each token and target
/// inside the model's vocabulary. The reason starts "device_rows m<micro>: ".
std::string device_rows_refusal(const rows_request& rows, int samples, const model_config& model,
                                bool first_stage, bool last_stage);

} // namespace deepcee::runtime

// A stage's layers with their AdamW moments, between the coordinator's node and a stage on
// another node: a snapshot after a step, a restore on resume.
#include "messages/codec.hpp"
#include "messages/wire.hpp"

#include <stdexcept>

namespace deepcee::messages {

using detail::checker;
using detail::get_floats;
using detail::set_floats;

namespace {

/// The number of values a shape holds, or -1 when a dimension is not positive or the
/// product leaves what one Data field can hold.
int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (auto d : shape)
    if (d <= 0 || __builtin_mul_overflow(n, d, &n) || n > max_payload_bytes / 4)
      return -1;
  return n;
}

/// Refuses, naming the parameter, values above Cap'n Proto's limit on a Data field.
void check_field_size(const std::vector<float>& values, const std::string& name,
                      const char* field) {
  const auto bytes = static_cast<int64_t>(values.size()) * 4;
  if (bytes > max_payload_bytes)
    throw std::invalid_argument("stage_snapshot: parameter '" + name + "' " + field + " has " +
                                std::to_string(bytes) +
                                " bytes, more than one Cap'n Proto "
                                "message field holds (" +
                                std::to_string(max_payload_bytes) + ")");
}

void check_parameter(checker& c, const parameter_tensor& p, const std::string& field) {
  c.require(!p.name.empty(), field + ".name", "is empty");
  c.require(!p.shape.empty(), field + ".shape", "is empty");
  const int64_t n = element_count(p.shape);
  c.require(n >= 0, field + ".shape",
            "has a dimension that is not positive or holds more values than a message field");
  if (n < 0)
    return;
  const auto want = static_cast<size_t>(n);
  c.require(p.value.size() == want, field + ".value",
            "holds " + std::to_string(p.value.size()) + " values, not the shape's " +
                std::to_string(n));
  const bool no_moments = p.exp_avg.empty() && p.exp_avg_sq.empty();
  c.require(no_moments || (p.exp_avg.size() == want && p.exp_avg_sq.size() == want),
            field + ".exp_avg",
            "and exp_avg_sq are neither both empty nor both of " + std::to_string(n) + " values");
}

/// The words of the whole message: its Data fields dominate.
size_t snapshot_words(const stage_snapshot& m) {
  size_t words = 16 + m.source.size() / 8;
  for (const auto& p : m.params)
    words += 16 + p.name.size() / 8 + p.shape.size() +
             (p.value.size() + p.exp_avg.size() + p.exp_avg_sq.size()) / 2;
  return words;
}

} // namespace

std::vector<uint8_t> encode(const stage_snapshot& m) {
  for (const auto& p : m.params) { // before any buffer is allocated
    check_field_size(p.value, p.name, "value");
    check_field_size(p.exp_avg, p.name, "exp_avg");
    check_field_size(p.exp_avg_sq, p.name, "exp_avg_sq");
  }
  const size_t words = snapshot_words(m);
  if (static_cast<int64_t>(words) * 8 > max_snapshot_bytes)
    throw std::invalid_argument("stage_snapshot: pipeline " + std::to_string(m.pipeline) +
                                " stage " + std::to_string(m.stage) + " holds about " +
                                std::to_string(words * 8) +
                                " bytes, more than one message "
                                "between nodes carries (" +
                                std::to_string(max_snapshot_bytes) + ")");
  return detail::build(words, [&](wire::Envelope::Builder e) {
    auto s = e.initStageSnapshot();
    s.setStep(m.step);
    s.setPipeline(m.pipeline);
    s.setStage(m.stage);
    s.setSource(m.source);
    auto params = s.initParams(static_cast<unsigned>(m.params.size()));
    for (unsigned i = 0; i < m.params.size(); ++i) {
      const auto& p = m.params[i];
      auto b = params[i];
      b.setName(p.name);
      detail::fill_list(b.initShape(static_cast<unsigned>(p.shape.size())), p.shape);
      set_floats(b.initValue(static_cast<unsigned>(p.value.size() * 4)), p.value);
      set_floats(b.initExpAvg(static_cast<unsigned>(p.exp_avg.size() * 4)), p.exp_avg);
      set_floats(b.initExpAvgSq(static_cast<unsigned>(p.exp_avg_sq.size() * 4)), p.exp_avg_sq);
    }
  });
}

result<stage_snapshot> decode_stage_snapshot(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::stage_snapshot;
  return detail::read<stage_snapshot>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<stage_snapshot> {
        const auto s = e.getStageSnapshot();
        stage_snapshot m;
        m.step = s.getStep();
        m.pipeline = s.getPipeline();
        m.stage = s.getStage();
        m.source = detail::text(s.getSource());
        checker c(kind);
        c.non_negative(m.step, "step");
        c.non_negative(m.pipeline, "pipeline");
        c.non_negative(m.stage, "stage");
        const auto params = s.getParams();
        m.params.reserve(params.size());
        for (unsigned i = 0; i < params.size() && !c.failed(); ++i) {
          const auto p = params[i];
          const std::string field = "params[" + std::to_string(i) + "]";
          // A size that is no whole number of floats is refused before it is read as one.
          for (auto [data, name] :
               {std::pair{p.getValue(), ".value"}, std::pair{p.getExpAvg(), ".exp_avg"},
                std::pair{p.getExpAvgSq(), ".exp_avg_sq"}})
            c.require(data.size() % 4 == 0, field + name,
                      "has " + std::to_string(data.size()) + " bytes, no whole number of floats");
          if (c.failed())
            break;
          parameter_tensor t{detail::text(p.getName()), detail::to_vector<int64_t>(p.getShape()),
                             get_floats(p.getValue()), get_floats(p.getExpAvg()),
                             get_floats(p.getExpAvgSq())};
          check_parameter(c, t, field);
          m.params.push_back(std::move(t));
        }
        return c.finish(std::move(m));
      });
}

} // namespace deepcee::messages

// The messages of a running job between actors on different nodes: the optimizer order,
// a stage's report of its step, and a node joining the coordinator's node (with its devices
// that serve other nodes' stages).
#include "messages/codec.hpp"
#include "messages/wire.hpp"

#include <algorithm>

namespace deepcee::messages {

using detail::checker;

namespace {

/// A report carries one record per executed op; a stage runs 3 ops per micro-batch, so
/// this bounds any real step by far and stops a peer from making us allocate without end.
constexpr size_t max_ops = size_t{1} << 20;
/// Texts are one line of a log or a name: far below a megabyte.
constexpr size_t max_text = 64 * 1024;

std::string one_line(std::string s) {
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return s;
}

} // namespace

std::vector<uint8_t> encode(const optimize_order& m) {
  return detail::build(64, [&](wire::Envelope::Builder e) {
    auto s = e.initOptimizeOrder();
    s.setStep(m.step);
    s.setLearningRate(m.learning_rate);
    s.setGradNorm(m.grad_norm);
  });
}

result<optimize_order> decode_optimize_order(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::optimize_order;
  return detail::read<optimize_order>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<optimize_order> {
        const auto s = e.getOptimizeOrder();
        optimize_order m{s.getStep(), s.getLearningRate(), s.getGradNorm()};
        checker c(kind);
        c.non_negative(m.step, "step");
        c.require(std::isfinite(m.learning_rate) && m.learning_rate >= 0, "learning_rate",
                  "is not a finite non-negative number");
        // A non-finite norm is a diverged step: data the optimizer must see, not malformed.
        c.require(!(m.grad_norm < 0), "grad_norm", "is negative");
        return c.finish(m);
      });
}

std::vector<uint8_t> encode(const stage_report& m) {
  const size_t words = 64 + 4 * m.ops.size() + m.error.size() / 8;
  return detail::build(words, [&](wire::Envelope::Builder e) {
    auto s = e.initStageReport();
    s.setStep(m.step);
    s.setPipeline(m.pipeline);
    s.setStage(m.stage);
    s.setEndTime(m.end_time);
    s.setLossSum(m.loss_sum);
    s.setGradSumSquares(m.grad_sum_squares);
    auto ops = s.initOps(static_cast<unsigned>(m.ops.size()));
    for (unsigned i = 0; i < m.ops.size(); ++i) {
      ops[i].setKind(m.ops[i].kind);
      ops[i].setMicroBatch(m.ops[i].micro_batch);
      ops[i].setStart(m.ops[i].start);
      ops[i].setEnd(m.ops[i].end);
    }
    s.setDropped(m.dropped);
    s.setError(m.error);
    s.setCode(static_cast<wire::ErrorCode>(m.code));
  });
}

result<stage_report> decode_stage_report(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::stage_report;
  return detail::read<stage_report>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<stage_report> {
        const auto s = e.getStageReport();
        checker c(kind);
        stage_report m;
        m.step = s.getStep();
        m.pipeline = s.getPipeline();
        m.stage = s.getStage();
        m.end_time = s.getEndTime();
        m.loss_sum = s.getLossSum();
        m.grad_sum_squares = s.getGradSumSquares();
        m.dropped = s.getDropped();
        c.non_negative(m.step, "step");
        c.non_negative(m.pipeline, "pipeline");
        c.non_negative(m.stage, "stage");
        c.time(m.end_time, "end_time");
        c.non_negative(m.dropped, "dropped");
        // A non-finite loss or norm is a diverged run, which the coordinator reports.
        c.require(!(m.grad_sum_squares < 0), "grad_sum_squares", "is negative");
        const auto ops = s.getOps();
        c.require(ops.size() <= max_ops, "ops", "has " + std::to_string(ops.size()) + " records");
        c.require(s.getError().size() <= max_text, "error", "is longer than a log line");
        c.known(s.getCode(), wire::ErrorCode::TIMEOUT, "code");
        if (c.failed())
          return c.finish(std::move(m));
        m.ops.reserve(ops.size());
        for (const auto op : ops) {
          const op_record r{op.getKind(), op.getMicroBatch(), op.getStart(), op.getEnd()};
          const std::string at = "ops[" + std::to_string(m.ops.size()) + "].";
          c.require(r.kind >= 0 && r.kind <= 2, at + "kind", "is no op kind");
          c.non_negative(r.micro_batch, at + "micro_batch");
          c.time(r.start, at + "start");
          c.time(r.end, at + "end");
          c.require(r.end >= r.start, at + "end", "is before start");
          m.ops.push_back(r);
        }
        m.error = one_line(detail::text(s.getError()));
        m.code = static_cast<error_code>(s.getCode());
        return c.finish(std::move(m));
      });
}

std::vector<uint8_t> encode(const node_join& m) {
  const size_t words =
      64 + (m.stages.size() + m.devices.size()) / 2 + (m.node.size() + m.job.size()) / 8;
  return detail::build(words, [&](wire::Envelope::Builder e) {
    auto s = e.initNodeJoin();
    s.setNode(m.node);
    s.setJob(m.job);
    detail::fill_list(s.initStages(static_cast<unsigned>(m.stages.size())), m.stages);
    detail::fill_list(s.initDevices(static_cast<unsigned>(m.devices.size())), m.devices);
  });
}

result<node_join> decode_node_join(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::node_join;
  return detail::read<node_join>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<node_join> {
        const auto s = e.getNodeJoin();
        checker c(kind);
        c.require(s.getNode().size() > 0 && s.getNode().size() <= max_text, "node",
                  "is empty or longer than a name");
        c.require(s.getJob().size() <= max_text, "job", "is longer than a fingerprint");
        if (c.failed())
          return c.finish(node_join{});
        node_join m{one_line(detail::text(s.getNode())), one_line(detail::text(s.getJob())),
                    detail::to_vector<int>(s.getStages()), detail::to_vector<int>(s.getDevices())};
        for (size_t i = 0; i < m.stages.size(); ++i)
          c.non_negative(m.stages[i], "stages[" + std::to_string(i) + "]");
        for (size_t i = 0; i < m.devices.size(); ++i)
          c.non_negative(m.devices[i], "devices[" + std::to_string(i) + "]");
        return c.finish(std::move(m));
      });
}

} // namespace deepcee::messages

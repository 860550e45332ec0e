// The small control messages: step start, link samples, step statistics, rebalance,
// heartbeats and errors.
#include "messages/codec.hpp"
#include "messages/wire.hpp"

#include <algorithm>
#include <cmath>

namespace deepcee::messages {

using detail::checker;

namespace {

static_assert(unsigned(wire::ErrorCode::TIMEOUT) == unsigned(error_code::timeout));

/// Control messages are small: their size is a bound, not a guess that matters.
size_t control_words(size_t list_entries) {
  return 64 + 2 * list_entries;
}

/// Error and log lines stay one line whatever a peer sends.
std::string one_line(std::string s) {
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return s;
}

void check_counts(checker& c, const std::vector<int>& counts, const std::string& field) {
  c.require(!counts.empty(), field, "is empty");
  for (size_t i = 0; i < counts.size(); ++i)
    c.non_negative(counts[i], field + "[" + std::to_string(i) + "]");
}

} // namespace

result<message_kind> peek_kind(std::span<const uint8_t> bytes) {
  const auto in = detail::aligned_copy(bytes);
  if (!in)
    return in.error();
  try {
    capnp::FlatArrayMessageReader reader(in->words, detail::reader_options(*in));
    if (reader.getEnd() != in->words.end())
      return decode_error{"bytes after the end of the message"};
    const auto which = reader.getRoot<wire::Envelope>().which();
    if (auto kind = detail::kind_of(which))
      return *kind;
    return decode_error{"unknown message kind " + std::to_string(unsigned(which))};
  } catch (const kj::Exception& e) {
    return decode_error{std::string("malformed message: ") + e.getDescription().cStr()};
  }
}

std::vector<uint8_t> encode(const step_start& m) {
  return detail::build(control_words(m.micro_batches.size()), [&](wire::Envelope::Builder e) {
    auto s = e.initStepStart();
    s.setStep(m.step);
    detail::fill_list(s.initMicroBatches(m.micro_batches.size()), m.micro_batches);
    s.setLearningRate(m.learning_rate);
    s.setStartTime(m.start_time);
  });
}

result<step_start> decode_step_start(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::step_start;
  return detail::read<step_start>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<step_start> {
        const auto s = e.getStepStart();
        step_start m{s.getStep(), detail::to_vector<int>(s.getMicroBatches()), s.getLearningRate(),
                     s.getStartTime()};
        checker c(kind);
        c.non_negative(m.step, "step");
        check_counts(c, m.micro_batches, "micro_batches");
        c.require(std::isfinite(m.learning_rate) && m.learning_rate >= 0, "learning_rate",
                  "is not a finite non-negative number");
        c.time(m.start_time, "start_time");
        return c.finish(std::move(m));
      });
}

std::vector<uint8_t> encode(const link_sample& m) {
  return detail::build(control_words(0), [&](wire::Envelope::Builder e) {
    auto s = e.initLinkSample();
    s.setFrom(m.from);
    s.setTo(m.to);
    s.setBytes(std::llround(m.bytes)); // a link carries whole bytes
    s.setStart(m.start);
    s.setEnd(m.end);
    s.setStep(m.step);
    s.setKind(static_cast<wire::TensorKind>(m.kind));
    s.setMicroBatch(m.micro_batch);
    s.setPipeline(m.pipeline);
    s.setStage(m.stage);
    s.setLink(m.link);
    s.setSendTime(m.send_time);
    s.setDrained(m.drained);
  });
}

result<link_sample> decode_link_sample(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::link_sample;
  return detail::read<link_sample>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<link_sample> {
        const auto s = e.getLinkSample();
        checker c(kind);
        c.known(s.getKind(), wire::TensorKind::GRADIENT_SHARE, "kind");
        link_sample m{s.getFrom(),
                      s.getTo(),
                      static_cast<double>(s.getBytes()),
                      s.getStart(),
                      s.getEnd(),
                      s.getStep(),
                      static_cast<tensor_kind>(s.getKind()),
                      s.getMicroBatch(),
                      s.getPipeline(),
                      s.getStage(),
                      s.getLink(),
                      s.getSendTime(),
                      s.getDrained()};
        c.non_negative(m.from, "from");
        c.non_negative(m.to, "to");
        c.non_negative(s.getBytes(), "bytes");
        c.time(m.start, "start");
        c.time(m.end, "end");
        c.non_negative(m.step, "step");
        c.non_negative(m.micro_batch, "micro_batch");
        c.non_negative(m.pipeline, "pipeline");
        c.non_negative(m.stage, "stage");
        c.non_negative(m.link, "link");
        c.time(m.send_time, "send_time");
        c.time(m.drained, "drained");
        // Queued from send_time, draining from start to drained, arrived at end.
        c.require(m.start >= m.send_time, "start", "is before send_time");
        c.require(m.drained >= m.start, "drained", "is before start");
        c.require(m.end >= m.drained, "end", "is before drained");
        return c.finish(m);
      });
}

std::vector<uint8_t> encode(const step_stats& m) {
  return detail::build(control_words(8 * m.stages.size()), [&](wire::Envelope::Builder e) {
    auto s = e.initStepStats();
    s.setStep(m.step);
    auto stages = s.initStages(m.stages.size());
    for (unsigned i = 0; i < m.stages.size(); ++i) {
      const auto& x = m.stages[i];
      auto w = stages[i];
      w.setPipeline(x.pipeline);
      w.setStage(x.stage);
      w.setComputeBusy(x.compute_busy);
      w.setIdle(x.idle);
      w.setBytesSent(x.bytes_sent);
      w.setPeakMemory(x.peak_memory);
      w.setLossSum(x.loss_sum);
      w.setTokenCount(x.token_count);
    }
  });
}

result<step_stats> decode_step_stats(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::step_stats;
  return detail::read<step_stats>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<step_stats> {
        const auto s = e.getStepStats();
        checker c(kind);
        step_stats m;
        m.step = s.getStep();
        c.non_negative(m.step, "step");
        for (const auto w : s.getStages()) {
          const stage_stats x{w.getPipeline(), w.getStage(),     w.getComputeBusy(),
                              w.getIdle(),     w.getBytesSent(), w.getPeakMemory(),
                              w.getLossSum(),  w.getTokenCount()};
          const std::string at = "stages[" + std::to_string(m.stages.size()) + "].";
          c.non_negative(x.pipeline, at + "pipeline");
          c.non_negative(x.stage, at + "stage");
          c.time(x.compute_busy, at + "compute_busy");
          c.time(x.idle, at + "idle");
          c.non_negative(x.bytes_sent, at + "bytes_sent");
          c.non_negative(x.peak_memory, at + "peak_memory");
          c.non_negative(x.token_count, at + "token_count");
          // A non-finite loss is a diverged run, which the coordinator must report; it is
          // data, not a malformed message.
          m.stages.push_back(x);
        }
        return c.finish(std::move(m));
      });
}

std::vector<uint8_t> encode(const rebalance& m) {
  size_t entries = m.micro_batches.size() + 2 * m.compressions.size();
  for (const auto& split : m.samples)
    entries += split.size() + 2;
  return detail::build(control_words(entries), [&](wire::Envelope::Builder e) {
    auto s = e.initRebalance();
    detail::fill_list(s.initMicroBatches(m.micro_batches.size()), m.micro_batches);
    s.setEffectiveStep(m.effective_step);
    auto samples = s.initSamples(static_cast<unsigned>(m.samples.size()));
    for (unsigned i = 0; i < m.samples.size(); ++i)
      detail::fill_list(samples.init(i, static_cast<unsigned>(m.samples[i].size())), m.samples[i]);
    auto comp = s.initCompressions(static_cast<unsigned>(m.compressions.size()));
    for (unsigned i = 0; i < m.compressions.size(); ++i)
      comp.set(i, static_cast<wire::Compression>(m.compressions[i]));
  });
}

result<rebalance> decode_rebalance(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::rebalance;
  return detail::read<rebalance>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<rebalance> {
        const auto s = e.getRebalance();
        rebalance m{detail::to_vector<int>(s.getMicroBatches()), s.getEffectiveStep()};
        checker c(kind);
        check_counts(c, m.micro_batches, "micro_batches");
        c.non_negative(m.effective_step, "effective_step");
        for (unsigned i = 0; i < s.getSamples().size(); ++i) {
          m.samples.push_back(detail::to_vector<int>(s.getSamples()[i]));
          check_counts(c, m.samples.back(), "samples[" + std::to_string(i) + "]");
        }
        for (unsigned i = 0; i < s.getCompressions().size(); ++i) {
          const auto x = s.getCompressions()[i];
          c.known(x, wire::Compression::INT8, "compressions[" + std::to_string(i) + "]");
          m.compressions.push_back(static_cast<runtime::compression>(x));
        }
        return c.finish(std::move(m));
      });
}

std::vector<uint8_t> encode(const heartbeat& m) {
  return detail::build(control_words(m.node.size() / 8), [&](wire::Envelope::Builder e) {
    auto s = e.initHeartbeat();
    s.setNode(m.node);
    s.setSequence(m.sequence);
    s.setTime(m.time);
  });
}

result<heartbeat> decode_heartbeat(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::heartbeat;
  return detail::read<heartbeat>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<heartbeat> {
        const auto s = e.getHeartbeat();
        heartbeat m{detail::text(s.getNode()), s.getSequence(), s.getTime()};
        checker c(kind);
        c.require(!m.node.empty(), "node", "is empty");
        c.time(m.time, "time");
        return c.finish(std::move(m));
      });
}

std::vector<uint8_t> encode(const error_report& m) {
  const size_t words = control_words((m.node.size() + m.message.size()) / 8);
  return detail::build(words, [&](wire::Envelope::Builder e) {
    auto s = e.initError();
    s.setNode(m.node);
    s.setCode(static_cast<wire::ErrorCode>(m.code));
    s.setMessage(m.message);
  });
}

result<error_report> decode_error_report(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::error;
  return detail::read<error_report>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<error_report> {
        const auto s = e.getError();
        checker c(kind);
        c.require(s.hasNode() && s.getNode().size() > 0, "node", "is empty");
        c.known(s.getCode(), wire::ErrorCode::TIMEOUT, "code");
        error_report m{detail::text(s.getNode()), static_cast<error_code>(s.getCode()),
                       one_line(detail::text(s.getMessage()))};
        return c.finish(std::move(m));
      });
}

} // namespace deepcee::messages

// The messages of conservative synchronisation on a link that several stages send on:
// a transfer part put on it, a sender's promise about its next sends, and the arrival
// time the link decided (actors/pipe_actor.hpp).
#include "messages/codec.hpp"
#include "messages/wire.hpp"

namespace deepcee::messages {

using detail::checker;

namespace {

/// The routing every pipe message carries: a known role, a stage and a step. A promise to a
/// pipe covers every role (-1).
void check_route(checker& c, int64_t step, int role, int pipeline, int stage,
                 bool any_role = false) {
  c.non_negative(step, "step");
  c.require(role == 0 || role == 1 || (any_role && role == -1), "role",
            "is neither activation (0) nor gradient (1)" + std::string(any_role ? " nor -1" : ""));
  c.non_negative(pipeline, "pipeline");
  c.non_negative(stage, "stage");
}

} // namespace

std::vector<uint8_t> encode(const pipe_request& m) {
  return detail::build(64, [&](wire::Envelope::Builder e) {
    auto s = e.initPipeRequest();
    s.setStep(m.step);
    s.setRole(static_cast<uint8_t>(m.role));
    s.setPipeline(m.pipeline);
    s.setStage(m.stage);
    s.setMicroBatch(m.micro_batch);
    s.setPart(m.part);
    s.setSendTime(m.send_time);
  });
}

result<pipe_request> decode_pipe_request(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::pipe_request;
  return detail::read<pipe_request>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<pipe_request> {
        const auto s = e.getPipeRequest();
        pipe_request m{s.getStep(),       s.getRole(), s.getPipeline(), s.getStage(),
                       s.getMicroBatch(), s.getPart(), s.getSendTime()};
        checker c(kind);
        check_route(c, m.step, m.role, m.pipeline, m.stage);
        c.non_negative(m.micro_batch, "micro_batch");
        c.non_negative(m.part, "part");
        c.time(m.send_time, "send_time");
        return c.finish(m);
      });
}

std::vector<uint8_t> encode(const send_horizon& m) {
  return detail::build(64, [&](wire::Envelope::Builder e) {
    auto s = e.initSendHorizon();
    s.setStep(m.step);
    s.setTime(m.time);
    s.setPipeline(m.pipeline);
    s.setStage(m.stage);
    s.setRole(static_cast<int8_t>(m.role));
  });
}

result<send_horizon> decode_send_horizon(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::send_horizon;
  return detail::read<send_horizon>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<send_horizon> {
        const auto s = e.getSendHorizon();
        send_horizon m{s.getStep(), s.getTime(), s.getPipeline(), s.getStage(), s.getRole()};
        checker c(kind);
        check_route(c, m.step, m.role, m.pipeline, m.stage, true);
        c.finite(m.time, "time"); // "nothing before this step" is the lowest finite double
        return c.finish(m);
      });
}

std::vector<uint8_t> encode(const pipe_arrival& m) {
  return detail::build(64, [&](wire::Envelope::Builder e) {
    auto s = e.initPipeArrival();
    s.setStep(m.step);
    s.setRole(static_cast<uint8_t>(m.role));
    s.setPipeline(m.pipeline);
    s.setStage(m.stage);
    s.setMicroBatch(m.micro_batch);
    s.setArrivalTime(m.arrival_time);
  });
}

result<pipe_arrival> decode_pipe_arrival(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::pipe_arrival;
  return detail::read<pipe_arrival>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<pipe_arrival> {
        const auto s = e.getPipeArrival();
        pipe_arrival m{s.getStep(),  s.getRole(),       s.getPipeline(),
                       s.getStage(), s.getMicroBatch(), s.getArrivalTime()};
        checker c(kind);
        check_route(c, m.step, m.role, m.pipeline, m.stage);
        c.non_negative(m.micro_batch, "micro_batch");
        c.time(m.arrival_time, "arrival_time");
        return c.finish(m);
      });
}

} // namespace deepcee::messages

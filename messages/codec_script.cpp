// A running job's fluctuation and fault script (script_update): what the coordinator sends
// to every stage and pipe once events were injected into the job.
#include "messages/codec.hpp"
#include "messages/wire.hpp"

#include <stdexcept>

namespace deepcee::messages {

using detail::checker;

namespace {

static_assert(unsigned(wire::ScriptScope::DEVICE) ==
              unsigned(runtime::link_endpoint::scope::device));
static_assert(unsigned(wire::NodeAction::HEAL) == unsigned(runtime::node_action::heal));

/// A step event's step, or -1 for an event at a time.
int32_t step_of(const std::optional<int>& step) {
  return step ? *step : -1;
}

void set_endpoint(wire::ScriptEndpoint::Builder w, const runtime::link_endpoint& e) {
  w.setScope(static_cast<wire::ScriptScope>(e.what));
  w.setIndex(e.index);
}

runtime::link_endpoint endpoint_of(checker& c, wire::ScriptEndpoint::Reader w,
                                   const std::string& field) {
  c.known(w.getScope(), wire::ScriptScope::DEVICE, field + ".scope");
  c.non_negative(w.getIndex(), field + ".index");
  return {static_cast<runtime::link_endpoint::scope>(w.getScope()), w.getIndex()};
}

/// Reads an event's time or step into `at_s` and `at_step`.
template <class Reader>
void time_of(checker& c, Reader w, const std::string& at, double& at_s,
             std::optional<int>& at_step) {
  at_s = w.getAtS();
  c.time(at_s, at + "at_s");
  c.require(w.getAtStep() >= -1, at + "at_step", "is below -1");
  if (w.getAtStep() >= 0)
    at_step = w.getAtStep();
}

/// An optional quantity: its value where its flag is set.
std::optional<double> optional_of(bool has, double v) {
  return has ? std::optional<double>(v) : std::nullopt;
}

} // namespace

std::vector<uint8_t> encode(const script_update& m) {
  const auto& s = m.script;
  const size_t events = s.changes().size() + s.device_changes().size() + s.node_changes().size();
  return detail::build(64 + 24 * events, [&](wire::Envelope::Builder e) {
    auto w = e.initScriptUpdate();
    w.setStep(m.step);
    auto links = w.initLinks(static_cast<unsigned>(s.changes().size()));
    for (unsigned i = 0; i < links.size(); ++i) {
      const auto& x = s.changes()[i];
      auto l = links[i];
      l.setAtS(x.at_s);
      l.setAtStep(step_of(x.at_step));
      set_endpoint(l.initA(), x.a);
      set_endpoint(l.initB(), x.b);
      l.setAnyPeer(x.any_peer);
      l.setHasBandwidthBps(x.bandwidth_Bps.has_value());
      l.setBandwidthBps(x.bandwidth_Bps.value_or(0));
      l.setHasLatencyS(x.latency_s.has_value());
      l.setLatencyS(x.latency_s.value_or(0));
      l.setHasBandwidthScale(x.bandwidth_scale.has_value());
      l.setBandwidthScale(x.bandwidth_scale.value_or(0));
      l.setHasLatencyScale(x.latency_scale.has_value());
      l.setLatencyScale(x.latency_scale.value_or(0));
      l.setHasJitter(x.jitter.has_value());
      l.setJitter(x.jitter.value_or(0));
      l.setSeed(x.seed);
      l.setLine(x.line);
    }
    auto devices = w.initDevices(static_cast<unsigned>(s.device_changes().size()));
    for (unsigned i = 0; i < devices.size(); ++i) {
      const auto& x = s.device_changes()[i];
      auto d = devices[i];
      d.setAtS(x.at_s);
      d.setAtStep(step_of(x.at_step));
      d.setDevice(x.device);
      d.setSlowdown(x.slowdown);
      d.setLine(x.line);
    }
    auto nodes = w.initNodes(static_cast<unsigned>(s.node_changes().size()));
    for (unsigned i = 0; i < nodes.size(); ++i) {
      const auto& x = s.node_changes()[i];
      auto n = nodes[i];
      n.setAtS(x.at_s);
      n.setAtStep(step_of(x.at_step));
      n.setNode(x.node);
      n.setAction(static_cast<wire::NodeAction>(x.action));
      n.setLine(x.line);
    }
  });
}

result<script_update> decode_script_update(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::script_update;
  return detail::read<script_update>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<script_update> {
        const auto w = e.getScriptUpdate();
        checker c(kind);
        script_update m;
        m.step = w.getStep();
        c.non_negative(m.step, "step");
        std::vector<runtime::link_change> links;
        for (const auto l : w.getLinks()) {
          const std::string at = "links[" + std::to_string(links.size()) + "].";
          runtime::link_change x;
          time_of(c, l, at, x.at_s, x.at_step);
          x.a = endpoint_of(c, l.getA(), at + "a");
          x.b = endpoint_of(c, l.getB(), at + "b");
          x.any_peer = l.getAnyPeer();
          x.bandwidth_Bps = optional_of(l.getHasBandwidthBps(), l.getBandwidthBps());
          x.latency_s = optional_of(l.getHasLatencyS(), l.getLatencyS());
          x.bandwidth_scale = optional_of(l.getHasBandwidthScale(), l.getBandwidthScale());
          x.latency_scale = optional_of(l.getHasLatencyScale(), l.getLatencyScale());
          x.jitter = optional_of(l.getHasJitter(), l.getJitter());
          x.seed = l.getSeed();
          x.line = l.getLine();
          links.push_back(x);
        }
        std::vector<runtime::device_change> devices;
        for (const auto d : w.getDevices()) {
          const std::string at = "devices[" + std::to_string(devices.size()) + "].";
          runtime::device_change x;
          time_of(c, d, at, x.at_s, x.at_step);
          x.device = d.getDevice();
          c.non_negative(x.device, at + "device");
          x.slowdown = d.getSlowdown();
          x.line = d.getLine();
          devices.push_back(x);
        }
        std::vector<runtime::node_change> nodes;
        for (const auto n : w.getNodes()) {
          const std::string at = "nodes[" + std::to_string(nodes.size()) + "].";
          runtime::node_change x;
          time_of(c, n, at, x.at_s, x.at_step);
          x.node = n.getNode();
          c.non_negative(x.node, at + "node");
          c.known(n.getAction(), wire::NodeAction::HEAL, at + "action");
          x.action = static_cast<runtime::node_action>(n.getAction());
          x.line = n.getLine();
          nodes.push_back(x);
        }
        if (c.failed())
          return c.finish(std::move(m));
        try {
          // The script's own rules: positive bandwidths, scales and slowdowns, a jitter in
          // [0, 1), no negative latency.
          m.script = runtime::link_timeline(std::move(links), std::move(devices), std::move(nodes));
        } catch (const std::invalid_argument& x) {
          c.require(false, "script", std::string("is invalid: ") + x.what());
        }
        return c.finish(std::move(m));
      });
}

} // namespace deepcee::messages

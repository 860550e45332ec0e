#include "tools/lab_inject.hpp"

#include <signal.h>

#include <chrono>
#include <cstdio>

namespace deepcee::tools {

namespace {

using runtime::lab_event;

std::string mbit(std::optional<double> rate_Bps) {
  if (!rate_Bps)
    return "unshaped";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gMbit", *rate_Bps * 8 / 1e6);
  return buf;
}

/// A CSV field: quoted, quotes doubled.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s)
    out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

} // namespace

lab_injector::lab_injector(const lab_context& ctx, const lab_state& state,
                           std::vector<runtime::lab_event> events, const std::filesystem::path& csv)
    : ctx_(ctx), state_(state), events_(std::move(events)), applied_(events_.size(), false),
      csv_(csv) {
  for (size_t i = 0; i < state_.topology.links.size(); ++i) {
    rates_[{static_cast<int>(i), 0}] = state_.topology.links[i].a.rate_Bps;
    rates_[{static_cast<int>(i), 1}] = state_.topology.links[i].b.rate_Bps;
  }
  csv_ << "wall_s,unix_s,step,line,event,lab\n";
  csv_.flush();
}

std::optional<double>& lab_injector::rate_of(const runtime::lab_port_ref& p) {
  return rates_[{p.link, p.end}];
}

const runtime::lab_port& lab_injector::port(const runtime::lab_port_ref& p) const {
  const auto& l = state_.topology.links.at(static_cast<size_t>(p.link));
  return p.end == 0 ? l.a : l.b;
}

void lab_injector::poll(double elapsed_s, int step, const std::vector<int>& pids) {
  // In script order, each as soon as it is due: a step event does not wait for a timed
  // event that comes before it in the list.
  for (size_t i = 0; i < events_.size(); ++i) {
    const auto& e = events_[i];
    const bool due = e.at_step ? step >= *e.at_step : elapsed_s >= e.at_s;
    if (applied_[i] || !due)
      continue;
    const auto done = apply(e, pids);
    applied_[i] = true;
    csv_ << elapsed_s << "," << std::to_string(unix_now_s()) << "," << step << "," << e.line << ","
         << quoted(e.text) << "," << quoted(done) << "\n";
    csv_.flush();
    std::printf("lab: %.1f s, step %d: %s: %s\n", elapsed_s, step, e.text.c_str(), done.c_str());
    std::fflush(stdout);
  }
}

std::string lab_injector::reshape(const lab_event& e) {
  std::string done;
  for (const auto& p : e.ports) {
    auto& rate = rate_of(p);
    const auto next = runtime::next_rate(e, rate);
    if (next && next != rate)
      run_checked(ctx_, runtime::shape_command(port(p), *next));
    done += (done.empty() ? "" : "; ") + port(p).netns + "/" + port(p).name + " " + mbit(rate) +
            " -> " + mbit(next);
    rate = next;
  }
  for (const auto& what : e.left_out)
    done += "; " + what + " left out (no netem)";
  return done;
}

std::string lab_injector::apply(const lab_event& e, const std::vector<int>& pids) {
  const auto& node = e.node >= 0 ? state_.topology.nodes.at(static_cast<size_t>(e.node))
                                 : state_.topology.nodes.at(0);
  const int pid = e.node >= 0 ? pids.at(static_cast<size_t>(e.node)) : 0;
  const auto signal = [&](int sig, const char* name) {
    if (pid <= 0)
      return std::string("node ") + node.name + " has ended: nothing to signal";
    ::kill(pid, sig);
    return std::string(name) + " to pid " + std::to_string(pid);
  };
  const auto link_set = [&](bool up) {
    const auto& t = state_.topology;
    for (const auto& cmd :
         up ? runtime::node_up_commands(t, e.node) : runtime::node_down_commands(t, e.node))
      run_checked(ctx_, cmd);
    return node.netns + "/" + ctx_.prefix + "-nic " + (up ? "up" : "down");
  };
  switch (e.what) {
  case lab_event::kind::rate:
    return reshape(e);
  case lab_event::kind::cpu: {
    const auto cores = runtime::cpu_under(node, e.slowdown);
    if (!set_cpu_limit(state_, e.node, cores))
      return "left out: this host offers the lab no CPU cgroup";
    return "cpu quota " + (cores ? std::to_string(*cores) + " cores" : std::string("removed"));
  }
  case lab_event::kind::stop:
    return signal(SIGSTOP, "SIGSTOP");
  case lab_event::kind::resume:
    return signal(SIGCONT, "SIGCONT");
  case lab_event::kind::kill:
    return signal(SIGKILL, "SIGKILL");
  case lab_event::kind::partition:
    return link_set(false);
  case lab_event::kind::heal:
    return link_set(true);
  }
  return "";
}

void lab_injector::restore() {
  for (auto& [key, rate] : rates_) {
    const runtime::lab_port_ref ref{key.first, key.second};
    const auto& initial = port(ref).rate_Bps;
    if (rate == initial)
      continue;
    if (initial)
      run_checked(ctx_, runtime::shape_command(port(ref), *initial));
    else
      run_checked(ctx_,
                  {"tc", "-n", port(ref).netns, "qdisc", "del", "dev", port(ref).name, "root"});
    rate = initial;
  }
  for (size_t i = 0; i < state_.topology.nodes.size(); ++i) {
    const auto& n = state_.topology.nodes[i];
    for (const auto& cmd : runtime::node_up_commands(state_.topology, static_cast<int>(i)))
      run_checked(ctx_, cmd);
    set_cpu_limit(state_, static_cast<int>(i), n.cpu_cores);
  }
}

} // namespace deepcee::tools

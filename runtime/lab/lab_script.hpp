#pragma once

#include "runtime/cluster/link_timeline.hpp"
#include "runtime/lab/lab_topology.hpp"

#include <optional>
#include <string>
#include <vector>

/// A job's fluctuation and fault script (the link-timeline format) as what `deepcee lab run`
/// does to the lab, in wall time: a link change reshapes the ports of the paths it names, a
/// device slowdown cuts its node's CPU quota, stop/resume/kill are SIGSTOP/SIGCONT/SIGKILL
/// to the node's process, and partition/heal take its interface down and up. Pure: the
/// runner (tools/lab_run.cpp) applies them.
namespace deepcee::runtime {

/// One end of one of the lab's links: `end` 0 is its `a`, 1 its `b`.
struct lab_port_ref {
  int link = 0;
  int end = 0;
  friend bool operator==(const lab_port_ref&, const lab_port_ref&) = default;
};

struct lab_event {
  enum class kind { rate, cpu, stop, resume, kill, partition, heal };
  kind what = kind::rate;
  double at_s = 0;            ///< wall seconds from the run's start (when `at_step` is unset)
  std::optional<int> at_step; ///< when the job starts this step (from 0)
  int64_t line = 0;
  std::string text;                ///< as the script's events are described elsewhere
  std::vector<lab_port_ref> ports; ///< kind rate: the ports whose egress it reshapes
  std::optional<double> bandwidth_Bps;
  std::optional<double> bandwidth_scale;
  std::vector<std::string> left_out; ///< what the lab cannot do ("latency", "jitter")
  int node = -1;                     ///< kind cpu and the node actions
  double slowdown = 1;               ///< kind cpu
};

/// The script's events as lab events, in time order (step events after the timed ones, each
/// group in order). Throws input_error "SOURCE:LINE: ..." for a change that names no path of
/// the lab (two ends in one region) or scales a port the lab leaves unshaped.
std::vector<lab_event> lab_events(const link_timeline& t, const cluster& c, const lab_topology& lab,
                                  const std::string& source);

/// The rate a port gets from a rate event, given what it has now (unset: unshaped).
std::optional<double> next_rate(const lab_event& e, std::optional<double> now);

/// The CPU limit in cores a node gets under `slowdown`: its own limit (or one core) divided
/// by it; unset when the slowdown is 1 and the node has no limit of its own.
std::optional<double> cpu_under(const lab_node& n, double slowdown);

/// What cgroup v1 cpu.cfs_quota_us (and v2 cpu.max's first field) holds for `cores` over a
/// period of `period_us`: -1 for no limit.
long long cpu_quota_us(std::optional<double> cores, long long period_us);

} // namespace deepcee::runtime

#pragma once

#include "runtime/cluster/profile.hpp"
#include "runtime/plan/job_config.hpp"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace deepcee::tools {

/// `deepcee profile --links JOB --name NODE`, run on every node of the job. Each node
/// publishes a link probe on its port. It times transfers of several sizes to every other
/// node's probe: a few bytes up to 4 MiB, the median of several round trips each. It fits
/// them to latency + bytes / bandwidth per directed node pair. The other nodes report their
/// rows to the coordinator's node, which returns every link (the others return theirs after
/// the coordinator's node has ended). A node that cannot be reached within the job's
/// connect timeout, or that never reports, is named in the error (exit 1). With `token`
/// the probes cross the nodes' gates, as the job's traffic does (node_network).
std::vector<runtime::measured_link> measure_links(const runtime::job_config& job, int me,
                                                  std::optional<std::string> token, std::FILE* out);

} // namespace deepcee::tools

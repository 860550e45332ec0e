#pragma once

#include "runtime/io/job_token.hpp"
#include "tools/lab_network.hpp"

#include <optional>
#include <string>
#include <vector>

namespace deepcee::tools {

struct lab_run_options {
  std::string job;
  std::optional<std::string> out;        ///< the run directory (else under the job's out)
  std::vector<std::string> node_options; ///< after `--`, given to every node
};

/// `deepcee lab run`: every node of the job started in its namespace of the lab, with the
/// lab's addresses (a derived job file in the run directory; the user's is not touched), each
/// logging to RUN/NODE.log, the job's script applied to the lab in wall time (the job itself
/// is not told) and logged to RUN/lab-events.csv. Returns 0 when every node ends 0, 130 on
/// Ctrl-C, 1 otherwise; the lab is put back as `lab up` left it.
int lab_run(const lab_context& ctx, const lab_run_options& o,
            const runtime::token_environment& token_env);

} // namespace deepcee::tools

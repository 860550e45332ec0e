#pragma once

#include "runtime/io/job_token.hpp"
#include "tools/lab_network.hpp"

#include <optional>
#include <string>
#include <vector>

namespace deepcee::tools {

struct lab_profile_options {
  std::string job;
  std::string profile;                      ///< the profile file the coordinator's node writes
  std::optional<std::string> out;           ///< the run directory (else under the job's out)
  std::vector<std::string> profile_options; ///< after `--`, given to every `deepcee profile`
};

/// `deepcee lab profile`: `deepcee profile --job JOB --name NODE` started on every node of
/// the job in its namespace of the lab (the derived job file at the lab's addresses, as
/// `lab run` writes it), so that the links between the nodes are measured on the paths the
/// kernel shapes, one node at a time. The coordinator's node measures its devices and writes
/// the profile. Returns 0 when every node ends 0, else 1 (each node's exit printed); the
/// logs are RUN/NODE.log.
int lab_profile(const lab_context& ctx, const lab_profile_options& o,
                const runtime::token_environment& token_env);

} // namespace deepcee::tools

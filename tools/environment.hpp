#pragma once

#include "runtime/io/job_token.hpp"

namespace deepcee::tools {

/// What deepcee takes from its environment, read once by main and handed to the commands
/// that need it: no code below main reads an environment variable.
struct process_environment {
  runtime::token_environment token; ///< DEEPCEE_TOKEN_FILE and DEEPCEE_TOKEN
  std::string path;                 ///< PATH: where `deepcee lab` finds ip and tc
};

process_environment read_process_environment();

} // namespace deepcee::tools

#pragma once

#include "kernels/backend/backend.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace deepcee::tools {

/// `explicit_dir` when given (created if missing), else a new "<kind>-YYYYmmdd-HHMMSS"
/// folder under `root` (with a numeric suffix if that exists already).
std::filesystem::path make_run_directory(const std::optional<std::string>& explicit_dir,
                                         const std::filesystem::path& root,
                                         const std::string& kind);

/// The backend a command asked for; a device that cannot be had is bad input.
std::unique_ptr<kernels::backend> open_backend(const std::string& device, int threads, bool bf16);

} // namespace deepcee::tools

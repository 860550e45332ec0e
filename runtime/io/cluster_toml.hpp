#pragma once

#include "runtime/cluster/cluster.hpp"

#include <filesystem>
#include <string_view>

namespace deepcee::runtime {

/// Reads a cluster description (format in configs/clusters/README.md). Every problem is
/// an input_error "FILE:LINE: what".
cluster load_cluster(const std::filesystem::path& path);
cluster parse_cluster(std::string_view toml_text, const std::filesystem::path& source);

} // namespace deepcee::runtime

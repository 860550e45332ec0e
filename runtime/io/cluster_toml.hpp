#pragma once

#include "runtime/cluster/cluster.hpp"

#include <cstddef>
#include <filesystem>
#include <string_view>

namespace deepcee::runtime {

/// The most devices a cluster file may describe: 16 times configs/clusters/cee-1024.toml,
/// whose plan search already takes a minute.
constexpr size_t max_cluster_devices = 16384;

/// Reads a cluster description (format in configs/clusters/README.md). Every problem is
/// an input_error "FILE:LINE: what".
cluster load_cluster(const std::filesystem::path& path);
cluster parse_cluster(std::string_view toml_text, const std::filesystem::path& source);

} // namespace deepcee::runtime

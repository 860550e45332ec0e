#pragma once

#include "runtime/cluster/link_timeline.hpp"

#include <filesystem>
#include <string_view>

namespace deepcee::runtime {

/// A timeline file (TOML):
///
///     [[change]]
///     at = 30                     # seconds from the start of the run, or "30s", "500ms"
///     between = ["cloud", "edge"] # regions, nodes or devices, named as in the cluster
///     bandwidth = "50Mbps"        # optional (a bare number is Mbps)
///     latency = "80ms"            # optional (a bare number is milliseconds)
///
/// Every problem is an input_error "FILE:LINE: what".
link_timeline load_link_timeline(const std::filesystem::path& path, const cluster& c);
link_timeline parse_link_timeline(std::string_view toml_text, const cluster& c,
                                  const std::filesystem::path& source);

} // namespace deepcee::runtime

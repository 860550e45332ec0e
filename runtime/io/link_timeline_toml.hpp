#pragma once

#include "runtime/cluster/link_timeline.hpp"

#include <filesystem>
#include <string_view>

namespace deepcee::runtime {

/// A timeline (fluctuation and fault script) file (TOML). Every event happens either
/// `at` a virtual time (seconds from the start of the run, or "30s", "500ms") or at the
/// start of `step` N (the first is 1, as in metrics.csv), never both:
///
///     [[change]]                  # links
///     at = 30
///     between = ["cloud", "edge"] # two regions, nodes or devices; or of = "edge0" (every
///                                 # link with one end inside it)
///     bandwidth = "50Mbps"        # set (a bare number is Mbps), or bandwidth_scale = 0.1
///     latency = "80ms"            # set (a bare number is ms), or latency_scale = 5
///     jitter = 0.2                # every later transfer's bandwidth x [0.8, 1.2], drawn
///     seed = 7                    # from (seed, pair, send time); 0 ends the jitter
///
///     [[device]]
///     step = 10
///     device = "edge0/0"
///     slowdown = 3                # 3x slower from then on; 1 restores it
///
///     [[node]]
///     at = "12s"
///     node = "edge0"
///     action = "stop"             # "stop", "resume" or "kill"
///
/// Every problem is an input_error "FILE:LINE: what".
link_timeline load_link_timeline(const std::filesystem::path& path, const cluster& c);
link_timeline parse_link_timeline(std::string_view toml_text, const cluster& c,
                                  const std::filesystem::path& source);

} // namespace deepcee::runtime

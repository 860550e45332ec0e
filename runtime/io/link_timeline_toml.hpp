#pragma once

#include "runtime/cluster/link_timeline.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace deepcee::runtime {

/// A timeline (fluctuation and fault script) file (TOML). Every event happens either `at` a
/// virtual time or at the start of `step` N, never both. A time is in seconds from the start
/// of the run, or "30s", "500ms". Steps count from 1, as in metrics.csv:
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
///     action = "stop"             # "stop", "resume", "kill", "partition" (its interface
///                                 # goes down) or "heal"
///
/// Every problem is an input_error "FILE:LINE: what".
link_timeline load_link_timeline(const std::filesystem::path& path, const cluster& c);
link_timeline parse_link_timeline(std::string_view toml_text, const cluster& c,
                                  const std::filesystem::path& source);

/// Events to inject into a running job (`deepcee inject ADDR SCRIPT`), in the script's
/// syntax. Here an event may also give neither `at` nor `step`. It then applies at the next
/// step boundary, as one whose time or step has passed (take_injected).
link_timeline parse_injected_events(std::string_view toml_text, const cluster& c,
                                    const std::filesystem::path& source);
/// One event given on the command line (`deepcee inject ADDR --event '...'`). It is one
/// TOML line `change = {...}`, `device = {...}` or `node = {...}`. Its inline table holds
/// the keys of a [[change]], [[device]] or [[node]] table, `at` and `step` optional as
/// above. Every problem is an input_error "--event:1: what". For example:
///     change = { between = ["cloud", "edge"], bandwidth_scale = 0.1 }
link_timeline parse_event_option(std::string_view text, const cluster& c);

/// What `deepcee inject` sends, as the coordinator's node (and the client, given the job)
/// reads it: from `source` "--event", one event per line (parse_event_option, the k-th
/// named "--event:k"); from any other source, a script (parse_injected_events).
link_timeline parse_injection(const std::string& source, std::string_view text, const cluster& c);

} // namespace deepcee::runtime

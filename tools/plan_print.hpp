#pragma once

#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/grouping.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/sim/simulator.hpp"

#include <cstdio>
#include <optional>
#include <string>

/// Text views of groups, plans and simulation results for `deepcee plan` and
/// `deepcee simulate`.
namespace deepcee::tools {

/// The profile table of `model` on `c`. A measured profile file, where given, must cover
/// every device kind, and its links become the cluster's.
runtime::profile_table profiles_for(runtime::cluster& c, const runtime::model_spec& model,
                                    const std::optional<std::string>& profile_file);

void print_groups(std::FILE* out, const runtime::cluster& c, const runtime::grouping& g);
void print_plan(std::FILE* out, const runtime::cluster& c, const runtime::model_spec& model,
                const runtime::plan& p);
void print_sim(std::FILE* out, const runtime::sim_result& s);
/// Writes the trace of one simulated step of `p` to `path`.
void write_trace_file(const runtime::cluster& c, const runtime::model_spec& model,
                      const runtime::profile_table& profiles, const runtime::plan& p,
                      const runtime::link_timeline& timeline, const std::string& path,
                      int steps = 1);

} // namespace deepcee::tools

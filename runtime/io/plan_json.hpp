#pragma once

#include "runtime/plan/plan.hpp"

#include <filesystem>
#include <string>

namespace deepcee::runtime {

std::string plan_to_json(const plan& p);
/// Parses and validates (without a cluster: device ids are checked by validate_plan).
plan plan_from_json(const std::string& text, const std::filesystem::path& source);
void save_plan(const plan& p, const std::filesystem::path& path);
plan load_plan(const std::filesystem::path& path);

} // namespace deepcee::runtime

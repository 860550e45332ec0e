#pragma once

#include "runtime/cluster/profile.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace deepcee::runtime {

measured_profile load_measured_profile(const std::filesystem::path& path);
measured_profile parse_measured_profile(std::string_view toml_text,
                                        const std::filesystem::path& source);
/// A complete, versioned profile file (format_version, devices, entry and link counts),
/// read back by parse_measured_profile (to nine significant digits).
std::string format_measured_profile(const measured_profile& profile);
/// Writes the formatted profile to `path` (through a temporary file and a rename).
void save_measured_profile(const measured_profile& profile, const std::filesystem::path& path);

} // namespace deepcee::runtime

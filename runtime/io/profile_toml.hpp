#pragma once

#include "runtime/cluster/profile.hpp"

#include <filesystem>
#include <string_view>

namespace deepcee::runtime {

measured_profile load_measured_profile(const std::filesystem::path& path);
measured_profile parse_measured_profile(std::string_view toml_text,
                                        const std::filesystem::path& source);

} // namespace deepcee::runtime

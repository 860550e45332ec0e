#pragma once

#include "runtime/base/train_config.hpp"
#include "runtime/cluster/device_catalogue.hpp"
#include "runtime/cluster/profile.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace deepcee::runtime {

/// Sixteen hex digits (XXH3, 64 bits) of what a measured profile depends on: each device's
/// kind and identity (its CPU model or GPU name, threads, BLAS) and the micro-batch sizes,
/// the model's sizes, the precision and the build. A cached profile whose fingerprint differs
/// was measured for something else and is measured again.
std::string profile_fingerprint(const std::vector<measured_device>& devices,
                                const model_config& model, precision prec, std::string_view build);

/// XXH3 of a file's bytes as sixteen hex digits (the build: the running executable).
/// Throws std::runtime_error when the file cannot be read.
std::string file_digest(const std::filesystem::path& file);

} // namespace deepcee::runtime

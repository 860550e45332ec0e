#pragma once

#include "runtime/base/train_config.hpp"

#include <filesystem>
#include <string_view>

namespace deepcee::runtime {

/// Reads a train config (see configs/single.toml). Every key is optional and defaults to
/// the value in train_config.hpp. Unknown keys are errors rather than warnings, since a
/// misspelt key (`lrr`) would otherwise silently train with the default. Every error is an
/// input_error "FILE:LINE: message". Relative `data.path` and `out` are made absolute
/// against the current directory at load time (not against the config's folder), like
/// paths given on the command line, so a later change of directory cannot change them.
train_config load_train_config(const std::filesystem::path& file);

/// The same from text already in memory; `source` names it in error messages.
train_config parse_train_config(std::string_view text, const std::filesystem::path& source);

/// Checks the ranges that loading checks (batch >= 1, d_model divisible by n_head, ...),
/// for a config changed after loading, e.g. by command-line overrides. Throws input_error
/// "SOURCE: message" without a line.
void validate(const train_config& config, const std::filesystem::path& source = "train config");

} // namespace deepcee::runtime

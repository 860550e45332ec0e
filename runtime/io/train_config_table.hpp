#pragma once

#include "runtime/base/train_config.hpp"

#include <toml++/toml.h>

#include <filesystem>

namespace deepcee::runtime {

/// A train config from a table already parsed, e.g. the [train] table of a job file: the
/// nodes keep their lines, so an error points at the key's line in `source`.
train_config read_train_table(const toml::table& root, const std::filesystem::path& source);

} // namespace deepcee::runtime

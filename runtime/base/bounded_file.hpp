#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace deepcee::runtime {

/// Config files (TOML, JSON plans) are a few kilobytes; this bounds what a reader takes in
/// when handed something else by mistake.
constexpr uint64_t max_config_bytes = 16u << 20;

/// Reads a whole regular file of at most `max_bytes` bytes. Anything else is an
/// input_error naming `path`: a FIFO or a terminal would block the reader forever, and a
/// device such as /dev/zero never ends. `what` names the file's role in the message
/// ("corpus file", "config file", ...).
std::string read_bounded_file(const std::filesystem::path& path, uint64_t max_bytes,
                              const std::string& what);

/// Throws an input_error naming `path` unless it is a regular file (symbolic links
/// followed) of at most `max_bytes` bytes; returns its size.
uint64_t require_regular_file(const std::filesystem::path& path, uint64_t max_bytes,
                              const std::string& what);

/// "1.5 GiB", "12.0 MiB", "800 bytes": sizes in messages.
std::string byte_size_text(double bytes);

} // namespace deepcee::runtime

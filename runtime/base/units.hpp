#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace deepcee::runtime {

/// Human-friendly quantities in config files, parsed into SI values (bytes/s, seconds,
/// bytes, FLOP/s). Every parser returns nullopt for text it does not understand, so the
/// caller can report the file and line.

/// "100Mbps", "1 Gbps", "25GB/s", "300 GB/s", "1.5GiB/s" -> bytes per second.
/// Lower-case `b`+`ps` counts bits, `B/s` counts bytes; prefixes k/K, M, G, T are decimal,
/// Ki, Mi, Gi, Ti binary. A bare number has no unit and is rejected here (the config
/// layer decides what a bare number means).
std::optional<double> parse_bandwidth(std::string_view text);

/// "40ms", "5us", "5µs", "0.2 ms", "1s", "100ns" -> seconds.
std::optional<double> parse_duration(std::string_view text);

/// "24GB", "24GiB", "512MiB", "1024B" -> bytes (GB decimal, GiB binary).
std::optional<double> parse_bytes(std::string_view text);

/// "35.6TFLOPS", "96GFLOPS", "312 TFLOP/s" -> FLOP/s.
std::optional<double> parse_flops(std::string_view text);

/// Short forms for messages and tables: "100 Mbps", "25 GB/s", "40 ms", "24 GiB", "3.1 MB".
std::string format_bandwidth(double bytes_per_s);
std::string format_duration(double seconds);
std::string format_bytes(double bytes);

} // namespace deepcee::runtime

#pragma once

#include <filesystem>
#include <string>
#include <string_view>

/// How deepcee treats its secrets (the job token, a node's TLS key) as ssh treats keys: a
/// weak one, or a file that others may read, is refused before anything is sent.
namespace deepcee::runtime {

/// The fewest bits of estimated entropy a job token must have.
constexpr double min_secret_bits = 128;

/// An estimate of the entropy in `secret`, in bits, made to refuse what people type rather
/// than to measure randomness. Each character that does not continue a repeat adds
/// log2(alphabet), where the alphabet is 16 when every character is a hex digit, 10 when
/// every one is a decimal digit, and otherwise the sum of the classes present (26 lower
/// case, 26 upper case, 10 digits, 5 for "+/=_-" of base64, 33 for any other); a run of 6
/// or more characters that repeats earlier ones (overlapping too, as LZ77 finds them) adds
/// nothing. `openssl rand -hex 32` gives about 256 bits; "passwordpassword..." 38.
double estimated_secret_bits(std::string_view secret);

/// Throws an input_error naming `file` when its group or others have any access to it (the
/// `what`, e.g. "token file", is named too), with the chmod that fixes it.
void require_private_file(const std::filesystem::path& file, const std::string& what);

} // namespace deepcee::runtime

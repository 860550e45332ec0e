#pragma once

#include <string>
#include <string_view>

/// The read-only credential for watching a job: the inspector, the web page and Prometheus
/// send it, never the job's token. It is derived from the token by HKDF-SHA256
/// (transport::derive_token_keys), which cannot be turned back, so a sniffed scrape cannot join,
/// stop or inject into the job. It starts with `dcw1-`, so that a file holding it is told apart
/// from one holding the token.
namespace deepcee::tools {

constexpr std::string_view watch_prefix = "dcw1-";

/// `dcw1-` and 64 hex digits, derived from the job's token.
std::string watch_credential(std::string_view job_token);

/// A fresh random credential of the same form, for an endpoint without a job token.
std::string random_watch_credential();

/// What `deepcee inspect` sends for a secret it was given: a watch credential as it is,
/// else the credential derived from it as a job token; empty for none.
std::string credential_to_send(std::string_view secret);

} // namespace deepcee::tools

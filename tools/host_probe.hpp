#pragma once

#include "runtime/base/host_resources.hpp"

namespace deepcee::tools {

/// The resources of the machine this process runs on: its cores and the memory available
/// now. Read here, at the edge, and passed down (runtime::require_fits_host and its kin
/// judge the values and never ask the machine themselves).
runtime::host_resources probe_host();

} // namespace deepcee::tools

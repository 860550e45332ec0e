#pragma once

#include "runtime/cluster/cluster.hpp"

#include <cstdint>
#include <string>

/// Random cloud-edge-end clusters for benchmarks and property tests: each seed gives a new
/// cluster, the same one on every platform (the generator draws from its own splitmix64,
/// not from the standard library's distributions, whose results are left to each library).
namespace deepcee::runtime {

struct generator_options {
  int min_devices = 4;
  int max_devices = 64;
};

/// How the regions are joined: a line (only neighbours well), a star (every edge region
/// well to the hub only) or a mesh (every pair, each its own link).
enum class region_shape { line, star, mesh };

std::string_view to_string(region_shape s);

struct generated_cluster {
  std::string toml; ///< the cluster file, as configs/clusters/README.md describes it
  cluster c;        ///< parse_cluster of `toml`
  region_shape shape = region_shape::line;
  std::string model; ///< a model preset that fits the cluster's memory
  int batch = 0;     ///< a global batch for it
  /// One short line: regions and shape, devices by kind, ports, asymmetry, model.
  std::string summary;
};

/// The cluster of `seed`: 1 to 5 regions in a line, star or mesh; links slow or fast,
/// some asymmetric (the uplink slower), nodes of 1 to 8 devices of the catalogue's kinds
/// by tier (cloud GPUs, edge workstations, end boards), some behind one `nic`; between
/// options.min_devices and options.max_devices devices.
generated_cluster generate_cluster(uint64_t seed, const generator_options& options = {});

} // namespace deepcee::runtime

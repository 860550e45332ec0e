#pragma once

#include "runtime/plan/node_layout.hpp"

#include <cstddef>
#include <string>
#include <vector>

/// Where a stage's devices run, for the choices that depend on it: which devices are asked
/// first, and which host boot each one's clock belongs to (shaped_delivery.hpp).
namespace deepcee::runtime {

/// The positions in `asked` (places of a stage's devices) of the devices that run on
/// another node than their stage (`apart`, by place), then of the others. A device on the
/// stage's node may compute as soon as it is asked; the work of those apart would then
/// wait for a core to leave this node (a 7 ms op's work left 2-4 ms late on the two cores
/// of the fidelity bench, bench/bench_fidelity.sh).
std::vector<size_t> apart_first(const std::vector<bool>& apart, const std::vector<size_t>& asked);

/// The host boot of node `node` among the nodes' boots (the wiring's, by node); "" where
/// unknown.
std::string boot_of_node(const std::vector<std::string>& node_boots, int node);

/// The host boot of the node that runs flat stage `flat`; "" where unknown, a stage the
/// layout does not place included.
std::string boot_of_stage(const node_layout& layout, int flat,
                          const std::vector<std::string>& node_boots);

/// The host boot of each of the `devices` places of flat stage `flat`: its own node's for a
/// device apart, else its stage's. Throws std::out_of_range for a stage the layout does not
/// place.
std::vector<std::string> device_boots(const node_layout& layout, int flat, size_t devices,
                                      const std::vector<std::string>& node_boots);

} // namespace deepcee::runtime

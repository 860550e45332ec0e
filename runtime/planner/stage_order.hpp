#pragma once

#include "runtime/cluster/cluster.hpp"
#include "runtime/planner/plan_builder.hpp"

#include <vector>

/// Stage orders beyond the search's own: the search passes the nodes fastest first along the
/// network's paths, yet a slow or memory-rich block of devices may belong in the middle or at
/// the end of a pipeline (where it holds fewer micro-batches in flight, or leaves the last
/// layers and the head to a faster device).
namespace deepcee::runtime {

/// The stage order of `layout` with one block moved: a block is a maximal run of neighbouring
/// stages whose first devices are of one kind, and each block goes to every other place
/// between stages. Every pipeline's stages move alike, so stage k of every pipeline still sits
/// where the others' do; none when the pipelines differ in their number of stages or have
/// more than max_reordered_stages.
std::vector<std::vector<pipeline_layout>>
stage_orders_moved(const cluster& c, const std::vector<pipeline_layout>& layout);

/// Pipelines of more stages get no reordering: block moves grow as blocks times stages.
inline constexpr size_t max_reordered_stages = 32;

/// The stages' devices of each pipeline of `p`, in order.
std::vector<pipeline_layout> layout_of(const plan& p);

} // namespace deepcee::runtime

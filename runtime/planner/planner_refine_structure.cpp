#include "runtime/planner/planner_refine_structure.hpp"

#include "runtime/planner/plan_builder.hpp"

#include <algorithm>

namespace deepcee::runtime {
namespace {

size_t stage_places(const plan& p) {
  size_t places = 0;
  for (const auto& pp : p.pipelines)
    places = std::max(places, pp.stages.size());
  return places;
}

/// Each stage's samples again by speed; false where a stage has no device or more devices
/// than the micro-batch has samples.
bool resample(const cost_cache& costs, plan& p) {
  for (auto& pp : p.pipelines)
    for (auto& st : pp.stages) {
      if (st.devices.empty() || static_cast<int>(st.devices.size()) > p.micro_batch_size)
        return false;
      st.samples = stage_samples(costs, st.devices, p.micro_batch_size, true);
    }
  return true;
}

/// The bound between stages k - 1 and k of pipeline `pp` moved by `delta` layers; false where
/// a stage would be left without a layer.
bool move_bound(pipeline_plan& pp, size_t k, int delta) {
  const int moved = pp.stages[k].first_layer + delta;
  if (moved <= pp.stages[k - 1].first_layer || moved >= pp.stages[k].last_layer)
    return false;
  pp.stages[k - 1].last_layer = moved;
  pp.stages[k].first_layer = moved;
  return true;
}

/// Bounds moved by two layers in every pipeline that has the place, and by one in a
/// single pipeline (replicas may want different cuts when their devices differ).
void add_bound_moves(const plan& base, std::vector<plan>& moves) {
  for (size_t k = 1; k < stage_places(base); ++k)
    for (int delta : {-2, 2}) {
      plan q = base;
      bool moved = false;
      for (auto& pp : q.pipelines)
        moved = (k < pp.stages.size() && move_bound(pp, k, delta)) || moved;
      if (moved)
        moves.push_back(std::move(q));
    }
  if (base.pipelines.size() < 2 || base.pipelines.size() > refine_single_pipelines)
    return;
  for (size_t pi = 0; pi < base.pipelines.size(); ++pi)
    for (size_t k = 1; k < base.pipelines[pi].stages.size(); ++k)
      for (int delta : {-1, 1}) {
        plan q = base;
        if (move_bound(q.pipelines[pi], k, delta))
          moves.push_back(std::move(q));
      }
}

/// Stages k and k + 1 of `pp` merged into one; false where it has no stage k + 1.
bool merge_with_next(pipeline_plan& pp, size_t k) {
  if (k + 1 >= pp.stages.size())
    return false;
  stage_plan& st = pp.stages[k];
  const stage_plan& next = pp.stages[k + 1];
  st.devices.insert(st.devices.end(), next.devices.begin(), next.devices.end());
  st.last_layer = next.last_layer;
  st.send_compression = next.send_compression;
  st.recompute = st.recompute || next.recompute;
  pp.stages.erase(pp.stages.begin() + long(k) + 1);
  return true;
}

/// Stage k and k + 1 merged into one, in every pipeline that has both, and in a single
/// pipeline.
void add_merge_moves(const cost_cache& costs, const plan& base, std::vector<plan>& moves) {
  for (size_t k = 0; k + 1 < stage_places(base); ++k) {
    plan q = base;
    for (auto& pp : q.pipelines)
      merge_with_next(pp, k);
    if (resample(costs, q))
      moves.push_back(std::move(q));
  }
  if (base.pipelines.size() < 2 || base.pipelines.size() > refine_single_pipelines)
    return;
  for (size_t pi = 0; pi < base.pipelines.size(); ++pi)
    for (size_t k = 0; k + 1 < base.pipelines[pi].stages.size(); ++k) {
      plan q = base;
      if (merge_with_next(q.pipelines[pi], k) && resample(costs, q))
        moves.push_back(std::move(q));
    }
}

/// Stage `k` of `pp` cut in two: the first half of its devices with the first half of its
/// layers, the rest with the rest. False where it has fewer than two devices or layers.
bool split_in_half(pipeline_plan& pp, size_t k) {
  stage_plan& st = pp.stages[k];
  if (st.devices.size() < 2 || st.last_layer - st.first_layer < 2)
    return false;
  stage_plan second = st;
  const size_t half = st.devices.size() / 2;
  second.devices.assign(st.devices.begin() + long(half), st.devices.end());
  st.devices.resize(half);
  st.last_layer = second.first_layer = (st.first_layer + st.last_layer) / 2;
  st.send_compression = compression::none;
  pp.stages.insert(pp.stages.begin() + long(k) + 1, std::move(second));
  return true;
}

/// Each stage cut in two halves (split_in_half), in every pipeline that has it, and in a
/// single pipeline.
void add_half_split_moves(const cost_cache& costs, const plan& base, std::vector<plan>& moves) {
  for (size_t k = 0; k < stage_places(base); ++k) {
    plan q = base;
    bool split = false;
    for (auto& pp : q.pipelines)
      split = (k < pp.stages.size() && split_in_half(pp, k)) || split;
    if (split && resample(costs, q))
      moves.push_back(std::move(q));
  }
  if (base.pipelines.size() < 2 || base.pipelines.size() > refine_single_pipelines)
    return;
  for (size_t pi = 0; pi < base.pipelines.size(); ++pi)
    for (size_t k = 0; k < base.pipelines[pi].stages.size(); ++k) {
      plan q = base;
      if (split_in_half(q.pipelines[pi], k) && resample(costs, q))
        moves.push_back(std::move(q));
    }
}

/// Each device of a stage of several: to the previous stage, to the next, or out of the plan.
void add_device_moves(const cost_cache& costs, const plan& base, std::vector<plan>& moves) {
  for (size_t pi = 0; pi < base.pipelines.size(); ++pi) {
    const auto& stages = base.pipelines[pi].stages;
    for (size_t k = 0; k < stages.size(); ++k) {
      if (stages[k].devices.size() < 2)
        continue;
      for (size_t i = 0; i < stages[k].devices.size(); ++i)
        for (int to : {int(k) - 1, int(k) + 1, -2}) {
          if (to == -1 || to >= static_cast<int>(stages.size()))
            continue;
          plan q = base;
          auto& from = q.pipelines[pi].stages[k].devices;
          const int d = from[i];
          from.erase(from.begin() + long(i));
          if (to >= 0)
            q.pipelines[pi].stages[size_t(to)].devices.push_back(d);
          if (resample(costs, q))
            moves.push_back(std::move(q));
        }
    }
  }
}

/// Each pipeline dropped, its micro-batches shared by the others in proportion to theirs.
void add_drop_pipeline_moves(const plan& base, std::vector<plan>& moves) {
  if (base.pipelines.size() < 2)
    return;
  for (size_t drop = 0; drop < base.pipelines.size(); ++drop) {
    plan q = base;
    const int freed = q.pipelines[drop].micro_batches;
    q.pipelines.erase(q.pipelines.begin() + long(drop));
    std::vector<double> weights;
    for (const auto& pp : q.pipelines)
      weights.push_back(pp.micro_batches);
    const std::vector<int> more = split_proportional(freed, weights, 0);
    for (size_t i = 0; i < q.pipelines.size(); ++i)
      q.pipelines[i].micro_batches += more[i];
    moves.push_back(std::move(q));
  }
}

/// Each hop's encoding and each stage's recomputation changed in a single pipeline.
void add_single_pipeline_stage_moves(const plan& base, std::vector<plan>& moves) {
  if (base.pipelines.size() < 2 || base.pipelines.size() > refine_single_pipelines)
    return;
  for (size_t pi = 0; pi < base.pipelines.size(); ++pi)
    for (size_t k = 0; k < base.pipelines[pi].stages.size(); ++k) {
      if (k + 1 < base.pipelines[pi].stages.size())
        for (compression comp : {compression::none, compression::bf16, compression::int8}) {
          if (comp == base.pipelines[pi].stages[k].send_compression)
            continue;
          plan q = base;
          q.pipelines[pi].stages[k].send_compression = comp;
          moves.push_back(std::move(q));
        }
      plan q = base;
      q.pipelines[pi].stages[k].recompute = !q.pipelines[pi].stages[k].recompute;
      moves.push_back(std::move(q));
    }
}

} // namespace

std::optional<plan> micro_batch_resized(const cost_cache& costs, const plan& p, int b) {
  const int batch = p.global_batch();
  if (b < 1 || batch % b != 0 || batch / b < static_cast<int>(p.pipelines.size()))
    return std::nullopt;
  std::vector<double> weights;
  for (const auto& pp : p.pipelines)
    weights.push_back(pp.micro_batches);
  const std::vector<int> counts = split_proportional(batch / b, weights, 1);
  plan q = p;
  q.micro_batch_size = b;
  for (size_t pi = 0; pi < q.pipelines.size(); ++pi)
    q.pipelines[pi].micro_batches = counts[pi];
  if (!resample(costs, q))
    return std::nullopt;
  return q;
}

std::vector<plan> structure_moves(const cost_cache& costs, const plan& p) {
  std::vector<plan> moves;
  // The next divisors of the batch, where halving or doubling skips them (batches of 3 x 2^k).
  const std::vector<int> sizes = divisors_between(p.global_batch(), 1, p.global_batch());
  const auto at = std::find(sizes.begin(), sizes.end(), p.micro_batch_size);
  if (at != sizes.end()) {
    if (at != sizes.begin())
      if (auto q = micro_batch_resized(costs, p, *(at - 1)))
        moves.push_back(std::move(*q));
    if (at + 1 != sizes.end())
      if (auto q = micro_batch_resized(costs, p, *(at + 1)))
        moves.push_back(std::move(*q));
  }
  add_bound_moves(p, moves);
  add_merge_moves(costs, p, moves);
  add_half_split_moves(costs, p, moves);
  add_drop_pipeline_moves(p, moves);
  add_single_pipeline_stage_moves(p, moves);
  add_device_moves(costs, p, moves);
  return moves;
}

} // namespace deepcee::runtime

#include "runtime/planner/planner_refine.hpp"

#include "runtime/planner/plan_builder.hpp"
#include "runtime/planner/planner_refine_structure.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

namespace deepcee::runtime {
namespace {

/// The layer bounds of a pipeline's stages (stages + 1 entries).
std::vector<int> bounds_of(const pipeline_plan& pp) {
  std::vector<int> b{pp.stages.front().first_layer};
  for (const auto& st : pp.stages)
    b.push_back(st.last_layer);
  return b;
}

/// Pipelines between which refine_best moves micro-batches: every ordered pair of up to
/// this many pipelines (12 moves), so the moves stay within the simulations it may spend.
constexpr size_t refine_micro_pipelines = 4;

/// How many pipelines refine_best balances micro-batches between: all, or none past
/// refine_micro_pipelines.
size_t pipes_to_balance(const plan& p) {
  return p.pipelines.size() <= refine_micro_pipelines ? p.pipelines.size() : 0;
}

/// `p` with `count` of pipeline `from`'s micro-batches moved to pipeline `to`; none when
/// `from` would keep none. The estimate shares micro-batches by each pipeline's bottleneck
/// rate; the simulator sees the queues and bubbles that rate misses.
std::optional<plan> micro_batches_moved(const plan& p, size_t from, size_t to, int count) {
  if (count < 1 || p.pipelines[from].micro_batches <= count)
    return std::nullopt;
  plan q = p;
  q.pipelines[from].micro_batches -= count;
  q.pipelines[to].micro_batches += count;
  return q;
}

/// Each stage bound of `base` moved by one layer either way, in every pipeline with the
/// same bounds (replicas stay alike).
void add_bound_moves(const plan& base, std::vector<plan>& moves) {
  std::set<std::vector<int>> splits;
  for (const auto& pp : base.pipelines)
    splits.insert(bounds_of(pp));
  for (const auto& split : splits)
    for (size_t k = 1; k + 1 < split.size(); ++k)
      for (int delta : {-1, 1}) {
        const int moved = split[k] + delta;
        if (moved <= split[k - 1] || moved >= split[k + 1])
          continue;
        plan q = base;
        for (auto& pp : q.pipelines)
          if (bounds_of(pp) == split) {
            pp.stages[k - 1].last_layer = moved;
            pp.stages[k].first_layer = moved;
          }
        moves.push_back(std::move(q));
      }
}

/// Per stage place k (in every pipeline that has it): each other encoding of the hop to the
/// next stage, and recomputation switched (where the options allow it).
void add_stage_moves(const plan& base, const planner_options& options, std::vector<plan>& moves) {
  size_t places = 0;
  for (const auto& pp : base.pipelines)
    places = std::max(places, pp.stages.size());
  for (size_t k = 0; k < places; ++k) {
    const auto& first = base.pipelines.front();
    const compression now =
        k < first.stages.size() ? first.stages[k].send_compression : compression::none;
    for (compression comp : options.compressions) {
      if (comp == now || k + 1 >= places)
        continue;
      plan q = base;
      for (auto& pp : q.pipelines)
        if (k + 1 < pp.stages.size())
          pp.stages[k].send_compression = comp;
      moves.push_back(std::move(q));
    }
    if (!options.recompute)
      continue;
    plan q = base;
    for (auto& pp : q.pipelines)
      if (k < pp.stages.size())
        pp.stages[k].recompute = !pp.stages[k].recompute;
    moves.push_back(std::move(q));
  }
}

/// Stage `st` with one sample of each micro-batch moved from the device that takes longest
/// for its share to the one that would take least with one more; false when no device has a
/// sample to spare or the move would change nothing.
bool shift_one_sample(const cost_cache& costs, stage_plan& st) {
  if (st.devices.size() < 2)
    return false;
  size_t from = 0, to = 0;
  double longest = -1, least = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < st.devices.size(); ++i) {
    const int n = st.samples[i];
    const double now = n / costs.speed(st.devices[i], std::max(1, n));
    const double more = (n + 1) / costs.speed(st.devices[i], n + 1);
    if (n > 1 && now > longest) {
      longest = now;
      from = i;
    }
    if (more < least) {
      least = more;
      to = i;
    }
  }
  if (longest < 0 || from == to)
    return false;
  --st.samples[from];
  ++st.samples[to];
  return true;
}

/// Per stage place k (in every pipeline that has it): one sample of each micro-batch moved
/// between the stage's devices (shift_one_sample). The estimate shares samples by speed at
/// one size; the simulator sees each device's speed at its own share and the all-reduce.
void add_sample_moves(const cost_cache& costs, const plan& base, std::vector<plan>& moves) {
  size_t places = 0;
  for (const auto& pp : base.pipelines)
    places = std::max(places, pp.stages.size());
  for (size_t k = 0; k < places; ++k) {
    plan q = base;
    bool moved = false;
    for (auto& pp : q.pipelines)
      if (k < pp.stages.size())
        moved = shift_one_sample(costs, pp.stages[k]) || moved;
    if (moved)
      moves.push_back(std::move(q));
  }
}

/// Stage `st` as one stage per device, in the stage's order, each with the whole micro-batch
/// and an even share of its layers; none when it has one device or fewer layers than devices.
std::optional<std::vector<stage_plan>> split_by_device(const stage_plan& st, int micro_batch) {
  const int n = static_cast<int>(st.devices.size());
  const int layers = st.last_layer - st.first_layer;
  if (n < 2 || layers < n)
    return std::nullopt;
  std::vector<stage_plan> out;
  for (int i = 0; i < n; ++i) {
    stage_plan part;
    part.devices = {st.devices[size_t(i)]};
    part.samples = {micro_batch};
    part.first_layer = st.first_layer + layers * i / n;
    part.last_layer = st.first_layer + layers * (i + 1) / n;
    part.recompute = st.recompute;
    part.send_compression = i + 1 == n ? st.send_compression : compression::none;
    out.push_back(std::move(part));
  }
  return out;
}

/// Per stage place k (in every pipeline that has it): the stage's devices as a pipeline of
/// their own (split_by_device). The search cuts a slice into stages one way per level; a
/// stage that holds its layers data-parallel may run faster as a deeper pipeline where the
/// all-reduce or a slow member holds it back.
void add_split_moves(const plan& base, std::vector<plan>& moves) {
  size_t places = 0;
  for (const auto& pp : base.pipelines)
    places = std::max(places, pp.stages.size());
  for (size_t k = 0; k < places; ++k) {
    plan q = base;
    bool split = false;
    for (auto& pp : q.pipelines) {
      if (k >= pp.stages.size())
        continue;
      auto parts = split_by_device(pp.stages[k], q.micro_batch_size);
      if (!parts)
        continue;
      pp.stages.erase(pp.stages.begin() + long(k));
      pp.stages.insert(pp.stages.begin() + long(k), parts->begin(), parts->end());
      split = true;
    }
    if (split)
      moves.push_back(std::move(q));
  }
}

/// Per stage place k (in every pipeline that has it and the next): the devices of stages k and
/// k + 1 swapped, each keeping its layers. The search orders stages by speed and the network's
/// paths; where memory or a slow hop binds, the other order may be faster.
void add_swap_moves(const plan& base, std::vector<plan>& moves) {
  size_t places = 0;
  for (const auto& pp : base.pipelines)
    places = std::max(places, pp.stages.size());
  for (size_t k = 0; k + 1 < places; ++k) {
    plan q = base;
    for (auto& pp : q.pipelines)
      if (k + 1 < pp.stages.size()) {
        std::swap(pp.stages[k].devices, pp.stages[k + 1].devices);
        std::swap(pp.stages[k].samples, pp.stages[k + 1].samples);
      }
    moves.push_back(std::move(q));
  }
}

} // namespace

std::vector<plan> refine_moves(const cost_cache& costs, const plan& p,
                               const planner_options& options) {
  std::vector<plan> moves;
  add_bound_moves(p, moves);
  for (int b : {p.micro_batch_size / 2, p.micro_batch_size * 2})
    if (auto q = micro_batch_resized(costs, p, b))
      moves.push_back(std::move(*q));
  // Micro-batches between pipelines: an eighth of the giver's first, single ones after the
  // stages' moves (fine steps where the eighth overshoots).
  const size_t pipes = pipes_to_balance(p);
  for (size_t from = 0; from < pipes; ++from)
    for (size_t to = 0; to < pipes; ++to)
      if (from != to)
        if (auto q = micro_batches_moved(p, from, to, p.pipelines[from].micro_batches / 8))
          moves.push_back(std::move(*q));
  add_stage_moves(p, options, moves);
  add_sample_moves(costs, p, moves);
  add_split_moves(p, moves);
  add_swap_moves(p, moves);
  for (size_t from = 0; from < pipes; ++from)
    for (size_t to = 0; to < pipes; ++to)
      if (from != to)
        if (auto q = micro_batches_moved(p, from, to, 1))
          moves.push_back(std::move(*q));
  for (auto& q : structure_moves(costs, p))
    moves.push_back(std::move(q));
  for (schedule_kind kind : options.schedules) {
    if (kind == p.pipelines.front().schedule)
      continue;
    plan base = p;
    for (auto& pp : base.pipelines)
      pp.schedule = kind;
    moves.push_back(base);
    add_bound_moves(base, moves);
    for (int b : {p.micro_batch_size / 2, p.micro_batch_size * 2})
      if (auto q = micro_batch_resized(costs, base, b))
        moves.push_back(std::move(*q));
    add_split_moves(base, moves);
  }
  return moves;
}

} // namespace deepcee::runtime

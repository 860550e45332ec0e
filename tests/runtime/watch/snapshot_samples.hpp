#pragma once

#include "runtime/watch/job_snapshot.hpp"

/// A snapshot with every field set, as a two-stage job's after step 12.
namespace deepcee::test {

inline runtime::job_snapshot sample_snapshot() {
  runtime::job_snapshot s;
  s.version = 12;
  s.job = "edge-demo";
  s.model = "tiny";
  s.cluster = "cloud-edge";
  s.strategy = "deepcee";
  s.time_mode = "virtual";
  s.groups = {"network group 0: cloud0", "network group 1: edge0"};
  s.step = 12;
  s.steps = 40;
  s.loss = 4.25;
  s.val_loss = 4.5;
  s.val_step = 10;
  s.loss_history = {5.5, 5.0, 4.75, 4.25};
  s.clock_s = 1.5;
  s.real_samples_per_s = 120.5;
  s.emulated_samples_per_s = 64.0;
  s.stages = {
      {0, 0, {"cloud0/0", "cloud0/1"}, 0, 3, {{"F", 0, 1.0, 1.1}, {"B", 0, 1.2, 1.4}}, 0.25},
      {0, 1, {"edge0/0"}, 3, 5, {{"F", 0, 1.1, 1.2}, {"W", 0, 1.4, 1.45}}, 0.5}};
  s.devices = {{"cloud0/0", "a100", 0, 0, 0.75, 2e9, 40e9},
               {"cloud0/1", "a100", 0, 0, 0.7, 2e9, 40e9},
               {"edge0/0", "jetson", 0, 1, 0.5, 1e9, 8e9}};
  s.links = {{"cloud0/0 -> edge0/0", 1.2e6, 0.021, 1.25e6, 0.02, 17, true, 3e6, 24}};
  s.allocation = {
      {4}, {{"cloud0/0", 3}, {"cloud0/1", 1}, {"edge0/0", 4}}, {{"cloud0/0 -> edge0/0", "fp16"}}};
  s.decisions = {{10, "rebalance", "edge0/0 link 40% slower", 0.125}};
  s.events = {{9, 1.25, "link cloud -> edge: 1 Mbps"}};
  s.decisions_by_kind = {{"rebalance", 1}};
  s.events_total = 1;
  s.dropped_messages = 2;
  s.dropped_frames = 3;
  return s;
}

} // namespace deepcee::test

#pragma once

// Small plan pieces the runtime tests build by hand, written once.

#include "runtime/plan/plan.hpp"

namespace deepcee::test {

/// A stage of layers [first, last) on `device` alone, two samples a micro-batch.
inline runtime::stage_plan one_device_stage(int device, int first, int last) {
  runtime::stage_plan s;
  s.devices = {device};
  s.samples = {2};
  s.first_layer = first;
  s.last_layer = last;
  return s;
}

} // namespace deepcee::test

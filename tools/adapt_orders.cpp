#include "tools/adapt_orders.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/io/plan_json.hpp"
#include "runtime/plan/plan_allocation.hpp"

#include <charconv>
#include <stdexcept>

namespace deepcee::tools {

std::vector<adapt_order> read_adapt_orders(const std::vector<std::string>& args,
                                           const runtime::plan& job_plan) {
  std::vector<adapt_order> out;
  for (const auto& arg : args) {
    const auto colon = arg.find(':');
    adapt_order o;
    const char* first = arg.data();
    const char* last = arg.data() + (colon == std::string::npos ? 0 : colon);
    const auto [end, ec] = std::from_chars(first, last, o.step);
    if (colon == std::string::npos || ec != std::errc{} || end != last || o.step < 1)
      runtime::fail_input("--adapt-to", 0,
                          "expected STEP:PLAN with STEP >= 1, got \"" + arg + "\"");
    const std::string file = arg.substr(colon + 1);
    o.plan = runtime::load_plan(file);
    if (runtime::same_layout(job_plan, o.plan)) {
      try {
        runtime::with_allocation(job_plan, runtime::allocation_of(o.plan));
      } catch (const std::invalid_argument& e) {
        runtime::fail_input(file, 0, e.what());
      }
    } else if (o.plan.global_batch() != job_plan.global_batch()) {
      // A re-plan (other layers, stages, pipelines or devices) keeps the global batch; the
      // job checks the rest (its model, its cluster's devices) when it is ordered.
      runtime::fail_input(file, 0,
                          "a re-plan must keep the job's global batch " +
                              std::to_string(job_plan.global_batch()) + " (it has " +
                              std::to_string(o.plan.global_batch()) + ")");
    }
    out.push_back(std::move(o));
  }
  return out;
}

void apply_adapt_orders(caf::actor_system& sys, const actors::wired_job& job,
                        const std::vector<adapt_order>& orders, std::chrono::milliseconds wait) {
  for (const auto& o : orders)
    if (auto at = actors::adapt_to(sys, job.adapter, o.plan, o.step, wait); !at)
      throw std::runtime_error("--adapt-to " + std::to_string(o.step) + ": " +
                               sys.render(at.error()));
}

} // namespace deepcee::tools

// A run's trace: every traced step's ops, transfers, all-reduce buckets and optimizer
// steps, with links named by their endpoints as the cluster names its devices.
#include "tests/actors/actor_test_util.hpp"

#include "actors/job/run_trace.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

double arg(const runtime::trace_span& s, const std::string& key) {
  for (const auto& [k, v] : s.args)
    if (k == key)
      return v;
  BOOST_FAIL(s.name << " has no arg " << key);
  return 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(run_trace)

BOOST_AUTO_TEST_CASE(holds_ops_transfers_allreduce_and_optimizer_of_every_traced_step) {
  const auto cluster = test_cluster();
  const auto plan = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  const auto spec = runtime::make_model_spec(plan.model);
  const runtime::profile_table profile(spec);
  system_fixture f;
  actors::local_job job(f.sys, cluster, profile, plan, train_for(plan, 3), test_corpus());
  std::vector<actors::step_result> steps;
  for (int k = 0; k < 3; ++k)
    steps.push_back(job.step());
  const auto doc = actors::run_trace_document({plan}, cluster, steps, job.samples());

  BOOST_TEST_REQUIRE(doc.processes.size() == 3u);
  std::set<int> plan_devices;
  for (const auto& pp : plan.pipelines)
    for (const auto& st : pp.stages)
      plan_devices.insert(st.devices.begin(), st.devices.end());
  std::map<std::pair<int, int>, std::string> track_names;
  for (const auto& t : doc.tracks)
    track_names[{t.process, t.track}] = t.name;

  for (const auto& r : steps) {
    int ops = 0, transfers = 0, allreduces = 0;
    std::map<int, int> optimizers;       // per device
    std::map<int, double> optimizer_end; // per device
    std::map<int, double> first_op;      // per flat stage
    for (const auto& s : doc.spans) {
      if (arg(s, "step") != double(r.step))
        continue;
      BOOST_TEST(track_names.count({s.process, s.track}) == 1u, s.name << " has no named track");
      BOOST_TEST(s.end_s >= s.start_s);
      const std::string& track = track_names[{s.process, s.track}];
      if (doc.processes[size_t(s.process)] == "stages") {
        ++ops;
        first_op.emplace(s.track, s.start_s);
        first_op[s.track] = std::min(first_op[s.track], s.start_s);
        BOOST_TEST(s.start_s >= r.start_s);
        BOOST_TEST(s.end_s <= r.compute_end_s);
      } else if (doc.processes[size_t(s.process)] == "links") {
        ++transfers;
        BOOST_TEST(s.name.rfind("send ", 0) == 0u, s.name);
      } else {
        BOOST_TEST(s.start_s >= r.start_s);
        BOOST_TEST(s.end_s <= r.end_s);
        // The devices' rows are named as the cluster names the devices.
        BOOST_TEST(track == cluster.devices[size_t(s.track)].name);
        if (s.name == "optimizer") {
          ++optimizers[s.track];
          optimizer_end[s.track] = s.end_s;
        } else {
          BOOST_TEST(s.name.rfind("allreduce L", 0) == 0u, s.name);
          ++allreduces;
        }
      }
    }
    // Each stage's schedule: F, B and W (1F1B fuses B and W) per micro-batch.
    BOOST_TEST(ops > 0, "step " << r.step);
    BOOST_TEST(ops == static_cast<int>(r.ops.size()), "step " << r.step);
    BOOST_TEST(transfers > 0, "step " << r.step);
    // Layer 0 is held by devices 0, 1 (pipeline 0) and 3 (pipeline 1): reduced every step.
    BOOST_TEST(allreduces > 0, "step " << r.step);
    BOOST_TEST(optimizers.size() == plan_devices.size(), "step " << r.step);
    for (const auto& [device, n] : optimizers) {
      BOOST_TEST(plan_devices.count(device) == 1u);
      BOOST_TEST(n == 1, "device " << device << " step " << r.step);
    }
    // The optimizer steps (of the step before, their order sent with this step's start)
    // begin the step: a stage's first op starts once its devices' have ended.
    int flat = 0;
    for (const auto& pp : plan.pipelines)
      for (const auto& st : pp.stages) {
        for (int d : st.devices)
          BOOST_TEST(optimizer_end.at(d) <= first_op.at(flat) + 1e-12, "device " << d);
        ++flat;
      }
  }

  // Links: "link A -> B" with A and B devices as the cluster names them, or a WAN pipe
  // between two regions.
  std::set<std::string> names;
  for (const auto& d : cluster.devices)
    names.insert(d.name);
  int links = 0;
  for (const auto& t : doc.tracks) {
    if (doc.processes[size_t(t.process)] != "links")
      continue;
    ++links;
    const auto arrow = t.name.find(" -> ");
    BOOST_TEST_REQUIRE(arrow != std::string::npos, t.name);
    BOOST_TEST(t.name.rfind("link ", 0) == 0u, t.name);
    const std::string from = t.name.substr(5, arrow - 5);
    std::string to = t.name.substr(arrow + 4);
    const bool wan = to.size() > 11 && to.substr(to.size() - 11) == " (WAN pipe)";
    if (wan) {
      to = to.substr(0, to.size() - 11);
      const auto is_region = [&](const std::string& n) {
        return std::any_of(cluster.regions.begin(), cluster.regions.end(),
                           [&](const auto& reg) { return reg.name == n; });
      };
      BOOST_TEST(is_region(from), t.name);
      BOOST_TEST(is_region(to), t.name);
    } else {
      BOOST_TEST(names.count(from) == 1u, t.name);
      BOOST_TEST(names.count(to) == 1u, t.name);
    }
  }
  BOOST_TEST(links > 0);

  // The writer gets all of it.
  std::ostringstream out;
  actors::write_run_trace(out, {plan}, cluster, steps, job.samples());
  BOOST_TEST(out.str().find("\"optimizer\"") != std::string::npos);
  BOOST_TEST(out.str().find("\"allreduce L0") != std::string::npos);
}

// A re-plan's stages get tracks of their own from the step it took effect, and each step's
// ops land on the tracks of the plan that ran it.
BOOST_AUTO_TEST_CASE(a_replan_starts_its_own_stage_tracks) {
  const auto cluster = test_cluster();
  const auto two = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  auto one = two;
  one.pipelines.resize(1);
  one.pipelines[0].micro_batches *= 2;
  const auto step_with_ops = [](int64_t step, std::vector<int32_t> stages) {
    actors::step_result r;
    r.step = step;
    for (int32_t s : stages) {
      r.ops.push_back({0, 0, double(step), double(step) + 0.5});
      r.op_stage.push_back(s);
    }
    return r;
  };
  const std::vector<actors::step_result> steps{step_with_ops(1, {0, 3}), step_with_ops(2, {0, 1}),
                                               step_with_ops(3, {1})};
  const auto doc = actors::run_trace_document({two, one}, cluster, steps, {});
  int stage_tracks = 0, later = 0;
  for (const auto& t : doc.tracks)
    if (t.process == 0) {
      ++stage_tracks;
      later += t.name.find(" from step 2") != std::string::npos;
    }
  const auto count = [](const runtime::plan& p) {
    int n = 0;
    for (const auto& pipe : p.pipelines)
      n += static_cast<int>(pipe.stages.size());
    return n;
  };
  BOOST_TEST(stage_tracks == count(two) + count(one));
  BOOST_TEST(later == count(one));
  std::vector<int> tracks;
  for (const auto& s : doc.spans)
    if (s.process == 0)
      tracks.push_back(s.track);
  const int base = count(two);
  BOOST_TEST(tracks == (std::vector<int>{0, 3, base, base + 1, base + 1}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

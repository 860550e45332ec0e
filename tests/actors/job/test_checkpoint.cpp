// Checkpoints of the actor runtime: the layers come from the stages that hold them, every
// replica holds the same values, the file is the one `deepcee train` writes and reads, and
// a resumed job continues the uninterrupted one bit for bit.
#include "tests/actors/actor_test_util.hpp"

#include "actors/job/checkpoint_transfer.hpp"
#include "kernels/device/make_backend.hpp"
#include "kernels/train/trainer.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/io/safetensors.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <map>

using namespace deepcee;
using namespace deepcee::actors::test;
namespace fs = std::filesystem;

namespace {

constexpr auto schedule = runtime::schedule_kind::zb_h1;

struct job_fixture : system_fixture {
  runtime::plan plan = two_pipeline_plan(schedule);
  std::shared_ptr<const runtime::text_corpus> corpus = test_corpus();
  runtime::cluster cluster = test_cluster();
  runtime::profile_table profile{runtime::make_model_spec(plan.model)};
  test::temp_dir tmp;

  std::unique_ptr<actors::local_job> make_job(int total_steps) {
    return std::make_unique<actors::local_job>(sys, cluster, profile, plan,
                                               train_for(plan, total_steps), corpus);
  }
  /// Writes the job's checkpoint as `deepcee run` does, with the virtual clock `clock_s`.
  fs::path save(actors::local_job& job, const std::string& name, double clock_s = 0) {
    const auto file = tmp.path / name;
    kernels::save_checkpoint(file, job.gather_parameters(),
                             {job.steps_done(), plan.model, train_for(plan, 1).seed, clock_s});
    return file;
  }
  void restore(actors::local_job& job, const fs::path& file) {
    auto contents = kernels::read_checkpoint(file);
    job.restore(contents.params, contents.info.step, contents.info.clock_s, file);
  }
};

std::vector<std::string> names_in_order(const fs::path& file) {
  std::vector<std::string> out;
  for (const auto& t : runtime::read_safetensors(file).tensors)
    out.push_back(t.name + " " + kernels::shape_string(t.shape));
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(checkpoint)

BOOST_FIXTURE_TEST_CASE(resume_continues_bit_for_bit, job_fixture) {
  constexpr int total = 6, cut = 3;
  std::vector<actors::step_result> straight;
  {
    auto job = make_job(total);
    for (int k = 0; k < total; ++k)
      straight.push_back(job->step());
  }
  fs::path file;
  {
    auto first = make_job(total);
    double clock_s = 0;
    for (int k = 0; k < cut; ++k) {
      const auto r = first->step();
      BOOST_TEST(r.loss == straight[static_cast<size_t>(k)].loss);
      clock_s = r.end_s;
    }
    file = save(*first, "mid.safetensors", clock_s);
  }
  auto second = make_job(total);
  restore(*second, file);
  BOOST_TEST(second->steps_done() == cut);
  for (int k = cut; k < total; ++k) {
    const auto got = second->step();
    const auto& want = straight[static_cast<size_t>(k)];
    BOOST_TEST(got.step == want.step);
    BOOST_TEST(got.loss == want.loss); // bit-identical, not merely close
    BOOST_TEST(got.grad_norm == want.grad_norm);
    BOOST_TEST(got.lr == want.lr);
    // The checkpoint's clock: the resumed steps start and end when the straight run's did.
    BOOST_TEST(got.start_s == want.start_s);
    BOOST_TEST(got.end_s == want.end_s);
  }
}

BOOST_FIXTURE_TEST_CASE(every_replica_holds_the_same_layers, job_fixture) {
  auto job = make_job(3);
  for (int k = 0; k < 3; ++k)
    job->step();
  // Snapshots of every stage of both pipelines (the stages split over two devices also
  // compare their devices with each other while taking theirs).
  const auto snaps =
      actors::snapshot_stages(sys, job->context(), job->stages(), std::chrono::seconds(30));
  BOOST_REQUIRE_EQUAL(snaps.size(), 5u);
  std::map<std::string, std::vector<const kernels::parameter_state*>> holders;
  for (const auto& s : snaps) {
    BOOST_TEST(s.step == 3);
    for (const auto& p : s.params)
      holders[p.name].push_back(&p);
  }
  auto be = kernels::make_backend({});
  kernels::gpt_model whole(*be, plan.model, 7);
  BOOST_REQUIRE_EQUAL(holders.size(), whole.parameters().size());
  for (auto* p : whole.parameters()) {
    const auto& h = holders[p->name];
    BOOST_REQUIRE_MESSAGE(h.size() == 2, p->name << " is held " << h.size() << " times");
    BOOST_TEST(h[0]->value == h[1]->value);
    BOOST_TEST(h[0]->exp_avg == h[1]->exp_avg);
    BOOST_TEST(h[0]->exp_avg_sq == h[1]->exp_avg_sq);
    // Trained: the weights moved away from their initial values, the moments from zero.
    BOOST_TEST(h[0]->value != be->to_host<float>(p->value));
    BOOST_TEST(std::any_of(h[0]->exp_avg_sq.begin(), h[0]->exp_avg_sq.end(),
                           [](float v) { return v > 0; }));
  }
}

BOOST_FIXTURE_TEST_CASE(runtime_checkpoint_is_a_train_checkpoint, job_fixture) {
  constexpr int steps = 4;
  const auto train = train_for(plan, steps + 2);
  auto be = kernels::make_backend({});
  kernels::trainer reference(*be, train, *corpus);
  auto job = make_job(steps + 2);
  for (int k = 0; k < steps; ++k) {
    reference.train_step();
    job->step();
  }
  const auto file = save(*job, "run.safetensors");
  reference.save(tmp.path / "train.safetensors");
  // The same tensors (weights, then moments), names, shapes and order as deepcee train's.
  BOOST_TEST(names_in_order(file) == names_in_order(tmp.path / "train.safetensors"));
  BOOST_TEST(runtime::read_safetensors(file).metadata ==
             runtime::read_safetensors(tmp.path / "train.safetensors").metadata);

  // deepcee eval's path: the file's weights give the validation loss of the runtime's.
  kernels::gpt_model loaded(*be, plan.model, train.seed);
  kernels::load_checkpoint(file, *be, loaded, nullptr);
  const double from_file = kernels::evaluate(*be, loaded, *corpus, train.batch, 2, train.seed);
  kernels::gpt_model gathered(*be, plan.model, train.seed);
  kernels::load_parameter_states(job->gather_parameters(), *be, gathered, nullptr, "stages");
  BOOST_TEST(from_file == kernels::evaluate(*be, gathered, *corpus, train.batch, 2, train.seed));
  const double single =
      kernels::evaluate(*be, reference.model(), *corpus, train.batch, 2, train.seed);
  BOOST_TEST(std::abs(from_file - single) / single < 1e-4);

  // deepcee train --resume of the runtime's checkpoint continues the same curve.
  kernels::trainer resumed(*be, train, *corpus);
  resumed.resume(file);
  BOOST_TEST(resumed.steps_done() == steps);
  for (int k = steps; k < steps + 2; ++k) {
    const auto want = reference.train_step();
    const auto got = resumed.train_step();
    BOOST_TEST(got.step == want.step);
    BOOST_TEST(std::abs(got.loss - want.loss) / want.loss < 1e-4);
  }
}

BOOST_FIXTURE_TEST_CASE(train_checkpoint_resumes_in_the_runtime, job_fixture) {
  constexpr int steps = 3;
  const auto train = train_for(plan, steps + 3);
  auto be = kernels::make_backend({});
  kernels::trainer reference(*be, train, *corpus);
  for (int k = 0; k < steps; ++k)
    reference.train_step();
  reference.save(tmp.path / "train.safetensors");
  auto job = make_job(steps + 3);
  restore(*job, tmp.path / "train.safetensors");
  for (int k = steps; k < steps + 3; ++k) {
    const auto want = reference.train_step();
    const auto got = job->step();
    BOOST_TEST(got.step == want.step);
    BOOST_TEST(std::abs(got.loss - want.loss) / want.loss < 1e-4);
  }
}

BOOST_FIXTURE_TEST_CASE(the_virtual_clock_survives_the_file_bit_for_bit, job_fixture) {
  auto job = make_job(1);
  const double clock_s = 0.1 + 0.2; // not 0.3: its last bits must survive
  const auto file = save(*job, "clock.safetensors", clock_s);
  BOOST_TEST(kernels::read_checkpoint_info(file).clock_s == clock_s);
  // A file without it (older ones) starts at 0; a clock that is no time is refused, named.
  auto contents = runtime::read_safetensors(file);
  contents.metadata.erase("clock_s");
  runtime::write_safetensors(tmp.path / "old.safetensors", contents.tensors, contents.metadata);
  BOOST_TEST(kernels::read_checkpoint_info(tmp.path / "old.safetensors").clock_s == 0.0);
  contents.metadata["clock_s"] = "soon";
  runtime::write_safetensors(tmp.path / "bad.safetensors", contents.tensors, contents.metadata);
  try {
    kernels::read_checkpoint_info(tmp.path / "bad.safetensors");
    BOOST_FAIL("a clock of 'soon' was read");
  } catch (const runtime::input_error& e) {
    BOOST_TEST(std::string(e.what()).find("bad.safetensors") != std::string::npos, e.what());
    BOOST_TEST(std::string(e.what()).find("'clock_s' is not a time") != std::string::npos);
  }
}

BOOST_FIXTURE_TEST_CASE(a_failed_write_keeps_the_previous_checkpoint, job_fixture) {
  auto job = make_job(2);
  job->step();
  const auto file = save(*job, "checkpoint.safetensors");
  const auto before = test::slurp(file);
  job->step();
  // The temporary file cannot be created: the write fails before touching the checkpoint.
  fs::create_directories(tmp.path / "checkpoint.safetensors.tmp");
  BOOST_CHECK_THROW(save(*job, "checkpoint.safetensors"), runtime::input_error);
  BOOST_TEST(test::slurp(file) == before);
  BOOST_TEST(kernels::read_checkpoint(file).info.step == 1);
}

BOOST_FIXTURE_TEST_CASE(tensors_of_another_model_are_refused_naming_the_file, job_fixture) {
  auto donor = make_job(2);
  donor->step();
  const auto good = donor->gather_parameters();
  const auto expect_refused = [&](std::vector<kernels::parameter_state> params,
                                  const std::string& name, const std::string& what) {
    const auto file = tmp.path / name;
    kernels::save_checkpoint(file, params, {1, plan.model, 7});
    auto job = make_job(2);
    try {
      restore(*job, file);
      BOOST_ERROR(name << ": accepted");
    } catch (const runtime::input_error& e) {
      const std::string msg = e.what();
      BOOST_TEST(msg.find(file.string()) != std::string::npos, msg);
      BOOST_TEST(msg.find(what) != std::string::npos, msg);
    }
    BOOST_TEST(job->steps_done() == 0);
  };
  auto missing = good;
  const std::string dropped = missing[3].name;
  missing.erase(missing.begin() + 3);
  expect_refused(missing, "missing.safetensors", dropped);

  auto reshaped = good;
  auto matrix = std::find_if(reshaped.rbegin(), reshaped.rend(),
                             [](const auto& p) { return p.shape.size() == 2; });
  BOOST_REQUIRE(matrix != reshaped.rend());
  matrix->shape = {matrix->shape[0] / 2, matrix->shape[1] * 2};
  expect_refused(reshaped, "reshaped.safetensors", matrix->name + "' is F32 [");

  auto unknown = good;
  unknown.push_back(good[2]);
  unknown.back().name = "transformer.h.1.ln_3.weight";
  expect_refused(unknown, "unknown.safetensors", "transformer.h.1.ln_3.weight");

  auto extra = good;
  extra.push_back(good[0]);
  extra.back().name = "transformer.h.9.ln_1.weight";
  expect_refused(extra, "extra.safetensors", "transformer.h.9.ln_1.weight");
}

BOOST_AUTO_TEST_SUITE_END()

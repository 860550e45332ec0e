// Job files: the cluster relative to the job file, presets, train settings, bad input.
#include "runtime/base/errors.hpp"
#include "runtime/base/model_spec.hpp"
#include "runtime/io/job_config_toml.hpp"
#include "runtime/plan/job_config.hpp"

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace deepcee;
namespace fs = std::filesystem;

namespace {

struct temp_dir {
  fs::path path = fs::temp_directory_path() / ("deepcee-job-" + std::to_string(::getpid()));
  temp_dir() {
    fs::create_directories(path / "clusters");
    std::ofstream(path / "clusters" / "two.toml") << R"(
[[region]]
name = "cloud"
tier = "cloud"
[[node]]
name = "n0"
region = "cloud"
devices = [{ kind = "T4", count = 2 }]
)";
  }
  ~temp_dir() { fs::remove_all(path); }
  fs::path job(const std::string& text) const {
    std::ofstream(path / "job.toml") << text;
    return path / "job.toml";
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(job_config)

BOOST_AUTO_TEST_CASE(reads_cluster_model_and_training) {
  temp_dir d;
  const auto job = runtime::load_job_config(d.job(R"(
name = "t"
time = "virtual"
cluster = "clusters/two.toml"
plan = "plans/x.json"
model = "small"
[train]
steps = 7
batch = 12
seed = 3
[train.optimizer]
lr = 1e-3
)"));
  BOOST_CHECK_EQUAL(job.name, "t");
  BOOST_CHECK(job.time == runtime::time_mode::virtual_time);
  BOOST_CHECK_EQUAL(job.cluster.devices.size(), 2u);
  BOOST_REQUIRE(job.plan_path);
  BOOST_CHECK(*job.plan_path == d.path / "plans/x.json");
  BOOST_CHECK_EQUAL(job.model_name, "small");
  BOOST_CHECK_EQUAL(job.train.steps, 7);
  BOOST_CHECK_EQUAL(job.train.batch, 12);
  BOOST_CHECK_EQUAL(job.train.seed, 3u);
  BOOST_CHECK_CLOSE(job.train.optimizer.lr, 1e-3, 1e-9);
  BOOST_CHECK_EQUAL(job.train.model.d_model, runtime::model_preset("small")->d_model);
}

BOOST_AUTO_TEST_CASE(plan_auto_leaves_the_plan_to_the_planner) {
  temp_dir d;
  const auto job =
      runtime::load_job_config(d.job("cluster = \"clusters/two.toml\"\nplan = \"auto\"\n"));
  BOOST_CHECK(!job.plan_path);
}

BOOST_AUTO_TEST_CASE(bad_input_is_an_input_error) {
  temp_dir d;
  BOOST_CHECK_THROW(runtime::load_job_config(d.job("cluster = \"clusters/two.toml\"\nmodl = 1\n")),
                    runtime::input_error);
  BOOST_CHECK_THROW(runtime::load_job_config(d.job("plan = \"auto\"\n")), runtime::input_error);
  BOOST_CHECK_THROW(
      runtime::load_job_config(d.job("cluster = \"clusters/two.toml\"\ntime = \"later\"\n")),
      runtime::input_error);
  BOOST_CHECK_THROW(
      runtime::load_job_config(d.job("cluster = \"clusters/two.toml\"\nmodel = \"huge\"\n")),
      runtime::input_error);
  BOOST_CHECK_THROW(runtime::load_job_config(d.job("cluster = \"clusters/none.toml\"\n")),
                    runtime::input_error);
}

BOOST_AUTO_TEST_CASE(time_modes_and_link_shaping) {
  temp_dir d;
  const std::string head = "cluster = \"clusters/two.toml\"\n";
  const auto wall = runtime::load_job_config(d.job(head + "time = \"wall\"\nshape_links = true\n"));
  BOOST_CHECK(wall.time == runtime::time_mode::wall);
  BOOST_CHECK(wall.shape_links);
  const auto dry = runtime::load_job_config(d.job(head + "time = \"dry\"\n"));
  BOOST_CHECK(dry.time == runtime::time_mode::dry);
  BOOST_CHECK(!dry.shape_links);
  // Virtual and dry time model the links already; a non-boolean is no setting.
  BOOST_CHECK_THROW(runtime::load_job_config(d.job(head + "shape_links = true\n")),
                    runtime::input_error);
  BOOST_CHECK_THROW(
      runtime::load_job_config(d.job(head + "time = \"wall\"\nshape_links = \"yes\"\n")),
      runtime::input_error);
}

BOOST_AUTO_TEST_CASE(nodes_give_host_port_and_coordinator) {
  temp_dir d;
  const auto job = runtime::load_job_config(d.job(R"(cluster = "clusters/two.toml"
coordinator = "n0"
connect_timeout = 2.5
heartbeat_interval = 0.5
heartbeat_timeout = 3
[[node]]
name = "n0"
host = "10.0.0.1"
port = 4711
)"));
  BOOST_CHECK_EQUAL(job.coordinator_node, 0);
  BOOST_CHECK_CLOSE(job.connect_timeout_s, 2.5, 1e-9);
  BOOST_CHECK_CLOSE(job.heartbeat_interval_s, 0.5, 1e-9);
  BOOST_CHECK_CLOSE(job.heartbeat_timeout_s, 3.0, 1e-9);
  BOOST_CHECK_EQUAL(job.cluster.nodes[0].host, "10.0.0.1");
  BOOST_CHECK_EQUAL(job.cluster.nodes[0].port, 4711);
}

/// Each bad node section is an input_error naming the file and the line.
BOOST_AUTO_TEST_CASE(bad_nodes_name_file_and_line) {
  temp_dir d;
  const auto expect = [&](const std::string& text, const std::string& where) {
    try {
      runtime::load_job_config(d.job(text));
      BOOST_ERROR("no error for: " << text);
    } catch (const runtime::input_error& e) {
      const std::string what = e.what();
      BOOST_CHECK_MESSAGE(what.find(where) != std::string::npos, what << " lacks " << where);
    }
  };
  const std::string head = "cluster = \"clusters/two.toml\"\n";
  expect(head + "[[node]]\nname = \"n9\"\n", "job.toml:2");
  expect(head + "[[node]]\nname = \"n0\"\nport = 70000\n", "job.toml:4");
  expect(head + "[[node]]\nname = \"n0\"\nhots = \"x\"\n", "job.toml:4");
  expect(head + "coordinator = \"n7\"\n", "job.toml:2");
  expect(head + "connect_timeout = -1\n", "job.toml:2");
  expect(head + "heartbeat_interval = 0\n", "job.toml:2");
  expect(head + "heartbeat_interval = 2\nheartbeat_timeout = 2\n", "job.toml:3");
}

BOOST_AUTO_TEST_CASE(recovery_sets_the_snapshot_interval) {
  temp_dir d;
  const std::string head = "cluster = \"clusters/two.toml\"\n";
  BOOST_CHECK_EQUAL(runtime::load_job_config(d.job(head)).snapshot_every, -1);
  BOOST_CHECK_EQUAL(
      runtime::load_job_config(d.job(head + "[recovery]\nsnapshot_every = 5\n")).snapshot_every, 5);
  BOOST_CHECK_EQUAL(
      runtime::load_job_config(d.job(head + "[recovery]\nsnapshot_every = 0\n")).snapshot_every, 0);
  BOOST_CHECK_EQUAL(
      runtime::load_job_config(d.job(head + "[recovery]\nsnapshot_every = \"auto\"\n"))
          .snapshot_every,
      -1);
  for (const char* bad :
       {"snapshot_every = -2", "snapshot_every = 2.5", "snapshot_every = \"x\"", "snapshots = 3"})
    try {
      runtime::load_job_config(d.job(head + "[recovery]\n" + bad + "\n"));
      BOOST_ERROR("no error for: " << bad);
    } catch (const runtime::input_error& e) {
      const std::string what = e.what();
      BOOST_CHECK_MESSAGE(what.find("job.toml:3") != std::string::npos, what);
    }
}

BOOST_AUTO_TEST_CASE(security_names_the_token_file_relative_to_the_job_file) {
  temp_dir d;
  const std::string head = "cluster = \"clusters/two.toml\"\n";
  BOOST_CHECK(!runtime::load_job_config(d.job(head)).token_file);
  const auto job =
      runtime::load_job_config(d.job(head + "[security]\ntoken_file = \"job.token\"\n"));
  BOOST_REQUIRE(job.token_file);
  BOOST_CHECK_EQUAL(*job.token_file, d.path / "job.token");
  try {
    runtime::load_job_config(d.job(head + "[security]\ncertfile = \"node.pem\"\n"));
    BOOST_FAIL("an unknown [security] key was accepted");
  } catch (const runtime::input_error& e) {
    BOOST_CHECK_MESSAGE(
        std::string(e.what()).find("job.toml:3: unknown key 'certfile' in [security]") !=
            std::string::npos,
        e.what());
  }
}

BOOST_AUTO_TEST_CASE(security_sets_the_first_bytes_timeout_of_the_gate) {
  temp_dir d;
  const std::string head = "cluster = \"clusters/two.toml\"\n";
  BOOST_CHECK_EQUAL(runtime::load_job_config(d.job(head)).first_bytes_timeout_s, 3.0);
  const auto job =
      runtime::load_job_config(d.job(head + "[security]\nfirst_bytes_timeout = 0.5\n"));
  BOOST_CHECK_EQUAL(job.first_bytes_timeout_s, 0.5);
  try {
    runtime::load_job_config(d.job(head + "[security]\nfirst_bytes_timeout = 0\n"));
    BOOST_FAIL("a zero first_bytes_timeout was accepted");
  } catch (const runtime::input_error& e) {
    BOOST_CHECK_MESSAGE(std::string(e.what()).find("job.toml:3: first_bytes_timeout must be a "
                                                   "number of seconds") != std::string::npos,
                        e.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()

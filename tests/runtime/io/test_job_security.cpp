// [security] certificate, key and ca in a job file, and a [[node]]'s own certificate.
#include "runtime/base/errors.hpp"
#include "runtime/io/job_config_toml.hpp"
#include "runtime/plan/job_config.hpp"
#include "tests/support/refusal.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <fstream>

using namespace deepcee;
using deepcee::test::contains;
namespace fs = std::filesystem;

namespace {

struct job_dir {
  test::temp_dir dir;
  job_dir() {
    fs::create_directories(dir.path / "clusters");
    std::ofstream(dir.path / "clusters" / "two.toml") << R"(
[[region]]
name = "cloud"
tier = "cloud"
[[node]]
name = "n0"
region = "cloud"
devices = [{ kind = "T4", count = 1 }]
[[node]]
name = "n1"
region = "cloud"
devices = [{ kind = "T4", count = 1 }]
)";
  }
  runtime::job_config load(const std::string& text) const {
    std::ofstream(dir.path / "job.toml") << "cluster = \"clusters/two.toml\"\n" << text;
    return runtime::load_job_config(dir.path / "job.toml");
  }
  std::string error(const std::string& text) const {
    return test::refusal<runtime::input_error>([&] { load(text); });
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(job_security)

BOOST_AUTO_TEST_CASE(certificates_are_read_relative_to_the_job_file_per_node_or_for_all) {
  job_dir d;
  BOOST_CHECK(!d.load("").tls);
  const auto all =
      d.load("[security]\nca = \"ca.pem\"\ncertificate = \"node.pem\"\nkey = \"/k/node.key\"\n");
  BOOST_REQUIRE(all.tls);
  BOOST_CHECK_EQUAL(all.tls->ca, d.dir.path / "ca.pem");
  BOOST_CHECK_EQUAL(all.tls->of("n1").certificate, d.dir.path / "node.pem");
  BOOST_CHECK_EQUAL(all.tls->of("n1").key, fs::path("/k/node.key"));
  const auto own = d.load("[security]\nca = \"ca.pem\"\n[[node]]\nname = \"n0\"\ncertificate = "
                          "\"n0.pem\"\nkey = \"n0.key\"\n[[node]]\nname = \"n1\"\ncertificate = "
                          "\"pki/n1.pem\"\nkey = \"pki/n1.key\"\n");
  BOOST_REQUIRE(own.tls);
  BOOST_CHECK_EQUAL(own.tls->of("n0").certificate, d.dir.path / "n0.pem");
  BOOST_CHECK_EQUAL(own.tls->of("n1").certificate, d.dir.path / "pki/n1.pem");
  BOOST_CHECK_EQUAL(own.tls->of("n1").key, d.dir.path / "pki/n1.key");
}

BOOST_AUTO_TEST_CASE(incomplete_certificate_settings_name_the_line) {
  job_dir d;
  const auto no_ca = d.error("[security]\ncertificate = \"n.pem\"\nkey = \"n.key\"\n");
  BOOST_CHECK_MESSAGE(contains(no_ca, "job.toml:3: [security] certificate and key need ca"), no_ca);
  const auto no_key = d.error("[security]\nca = \"ca.pem\"\ncertificate = \"n.pem\"\n");
  BOOST_CHECK_MESSAGE(contains(no_key, "job.toml:4: [security] needs both certificate"), no_key);
  const auto node_without_ca =
      d.error("[[node]]\nname = \"n1\"\ncertificate = \"n1.pem\"\nkey = \"n1.key\"\n");
  BOOST_CHECK_MESSAGE(contains(node_without_ca, "job.toml:4: [[node]] 'n1' has a certificate but "
                                                "[security] has no ca"),
                      node_without_ca);
  const auto node_without_key =
      d.error("[security]\nca = \"ca.pem\"\n[[node]]\nname = \"n1\"\ncertificate = \"n1.pem\"\n");
  BOOST_CHECK_MESSAGE(contains(node_without_key, "job.toml:6: [[node]] 'n1' needs both"),
                      node_without_key);
  // n0 has none of its own and [security] gives none for all.
  const auto uncovered = d.error("[security]\nca = \"ca.pem\"\n[[node]]\nname = \"n1\"\n"
                                 "certificate = \"n1.pem\"\nkey = \"n1.key\"\n");
  BOOST_CHECK_MESSAGE(
      contains(uncovered, "job.toml:2: [security] ca is set, but node 'n0' has no certificate"),
      uncovered);
}

BOOST_AUTO_TEST_SUITE_END()

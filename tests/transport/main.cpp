#define BOOST_TEST_MODULE deepcee_transport
#include <boost/test/unit_test.hpp>

#include <csignal>

namespace {

/// The tests drive TLS streams from their own threads, where a gate's threads block SIGPIPE:
/// a peer gone mid-write must fail the write, not end the test run.
struct ignore_sigpipe {
  ignore_sigpipe() { std::signal(SIGPIPE, SIG_IGN); }
};

} // namespace

BOOST_GLOBAL_FIXTURE(ignore_sigpipe);

#define BOOST_TEST_MODULE deepcee_runtime
#include <boost/test/unit_test.hpp>

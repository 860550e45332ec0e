#define BOOST_TEST_MODULE deepcee_tools
#include <boost/test/unit_test.hpp>

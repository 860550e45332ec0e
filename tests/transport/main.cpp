#define BOOST_TEST_MODULE deepcee_transport
#include <boost/test/unit_test.hpp>

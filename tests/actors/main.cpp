#define BOOST_TEST_MODULE deepcee_actors
#include <boost/test/unit_test.hpp>

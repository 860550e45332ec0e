#define BOOST_TEST_MODULE deepcee_messages
#include <boost/test/unit_test.hpp>

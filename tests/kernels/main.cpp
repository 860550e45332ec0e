#define BOOST_TEST_MODULE deepcee_kernels
#include <boost/test/unit_test.hpp>

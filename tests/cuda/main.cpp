// The CUDA suites run only where a GPU is visible; elsewhere the executable exits 77,
// which CTest reports as "skipped".
#define BOOST_TEST_MODULE deepcee_cuda
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include "kernels/backend.hpp"

#include <cstdio>

int main(int argc, char* argv[]) {
  if (deepcee::kernels::visible_cuda_devices() == 0) {
    std::puts("no CUDA GPU visible: CUDA tests skipped");
    return 77;
  }
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}

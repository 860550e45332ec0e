// The CUDA suites run only where a GPU is visible; elsewhere the executable exits 77,
// which CTest reports as "skipped" - but a GPU machine whose driver CUDA cannot use fails.
#define BOOST_TEST_MODULE deepcee_cuda
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include "kernels/cuda/cuda_backend.hpp"

#include <cstdio>

int main(int argc, char* argv[]) {
  if (deepcee::kernels::cuda_device_count() == 0) {
    if (const auto problem = deepcee::kernels::cuda_driver_problem(); !problem.empty()) {
      std::printf("CUDA tests cannot run: %s\n", problem.c_str());
      return 1;
    }
    std::puts("no CUDA GPU visible: CUDA tests skipped");
    return 77;
  }
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}

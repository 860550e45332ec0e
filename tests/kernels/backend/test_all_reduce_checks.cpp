// The argument checks of an all-reduce group, where no GPU is needed: device ordinals
// (duplicates, range) and the buffer layout across ranks. With CUDA built, nccl_group's
// constructor is checked to refuse the same ordinals before it touches NCCL.
#include "kernels/backend/all_reduce_checks.hpp"
#ifdef DEEPCEE_HAVE_CUDA
#include "kernels/cuda/nccl_group.hpp"
#include "kernels/device/make_backend.hpp"
#endif

#include "tests/support/refusal.hpp"

#include <boost/test/unit_test.hpp>

#include <span>
#include <string>
#include <vector>

namespace dk = deepcee::kernels;

namespace {

using deepcee::test::contains;
using deepcee::test::refusal;

using layout = std::vector<std::vector<std::span<float>>>;

} // namespace

BOOST_AUTO_TEST_SUITE(all_reduce_checks)

BOOST_AUTO_TEST_CASE(distinct_visible_ordinals_pass) {
  BOOST_CHECK_NO_THROW(dk::check_device_ordinals({0}, 1));
  BOOST_CHECK_NO_THROW(dk::check_device_ordinals({3, 1, 0, 2}, 4));
}

BOOST_AUTO_TEST_CASE(duplicate_ordinal_is_named_with_both_ranks) {
  std::string message = refusal([] { dk::check_device_ordinals({2, 0, 2}, 4); });
  BOOST_TEST(contains(message, "CUDA device 2 is listed twice"), message);
  BOOST_TEST(contains(message, "ranks 0 and 2"), message);
}

BOOST_AUTO_TEST_CASE(invisible_or_negative_ordinal_is_refused) {
  std::string message = refusal([] { dk::check_device_ordinals({0, 4}, 4); });
  BOOST_TEST(contains(message, "CUDA device 4 (rank 1) is not visible: 4 CUDA"), message);
  message = refusal([] { dk::check_device_ordinals({-1}, 4); });
  BOOST_TEST(contains(message, "CUDA device -1 (rank 0)"), message);
  BOOST_TEST(!refusal([] { dk::check_device_ordinals({}, 4); }).empty());
}

BOOST_AUTO_TEST_CASE(matching_layout_passes) {
  std::vector<float> a(7), b(7), c(1), d(1);
  layout same{{std::span(a), std::span(c), std::span<float>()},
              {std::span(b), std::span(d), std::span<float>()}};
  BOOST_CHECK_NO_THROW(dk::check_all_reduce_layout(same, 2));
  BOOST_CHECK_NO_THROW(dk::check_all_reduce_layout(layout{{}, {}}, 2));
}

BOOST_AUTO_TEST_CASE(size_mismatch_names_buffer_and_rank) {
  std::vector<float> a(7), b(7), c(5), d(4);
  layout sizes{{std::span(a), std::span(c)}, {std::span(b), std::span(d)}};
  std::string message = refusal([&] { dk::check_all_reduce_layout(sizes, 2); });
  BOOST_TEST(contains(message, "buffer 1 has 4 elements on rank 1 but 5 on rank 0"), message);
}

BOOST_AUTO_TEST_CASE(buffer_count_and_rank_count_mismatches_are_refused) {
  std::vector<float> a(3), b(3);
  layout counts{{std::span(a)}, {std::span(b)}, {}};
  std::string message = refusal([&] { dk::check_all_reduce_layout(counts, 3); });
  BOOST_TEST(contains(message, "rank 2 has 0 buffers, rank 0 has 1"), message);
  message = refusal([&] { dk::check_all_reduce_layout(layout{{std::span(a)}}, 2); });
  BOOST_TEST(contains(message, "1 buffer lists for a group of 2 ranks"), message);
}

BOOST_AUTO_TEST_CASE(null_buffer_with_elements_is_refused) {
  std::vector<float> a(3);
  layout null_data{{std::span(a)}, {std::span<float>(static_cast<float*>(nullptr), 3)}};
  std::string message = refusal([&] { dk::check_all_reduce_layout(null_data, 2); });
  BOOST_TEST(contains(message, "buffer 0 of rank 1 is a null pointer"), message);
}

#ifdef DEEPCEE_HAVE_CUDA
// Runs with or without a GPU: the ordinals are checked before NCCL or the driver is used.
BOOST_AUTO_TEST_CASE(nccl_group_refuses_bad_ordinals) {
  std::string message = refusal([] { dk::nccl_group group({0, 1, 0}); });
  BOOST_TEST(contains(message, "CUDA device 0 is listed twice"), message);
  int visible = dk::visible_cuda_devices();
  message = refusal([&] { dk::nccl_group group({visible}); });
  BOOST_TEST(contains(message, std::to_string(visible) + " CUDA device(s) visible"), message);
}
#endif

BOOST_AUTO_TEST_SUITE_END()

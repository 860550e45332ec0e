// NCCL all-reduce over every visible GPU of this process (one rank per GPU; a single GPU
// is a group of one): buffers of several sizes, filled with small integers distinct per
// rank, must each hold the CPU's elementwise sum afterwards (exact in fp32), twice in a
// row; bad layouts, buffers of the wrong device and duplicate ordinals are refused, and a
// refusal leaves the group usable.
#include "kernels/device/make_backend.hpp"
#ifdef DEEPCEE_HAVE_CUDA
#include "kernels/cuda/nccl_group.hpp"
#endif

#include "tests/support/refusal.hpp"

#include <boost/test/unit_test.hpp>

#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#ifdef DEEPCEE_HAVE_CUDA

namespace dk = deepcee::kernels;

namespace {

using deepcee::test::contains;
using deepcee::test::refusal;

using layout = std::vector<std::vector<std::span<float>>>;

// One element, odd lengths (not multiples of 4: NCCL's vectorized tails), one large.
const std::vector<int64_t> buffer_sizes{1, 7, 1000, 4099, (1 << 20) + 3};

std::vector<int> every_visible_device() {
  std::vector<int> devices(static_cast<size_t>(dk::visible_cuda_devices()));
  std::iota(devices.begin(), devices.end(), 0);
  return devices;
}

/// Integers below 2^13 in magnitude, distinct per rank and buffer: sums over a few ranks
/// (and sums of those sums) are exact in fp32, so the check can ask for equality.
float value_of(size_t rank, size_t buffer, int64_t i) {
  return static_cast<float>((i * 7 + static_cast<int64_t>(buffer) * 13) % 101 - 50 +
                            1000 * static_cast<int64_t>(rank + 1));
}

/// Rank r's buffers on GPU r, uploaded by that GPU's backend and synchronized, so that
/// NCCL's streams see them written.
struct gpu_buffers {
  std::vector<std::unique_ptr<dk::backend>> backends;
  std::vector<std::vector<dk::tensor>> tensors; // [rank][buffer]

  explicit gpu_buffers(const std::vector<int>& devices) {
    for (size_t r = 0; r < devices.size(); ++r) {
      backends.push_back(dk::make_backend({.kind = dk::backend_kind::cuda, .device = devices[r]}));
      tensors.emplace_back();
      for (size_t b = 0; b < buffer_sizes.size(); ++b) {
        std::vector<float> values(static_cast<size_t>(buffer_sizes[b]));
        for (int64_t i = 0; i < buffer_sizes[b]; ++i)
          values[static_cast<size_t>(i)] = value_of(r, b, i);
        tensors[r].push_back(backends[r]->from_host(values, {buffer_sizes[b]}));
      }
      backends[r]->synchronize();
    }
  }

  /// Every rank's buffers, and an empty one last (nothing to reduce, still accepted).
  layout spans() {
    layout per_rank(tensors.size());
    for (size_t r = 0; r < tensors.size(); ++r) {
      for (dk::tensor& t : tensors[r])
        per_rank[r].emplace_back(t.f32(), static_cast<size_t>(t.numel()));
      per_rank[r].emplace_back();
    }
    return per_rank;
  }

  /// Checks every rank's buffer b equals `times` x the sum over ranks of their inputs.
  void check_sums(int times) {
    const size_t ranks = tensors.size();
    for (size_t b = 0; b < buffer_sizes.size(); ++b) {
      std::vector<float> want(static_cast<size_t>(buffer_sizes[b]), 0.0f);
      for (size_t r = 0; r < ranks; ++r)
        for (int64_t i = 0; i < buffer_sizes[b]; ++i)
          want[static_cast<size_t>(i)] += value_of(r, b, i);
      for (float& w : want)
        w *= static_cast<float>(times);
      for (size_t r = 0; r < ranks; ++r) {
        std::vector<float> got = backends[r]->to_host<float>(tensors[r][b]);
        size_t wrong = 0, first_wrong = got.size();
        for (size_t i = 0; i < got.size(); ++i)
          if (got[i] != want[i] && wrong++ == 0)
            first_wrong = i;
        BOOST_TEST(wrong == 0u, "rank " << r << " buffer " << b << " (" << buffer_sizes[b]
                                        << " floats): " << wrong << " wrong, first at "
                                        << first_wrong << ": " << (wrong ? got[first_wrong] : 0.0f)
                                        << " != " << (wrong ? want[first_wrong] : 0.0f));
      }
    }
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(nccl_group)

BOOST_AUTO_TEST_CASE(sums_every_buffer_across_every_gpu) {
  std::vector<int> devices = every_visible_device();
  BOOST_TEST_MESSAGE("all-reduce over " << devices.size() << " GPU(s)"
                                        << (devices.size() < 2 ? ": one rank, so NCCL sums "
                                                                 "nothing here (two GPUs do)"
                                                               : ""));
  dk::nccl_group group(devices);
  BOOST_TEST(group.ranks() == static_cast<int>(devices.size()));
  BOOST_TEST(group.devices() == devices);
  gpu_buffers buffers(devices);
  group.all_reduce_sum(buffers.spans());
  buffers.check_sums(1);
  // A second all-reduce sums the sums: every rank now holds ranks x the sum.
  group.all_reduce_sum(buffers.spans());
  buffers.check_sums(static_cast<int>(devices.size()));
}

BOOST_AUTO_TEST_CASE(mismatched_layouts_are_refused_and_the_group_stays_usable) {
  std::vector<int> devices = every_visible_device();
  dk::nccl_group group(devices);
  gpu_buffers buffers(devices);
  layout per_rank = buffers.spans();

  layout one_list_too_many = per_rank;
  one_list_too_many.push_back(per_rank.back());
  std::string message = refusal([&] { group.all_reduce_sum(one_list_too_many); });
  BOOST_TEST(contains(message, "buffer lists for a group of"), message);

  if (devices.size() >= 2) {
    layout shorter = per_rank;
    shorter[1][2] = shorter[1][2].first(shorter[1][2].size() - 1);
    message = refusal([&] { group.all_reduce_sum(shorter); });
    BOOST_TEST(contains(message, "buffer 2 has 999 elements on rank 1 but 1000 on rank 0"),
               message);
    layout fewer = per_rank;
    fewer[1].pop_back();
    message = refusal([&] { group.all_reduce_sum(fewer); });
    BOOST_TEST(contains(message, "rank 1 has"), message);
  } else {
    BOOST_TEST_MESSAGE("one GPU: size mismatches across ranks need two (checked in "
                       "test_kernels.all_reduce_checks)");
  }

  group.all_reduce_sum(per_rank);
  buffers.check_sums(1);
}

BOOST_AUTO_TEST_CASE(buffers_not_on_the_rank_device_are_refused) {
  std::vector<int> devices = every_visible_device();
  dk::nccl_group group(devices);
  gpu_buffers buffers(devices);
  std::vector<std::vector<float>> host(devices.size(), std::vector<float>(7));
  layout on_host(devices.size());
  for (size_t r = 0; r < devices.size(); ++r)
    on_host[r].emplace_back(host[r]);
  std::string message = refusal([&] { group.all_reduce_sum(on_host); });
  BOOST_TEST(contains(message, "buffer 0 of rank 0 (CUDA device 0) is host memory"), message);

  if (devices.size() >= 2) {
    layout swapped = buffers.spans();
    std::swap(swapped[0], swapped[1]);
    message = refusal([&] { group.all_reduce_sum(swapped); });
    BOOST_TEST(contains(message, "is memory of CUDA device 1, not memory of CUDA device 0"),
               message);
  }
  group.all_reduce_sum(buffers.spans());
  buffers.check_sums(1);
}

BOOST_AUTO_TEST_CASE(duplicate_ordinals_are_refused) {
  std::string message = refusal([] { dk::nccl_group group({0, 0}); });
  BOOST_TEST(contains(message, "CUDA device 0 is listed twice in an all-reduce group (ranks 0 "
                               "and 1)"),
             message);
  if (dk::visible_cuda_devices() >= 2) {
    message = refusal([] { dk::nccl_group group({1, 0, 1}); });
    BOOST_TEST(contains(message, "CUDA device 1 is listed twice"), message);
  }
}

BOOST_AUTO_TEST_SUITE_END()

#endif

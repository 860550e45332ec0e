// Host code only (no kernels), so g++ compiles it in C++20 like the header's users.
#include "kernels/cuda/nccl_group.hpp"

#include "kernels/backend/all_reduce_checks.hpp"
#include "kernels/cuda/cuda_backend.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>

namespace deepcee::kernels {

namespace {

/// NCCL's guide (2.9 to 2.11) allows at most 2048 operations between ncclGroupStart and
/// ncclGroupEnd; an all-reduce with more buffers x ranks is issued as several group calls.
constexpr size_t max_ops_per_group_call = 2048;

/// How long the wait sleeps between polls of the streams and of NCCL's asynchronous errors.
constexpr std::chrono::microseconds poll_interval{20};

std::string rank_text(size_t rank, int device) {
  return "rank " + std::to_string(rank) + " (CUDA device " + std::to_string(device) + ")";
}

std::string devices_text(const std::vector<int>& devices) {
  std::string text = "every rank (CUDA devices ";
  for (size_t r = 0; r < devices.size(); ++r)
    text += (r ? ", " : "") + std::to_string(devices[r]);
  return text + ")";
}

std::string cuda_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}

std::string nccl_text(ncclResult_t status) {
  std::string text = ncclGetErrorString(status);
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && *last != '\0')
    text += " (NCCL's last message: " + std::string(last) + ")";
  return text;
}

[[noreturn]] void throw_failure(const char* library, const std::string& where, const char* call,
                                const char* file, int line, const std::string& what) {
  throw std::runtime_error(std::string(library) + " error on " + where + " at " + file + ":" +
                           std::to_string(line) + ": " + call + " -> " + what);
}

} // namespace

// Like cuda_check.hpp's macros, with the rank (or ranks) the call was made for.
#define GROUP_CUDA_CHECK(call, where)                                                              \
  do {                                                                                             \
    cudaError_t deepcee_status_ = (call);                                                          \
    if (deepcee_status_ != cudaSuccess)                                                            \
      throw_failure("CUDA", (where), #call, __FILE__, __LINE__, cuda_text(deepcee_status_));       \
  } while (0)

#define GROUP_NCCL_CHECK(call, where)                                                              \
  do {                                                                                             \
    ncclResult_t deepcee_status_ = (call);                                                         \
    if (deepcee_status_ != ncclSuccess)                                                            \
      throw_failure("NCCL", (where), #call, __FILE__, __LINE__, nccl_text(deepcee_status_));       \
  } while (0)

namespace {

/// Puts the calling thread's current CUDA device back as it found it: the group actor's
/// thread is shared with other actors.
class current_device_guard {
public:
  current_device_guard() {
    if (cudaGetDevice(&device_) != cudaSuccess) {
      cudaGetLastError();
      device_ = -1;
    }
  }
  ~current_device_guard() {
    if (device_ >= 0)
      cudaSetDevice(device_);
  }
  current_device_guard(const current_device_guard&) = delete;
  current_device_guard& operator=(const current_device_guard&) = delete;

private:
  int device_ = -1;
};

/// ncclGroupStart when made; ncclGroupEnd at end(), or in the destructor when something
/// threw first, so that this thread never stays inside a group (NCCL's group depth is
/// per thread).
class group_call {
public:
  explicit group_call(const std::string& where) { GROUP_NCCL_CHECK(ncclGroupStart(), where); }
  ~group_call() {
    if (open_)
      ncclGroupEnd();
  }
  void end(const std::string& where) {
    open_ = false;
    GROUP_NCCL_CHECK(ncclGroupEnd(), where);
  }
  group_call(const group_call&) = delete;
  group_call& operator=(const group_call&) = delete;

private:
  bool open_ = true;
};

} // namespace

struct nccl_group::state {
  std::vector<int> devices;
  std::chrono::milliseconds timeout;
  std::vector<ncclComm_t> comms;     // one per rank once made; empty after an abort
  std::vector<cudaStream_t> streams; // one per rank (null until made)
  bool aborted = false;

  state(std::vector<int> devices_, std::chrono::milliseconds timeout_)
      : devices(std::move(devices_)), timeout(timeout_), streams(devices.size(), nullptr) {}

  ~state() {
    current_device_guard keep;
    if (!comms.empty()) {
      // Finalize every rank in one group call, then destroy (NCCL's own examples): a
      // finalize of one rank alone would wait for the others.
      bool finalized = ncclGroupStart() == ncclSuccess;
      if (finalized) {
        for (ncclComm_t comm : comms)
          finalized = ncclCommFinalize(comm) == ncclSuccess && finalized;
        finalized = ncclGroupEnd() == ncclSuccess && finalized;
      }
      for (ncclComm_t comm : comms) {
        if (finalized)
          ncclCommDestroy(comm);
        else
          ncclCommAbort(comm);
      }
    }
    for (size_t r = 0; r < streams.size(); ++r)
      if (streams[r] != nullptr && cudaSetDevice(devices[r]) == cudaSuccess)
        cudaStreamDestroy(streams[r]);
    cudaGetLastError();
  }

  size_t ranks() const { return devices.size(); }

  void create() {
    current_device_guard keep;
    std::vector<ncclComm_t> made(ranks(), nullptr);
    GROUP_NCCL_CHECK(ncclCommInitAll(made.data(), static_cast<int>(ranks()), devices.data()),
                     devices_text(devices));
    comms = std::move(made);
    for (size_t r = 0; r < ranks(); ++r) {
      GROUP_CUDA_CHECK(cudaSetDevice(devices[r]), rank_text(r, devices[r]));
      GROUP_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking),
                       rank_text(r, devices[r]));
    }
    grant_peers_access_to_memory_pools();
  }

  /// Within one process NCCL reads and writes the peer ranks' buffers themselves over P2P
  /// (what NCCL_P2P_DIRECT_DISABLE turns off). The CUDA backend allocates with
  /// cudaMallocAsync from each device's current memory pool. Unlike cudaMalloc memory, a
  /// peer GPU may touch pool memory only once the pool grants it access. So grant every
  /// peer that can reach the device, for the life of the process and later allocations too.
  void grant_peers_access_to_memory_pools() {
    for (size_t owner = 0; owner < ranks(); ++owner) {
      cudaMemPool_t pool = nullptr;
      GROUP_CUDA_CHECK(cudaDeviceGetMemPool(&pool, devices[owner]),
                       rank_text(owner, devices[owner]));
      for (size_t peer = 0; peer < ranks(); ++peer) {
        if (peer == owner)
          continue;
        int reachable = 0;
        GROUP_CUDA_CHECK(cudaDeviceCanAccessPeer(&reachable, devices[peer], devices[owner]),
                         rank_text(peer, devices[peer]));
        if (reachable == 0)
          continue; // NCCL goes through host memory between these two
        cudaMemAccessDesc access{};
        access.location.type = cudaMemLocationTypeDevice;
        access.location.id = devices[peer];
        access.flags = cudaMemAccessFlagsProtReadWrite;
        GROUP_CUDA_CHECK(cudaMemPoolSetAccess(pool, &access, 1), rank_text(owner, devices[owner]));
      }
    }
  }

  /// NCCL would fail, or read the wrong memory, on a pointer of another device or of the
  /// host: refuse it before anything is enqueued, naming the rank and the buffer.
  void check_buffers_on_devices(const std::vector<std::vector<std::span<float>>>& per_rank) const {
    for (size_t r = 0; r < ranks(); ++r)
      for (size_t b = 0; b < per_rank[r].size(); ++b) {
        const std::span<float>& buffer = per_rank[r][b];
        if (buffer.empty())
          continue;
        cudaPointerAttributes attributes{};
        cudaError_t status = cudaPointerGetAttributes(&attributes, buffer.data());
        std::string found;
        if (status != cudaSuccess) {
          cudaGetLastError();
          found = cuda_text(status);
        } else if (attributes.type == cudaMemoryTypeDevice ||
                   attributes.type == cudaMemoryTypeManaged) {
          if (attributes.device == devices[r])
            continue;
          found = "memory of CUDA device " + std::to_string(attributes.device);
        } else {
          found = "host memory";
        }
        throw std::invalid_argument("all-reduce: buffer " + std::to_string(b) + " of " +
                                    rank_text(r, devices[r]) + " is " + found +
                                    ", not memory of CUDA device " + std::to_string(devices[r]));
      }
  }

  void issue(const std::vector<std::vector<std::span<float>>>& per_rank) {
    const size_t buffers = per_rank[0].size();
    const size_t per_call = std::max<size_t>(1, max_ops_per_group_call / ranks());
    for (size_t first = 0; first < buffers; first += per_call) {
      group_call group(devices_text(devices));
      for (size_t b = first; b < std::min(buffers, first + per_call); ++b)
        for (size_t r = 0; r < ranks(); ++r) {
          float* data = per_rank[r][b].data();
          if (per_rank[r][b].empty())
            continue; // empty on every rank (the layout check saw equal sizes)
          GROUP_NCCL_CHECK(ncclAllReduce(data, data, per_rank[r][b].size(), ncclFloat, ncclSum,
                                         comms[r], streams[r]),
                           rank_text(r, devices[r]));
        }
      group.end(devices_text(devices));
    }
  }

  /// Polls every stream until all are done, so that an asynchronous NCCL error or the
  /// timeout ends the wait instead of blocking the thread for ever.
  void wait() {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<bool> done(ranks(), false);
    for (;;) {
      size_t pending = 0;
      for (size_t r = 0; r < ranks(); ++r) {
        if (done[r])
          continue;
        cudaError_t status = cudaStreamQuery(streams[r]);
        if (status == cudaSuccess) {
          done[r] = true;
          continue;
        }
        if (status != cudaErrorNotReady)
          throw_failure("CUDA", rank_text(r, devices[r]), "cudaStreamQuery(stream)", __FILE__,
                        __LINE__, cuda_text(status));
        ncclResult_t async_error = ncclSuccess;
        GROUP_NCCL_CHECK(ncclCommGetAsyncError(comms[r], &async_error), rank_text(r, devices[r]));
        if (async_error != ncclSuccess && async_error != ncclInProgress)
          throw_failure("NCCL", rank_text(r, devices[r]), "ncclCommGetAsyncError(comm)", __FILE__,
                        __LINE__, nccl_text(async_error));
        ++pending;
      }
      if (pending == 0)
        return;
      if (std::chrono::steady_clock::now() > deadline) {
        std::string late;
        for (size_t r = 0; r < ranks(); ++r)
          if (!done[r])
            late += (late.empty() ? "" : ", ") + rank_text(r, devices[r]);
        throw std::runtime_error("NCCL all-reduce did not finish within " +
                                 std::to_string(timeout.count()) + " ms on " + late +
                                 "; the communicators are aborted");
      }
      std::this_thread::sleep_for(poll_interval);
    }
  }

  void abort() noexcept {
    for (ncclComm_t comm : comms)
      ncclCommAbort(comm);
    comms.clear();
    aborted = true;
  }
};

nccl_group::nccl_group(std::vector<int> devices, std::chrono::milliseconds timeout) {
  check_device_ordinals(devices, cuda_device_count());
  if (timeout.count() <= 0)
    throw std::invalid_argument("nccl_group: the all-reduce timeout must be positive, not " +
                                std::to_string(timeout.count()) + " ms");
  state_ = std::make_unique<state>(std::move(devices), timeout);
  state_->create();
}

nccl_group::~nccl_group() = default;
nccl_group::nccl_group(nccl_group&&) noexcept = default;
nccl_group& nccl_group::operator=(nccl_group&&) noexcept = default;

int nccl_group::ranks() const {
  return static_cast<int>(state_->ranks());
}

const std::vector<int>& nccl_group::devices() const {
  return state_->devices;
}

void nccl_group::all_reduce_sum(const std::vector<std::vector<std::span<float>>>& per_rank) {
  if (state_ == nullptr)
    throw std::logic_error("nccl_group::all_reduce_sum on a moved-from group");
  state& s = *state_;
  if (s.aborted)
    throw std::runtime_error("nccl_group: the communicators of " + devices_text(s.devices) +
                             " were aborted after an earlier failure; make a new group");
  check_all_reduce_layout(per_rank, s.ranks());
  s.check_buffers_on_devices(per_rank);
  current_device_guard keep;
  try {
    s.issue(per_rank);
    s.wait();
  } catch (...) {
    s.abort();
    throw;
  }
}

} // namespace deepcee::kernels

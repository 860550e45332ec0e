#pragma once

#include "runtime/base/train_config.hpp"

#include <cstdint>
#include <string>

namespace deepcee::runtime {

/// What this machine offers a run: checked before anything large is allocated, so that a
/// size the machine cannot hold is refused in one line instead of dying of bad_alloc
/// half-way, with files written. Read from the machine at the edge (tools/host_probe.hpp) and
/// passed in.
struct host_resources {
  int cores = 1;
  double available_bytes = 0; ///< MemAvailable of /proc/meminfo (free pages where absent)
};

/// Bytes that training `model` on `batch` sequences at once needs at the least. That is
/// weights, gradients and both AdamW moments (4 fp32 values per parameter). Add the
/// activations that the backward pass keeps (model_spec's figures per sample, times the
/// batch), and the batch's token ids and targets. Computed in double: sizes whose int64 figures
/// would overflow give a figure beyond any machine rather than a wrapped one.
double training_bytes(const model_config& model, int64_t batch);

/// The same for evaluation alone (forward, no moments): weights and gradients, which the
/// model allocates with its weights, and what the forward pass keeps.
double evaluation_bytes(const model_config& model, int64_t batch);

/// "" when `needed` bytes fit in `host`; otherwise one line saying what is needed and what
/// is there, `what` naming the need ("training 4 layers ... on batch 32").
std::string memory_problem(double needed, const host_resources& host, const std::string& what);

/// "" when `threads` (0: all cores) is at most the host's cores; otherwise the line to
/// refuse it with. More BLAS threads than cores only slow the run down, and a count in the
/// thousands makes OpenBLAS fail to allocate its buffers.
std::string threads_problem(int threads, const host_resources& host);

/// How a run holds its batch. `deepcee train` runs the whole batch through the model at
/// once. A job spreads it over micro-batches and devices. So only its token ids and one
/// sample's activations are sure to be held at once.
enum class batch_use { whole, spread };

/// Refuses, with an input_error at the line of the key to change (config.origin), a config
/// that this machine cannot run: more threads than cores, or a model and batch that need
/// more memory than is available. Called before anything large is allocated or written.
void require_fits_host(const train_config& config, const host_resources& host, batch_use use);

} // namespace deepcee::runtime

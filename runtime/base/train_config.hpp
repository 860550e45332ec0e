#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace deepcee::runtime {

/// Sizes of a GPT-2-style decoder on bytes.
struct model_config {
  int n_layer = 4;
  int d_model = 128;
  int n_head = 4;
  int context = 128;
  int vocab = 256;
};

struct optimizer_config {
  double lr = 3e-3;          ///< peak learning rate
  double min_lr_ratio = 0.1; ///< cosine decays to lr * min_lr_ratio
  int warmup_steps = 20;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
  double grad_clip = 1.0; ///< global-norm clip; 0 disables
};

struct data_config {
  std::filesystem::path path = "/usr/share/games/fortunes";
  double val_fraction = 0.05; ///< the last fraction of the corpus is validation
};

/// The most sequences in one step. The planner and the simulator work per micro-batch,
/// and a batch with no small divisor has as many micro-batches as sequences: beyond this a
/// plan takes minutes to search and a step longer to simulate.
constexpr int max_batch = 1 << 20;

/// The most validation batches per evaluation: each is a forward pass over a whole batch,
/// and more than this evaluates for longer than any run trains.
constexpr int max_eval_batches = 100000;

/// Where a config's values came from: its file and the line of each key it sets
/// ("batch", "model.n_layer"), so that a check made after loading (the host's memory, its
/// cores, its GPUs) can still point at the line.
struct config_origin {
  std::filesystem::path file;
  std::map<std::string, int64_t, std::less<>> lines;

  /// The line of `key`, 0 when the file does not set it.
  int64_t line(std::string_view key) const {
    auto it = lines.find(key);
    return it == lines.end() ? 0 : it->second;
  }
};

/// Everything `deepcee train` needs, parsed once from TOML and passed down.
struct train_config {
  model_config model;
  optimizer_config optimizer;
  data_config data;
  int batch = 32; ///< sequences per step
  int steps = 1200;
  uint64_t seed = 1;
  std::string device = "cpu"; ///< cpu | cuda
  bool bf16 = false;          ///< CUDA: bf16 matrix products
  int threads = 1;            ///< CPU: OpenBLAS threads
  int eval_every = 200;       ///< steps between validation losses; 0 = only at the end
  int eval_batches = 8;
  int checkpoint_every = 0;           ///< 0 = only at the end
  std::filesystem::path out = "runs"; ///< run directory root (a run names its own subfolder)
  std::string metrics_format = "csv"; ///< csv | jsonl
  config_origin origin;               ///< empty for a config built in code
};

} // namespace deepcee::runtime

#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

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
};

} // namespace deepcee::runtime

#pragma once

#include "kernels/backend/backend.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace deepcee::kernels {

/// A trainable tensor, its gradient (accumulated over micro-batches until the optimizer
/// step) and its Hugging Face GPT-2 name ("transformer.h.0.attn.c_attn.weight").
struct parameter {
  std::string name;
  tensor value;
  tensor grad;
  bool decays = false; ///< AdamW weight decay applies (matrices and embeddings only)
};

enum class init_kind { zeros, ones, normal };

/// Allocates a parameter and initializes it deterministically from (seed, name) alone,
/// so a slice of the model holds exactly the weights of the same layers of the whole.
parameter make_parameter(backend& be, std::string name, std::vector<int64_t> shape, init_kind init,
                         float stddev, uint64_t seed);

/// n normal(0, stddev) samples from a counter-based generator seeded by `key`:
/// the same on every platform and standard library.
std::vector<float> normal_samples(uint64_t key, size_t n, float stddev);

uint64_t hash_name(const std::string& name);

} // namespace deepcee::kernels

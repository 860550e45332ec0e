#pragma once

#include "kernels/backend/tensor.hpp"
#include "kernels/gpt/layernorm.hpp"

#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>

namespace deepcee::kernels {

/// Removes and returns the state a layer saved for `micro` in an earlier op; an op whose
/// earlier op never ran is a scheduling bug, reported with the layer and op names.
template <class State>
State take_state(std::map<int, State>& states, int micro, const std::string& layer,
                 const char* op) {
  auto it = states.find(micro);
  if (it == states.end())
    throw std::logic_error(layer + ": " + op + " of micro-batch " + std::to_string(micro) +
                           " before the op it depends on");
  State state = std::move(it->second);
  states.erase(it);
  return state;
}

inline size_t tensor_bytes(std::initializer_list<const tensor*> ts) {
  size_t n = 0;
  for (const tensor* t : ts)
    n += t->empty() ? 0 : t->bytes();
  return n;
}

inline size_t tensor_bytes(const layernorm::saved& s) {
  return tensor_bytes({&s.x, &s.mean, &s.rstd});
}

} // namespace deepcee::kernels

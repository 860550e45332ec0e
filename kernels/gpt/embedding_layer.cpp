#include "kernels/gpt/embedding_layer.hpp"

#include "kernels/gpt/micro_state.hpp"

namespace deepcee::kernels {

embedding_layer::embedding_layer(backend& be, int vocab, int context, int d_model, uint64_t seed)
    : be_(be), wte_(make_parameter(be, "transformer.wte.weight", {vocab, d_model},
                                   init_kind::normal, 0.02f, seed)),
      wpe_(make_parameter(be, "transformer.wpe.weight", {context, d_model}, init_kind::normal,
                          0.01f, seed)) {}

tensor embedding_layer::forward(int micro, const tensor& tokens) {
  if (tokens.rank() != 2 || tokens.type() != dtype::i32 || tokens.dim(1) > wpe_.value.dim(0))
    throw std::invalid_argument("embedding: tokens have shape " + shape_string(tokens.shape()) +
                                ", expected [batch, T <= " + std::to_string(wpe_.value.dim(0)) +
                                "] of i32");
  int B = static_cast<int>(tokens.dim(0)), T = static_cast<int>(tokens.dim(1));
  int C = static_cast<int>(wte_.value.dim(1));
  tensor out = be_.alloc({B, T, C});
  be_.embedding_forward(out.f32(), tokens.i32(), wte_.value.f32(), wpe_.value.f32(), B, T, C);
  tokens_[micro] = tokens;
  return out;
}

tensor embedding_layer::backward_input(int micro, const tensor& dy) {
  weight_states_[micro] = {take_state(tokens_, micro, name(), "B"), dy};
  return {};
}

void embedding_layer::backward_weight(int micro) {
  weight_state w = take_state(weight_states_, micro, name(), "W");
  be_.embedding_backward(wte_.grad.f32(), wpe_.grad.f32(), w.dy.f32(), w.tokens.i32(),
                         static_cast<int>(w.tokens.dim(0)), static_cast<int>(w.tokens.dim(1)),
                         static_cast<int>(wte_.value.dim(1)));
}

void embedding_layer::forget(int micro) {
  tokens_.erase(micro);
  weight_states_.erase(micro);
}

size_t embedding_layer::saved_bytes() const {
  size_t n = 0;
  for (const auto& [_, t] : tokens_)
    n += t.bytes();
  for (const auto& [_, w] : weight_states_)
    n += tensor_bytes({&w.tokens, &w.dy});
  return n;
}

} // namespace deepcee::kernels

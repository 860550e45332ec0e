#include "kernels/gpt/checkpoint.hpp"

#include "runtime/errors.hpp"
#include "runtime/safetensors.hpp"

namespace deepcee::kernels {
namespace {

const std::string exp_avg = "optimizer.exp_avg.";
const std::string exp_avg_sq = "optimizer.exp_avg_sq.";

runtime::named_tensor to_named(backend& be, const std::string& name, const tensor& t) {
  return runtime::named_tensor::f32(name, t.shape(), be.to_host<float>(t));
}

std::map<std::string, std::string> metadata(const checkpoint_info& info) {
  return {{"format", "deepcee-checkpoint-1"},
          {"step", std::to_string(info.step)},
          {"seed", std::to_string(info.seed)},
          {"n_layer", std::to_string(info.model.n_layer)},
          {"d_model", std::to_string(info.model.d_model)},
          {"n_head", std::to_string(info.model.n_head)},
          {"context", std::to_string(info.model.context)},
          {"vocab", std::to_string(info.model.vocab)}};
}

checkpoint_info parse_info(const std::filesystem::path& path,
                           const std::map<std::string, std::string>& meta) {
  auto number = [&](const std::string& key) -> int64_t {
    auto it = meta.find(key);
    if (it == meta.end())
      runtime::fail_input(path, 0, "not a deepcee checkpoint: metadata has no '" + key + "'");
    try {
      return std::stoll(it->second);
    } catch (const std::exception&) {
      runtime::fail_input(path, 0, "metadata '" + key + "' is not a number: " + it->second);
    }
  };
  checkpoint_info info;
  info.step = static_cast<int>(number("step"));
  info.seed = static_cast<uint64_t>(number("seed"));
  info.model.n_layer = static_cast<int>(number("n_layer"));
  info.model.d_model = static_cast<int>(number("d_model"));
  info.model.n_head = static_cast<int>(number("n_head"));
  info.model.context = static_cast<int>(number("context"));
  info.model.vocab = static_cast<int>(number("vocab"));
  return info;
}

} // namespace

void save_checkpoint(const std::filesystem::path& path, backend& be, gpt_model& model,
                     adamw* optimizer, const checkpoint_info& info) {
  std::vector<runtime::named_tensor> tensors;
  for (parameter* p : model.parameters())
    tensors.push_back(to_named(be, p->name, p->value));
  if (optimizer != nullptr) {
    const auto& params = optimizer->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      tensors.push_back(to_named(be, exp_avg + params[i]->name, optimizer->first_moments()[i]));
      tensors.push_back(to_named(be, exp_avg_sq + params[i]->name, optimizer->second_moments()[i]));
    }
  }
  runtime::write_safetensors(path, tensors, metadata(info));
}

checkpoint_info read_checkpoint_info(const std::filesystem::path& path) {
  return parse_info(path, runtime::read_safetensors(path).metadata);
}

checkpoint_info load_checkpoint(const std::filesystem::path& path, backend& be, gpt_model& model,
                                adamw* optimizer) {
  runtime::safetensors_file file = runtime::read_safetensors(path);
  checkpoint_info info = parse_info(path, file.metadata);

  // Match every destination first, so that a bad file changes nothing.
  std::vector<std::pair<const runtime::named_tensor*, tensor*>> copies;
  auto match = [&](const std::string& name, tensor& dst) {
    const runtime::named_tensor* src = file.find(name);
    if (src == nullptr)
      runtime::fail_input(path, 0, "checkpoint has no tensor '" + name + "'");
    if (src->dtype != "F32" || src->shape != dst.shape())
      runtime::fail_input(path, 0,
                          "tensor '" + name + "' is " + src->dtype + " " +
                              shape_string(src->shape) + ", the model needs F32 " +
                              shape_string(dst.shape()));
    copies.emplace_back(src, &dst);
  };
  for (parameter* p : model.parameters())
    match(p->name, p->value);
  if (optimizer != nullptr) {
    const auto& params = optimizer->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      match(exp_avg + params[i]->name, optimizer->first_moments()[i]);
      match(exp_avg_sq + params[i]->name, optimizer->second_moments()[i]);
    }
  }
  for (auto& [src, dst] : copies)
    be.upload(*dst, src->data.data(), src->data.size());
  return info;
}

} // namespace deepcee::kernels

#include "runtime/step/gradient_exchange.hpp"

#include "runtime/base/model_spec.hpp"

#include <algorithm>
#include <stdexcept>

namespace deepcee::runtime {

size_t gradient_size(const model_config& model, int first, int last) {
  const auto spec = make_model_spec(model);
  size_t n = 0;
  for (int l = first; l < last; ++l)
    n += static_cast<size_t>(spec.layers.at(static_cast<size_t>(l)).params);
  return n;
}

std::vector<share_slice> share_slices(const plan& p, int pipeline, layer_range layers) {
  std::vector<share_slice> out;
  for (size_t q = 0; q < p.pipelines.size(); ++q) {
    if (static_cast<int>(q) == pipeline)
      continue;
    for (size_t t = 0; t < p.pipelines[q].stages.size(); ++t) {
      const auto& other = p.pipelines[q].stages[t];
      const layer_range both{std::max(layers.first, other.first_layer),
                             std::min(layers.last, other.last_layer)};
      if (both.first >= both.last)
        continue;
      out.push_back({static_cast<int>(q), static_cast<int>(t), both,
                     gradient_size(p.model, layers.first, both.first),
                     gradient_size(p.model, layers.first, both.last)});
    }
  }
  return out;
}

std::string share_refusal(const plan& p, int pipeline, int64_t step, layer_range layers,
                          const share_header& share) {
  const auto what = "gradient share of step " + std::to_string(share.step) + " layers [" +
                    std::to_string(share.layers.first) + ", " + std::to_string(share.layers.last) +
                    ") from pipeline " + std::to_string(share.pipeline);
  if (share.pipeline == pipeline || share.pipeline < 0 ||
      share.pipeline >= static_cast<int>(p.pipelines.size()))
    return what + " comes from no other pipeline";
  if (share.step < step || share.step > step + 1)
    return what + " belongs to no step of this stage (step " + std::to_string(step) + ")";
  if (share.layers.first < layers.first || share.layers.last > layers.last)
    return what + " is outside this stage's layers [" + std::to_string(layers.first) + ", " +
           std::to_string(layers.last) + ")";
  const size_t want = gradient_size(p.model, share.layers.first, share.layers.last);
  if (share.values != want)
    return what + " has " + std::to_string(share.values) + " values, expected " +
           std::to_string(want);
  return {};
}

bool shares_complete(int pipelines, layer_range layers, const std::vector<layer_range>& received) {
  int covered = 0;
  for (const auto& r : received)
    covered += r.size();
  return covered >= (pipelines - 1) * layers.size();
}

std::vector<float> sum_over_pipelines(const model_config& model, int pipelines, int own_pipeline,
                                      layer_range layers, std::vector<float> own,
                                      const std::vector<share_values>& shares) {
  std::vector<std::vector<float>> by_pipeline(static_cast<size_t>(pipelines));
  const size_t n = own.size();
  by_pipeline.at(static_cast<size_t>(own_pipeline)) = std::move(own);
  for (const auto& s : shares) {
    auto& dst = by_pipeline.at(static_cast<size_t>(s.pipeline));
    dst.resize(n, 0.0f);
    const size_t at = gradient_size(model, layers.first, s.layers.first);
    if (at + s.values.size() > n)
      throw std::invalid_argument("gradient share of layers [" + std::to_string(s.layers.first) +
                                  ", " + std::to_string(s.layers.last) + ") does not fit");
    std::copy(s.values.begin(), s.values.end(), dst.begin() + static_cast<ptrdiff_t>(at));
  }
  std::vector<float> total = std::move(by_pipeline[0]);
  for (size_t q = 1; q < by_pipeline.size(); ++q)
    for (size_t i = 0; i < n; ++i)
      total[i] += by_pipeline[q][i];
  return total;
}

} // namespace deepcee::runtime

// Forward + B + W throughput per layer kind and for the whole model, beside PyTorch's
// for the same model and batch (bench/torch_gpt.py), printed as a table. Usage:
//   build/bench/bench_gpt                         # small CPU model, one thread
//   build/bench/bench_gpt --device cuda --layers 12 --d-model 768 --heads 12
//       --context 1024 --batch 8                  # GPT-2 124M on a GPU (one line)
#include "kernels/device/make_backend.hpp"
#include "kernels/gpt/embedding_layer.hpp"
#include "kernels/gpt/gpt_model.hpp"
#include "kernels/gpt/head_layer.hpp"
#include "kernels/gpt/transformer_block.hpp"
#include "kernels/optim/adamw.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>

using namespace deepcee;
using namespace deepcee::kernels;

namespace {

struct options {
  runtime::model_config model;
  int batch = 32, steps = 5, threads = 1;
  std::string device = "cpu";
  bool bf16 = false;
  std::string torch = "bench/torch_gpt.py";
  std::string python = "/usr/bin/python3"; ///< Debian's, where python3-torch installs
  bool no_torch = false;
};

double seconds_of(backend& be, const std::function<void()>& f) {
  be.synchronize();
  auto t0 = std::chrono::steady_clock::now();
  f();
  be.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

tensor random_tokens(backend& be, int B, int T, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> v(static_cast<size_t>(B) * T);
  for (auto& x : v)
    x = static_cast<int32_t>(rng() % 256);
  return be.from_host(v, {B, T});
}

/// Mean F, B and W seconds of one layer over `steps` micro-batches (after a warm-up).
std::array<double, 3> time_layer(backend& be, layer& l, const tensor& input, const tensor& dy,
                                 int steps, const std::function<void(int)>& before_forward) {
  std::array<double, 3> total{};
  for (int i = -1; i < steps; ++i) {
    std::array<double, 3> t{};
    t[0] = seconds_of(be, [&] {
      before_forward(i);
      l.forward(i, input);
    });
    t[1] = seconds_of(be, [&] { l.backward_input(i, dy); });
    t[2] = seconds_of(be, [&] { l.backward_weight(i); });
    if (i >= 0)
      for (int k = 0; k < 3; ++k)
        total[k] += t[k] / steps;
  }
  return total;
}

/// PyTorch's tokens/s for the same model, batch and precision, or 0 with its output's last
/// line in `why`.
double torch_tokens_per_s(const options& o, std::string& why) {
  std::string cmd =
      fmt::format("{} {} --layers {} --d-model {} --heads {} --context {} --batch {} --steps {} "
                  "--threads {} --device {}{} 2>&1",
                  o.python, o.torch, o.model.n_layer, o.model.d_model, o.model.n_head,
                  o.model.context, o.batch, o.steps, o.threads, o.device, o.bf16 ? " --bf16" : "");
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  char line[1024];
  double v = 0;
  while (pipe && std::fgets(line, sizeof line, pipe.get()))
    if (std::sscanf(line, "tokens_per_s=%lf", &v) != 1)
      why = line;
  if (!why.empty() && why.back() == '\n')
    why.pop_back();
  return v;
}

void add_options(CLI::App& app, options& o) {
  app.add_option("--layers", o.model.n_layer)->capture_default_str();
  app.add_option("--d-model", o.model.d_model)->capture_default_str();
  app.add_option("--heads", o.model.n_head)->capture_default_str();
  app.add_option("--context", o.model.context)->capture_default_str();
  app.add_option("--batch", o.batch)->capture_default_str();
  app.add_option("--steps", o.steps, "Timed steps")->capture_default_str();
  app.add_option("--threads", o.threads, "CPU threads (OpenBLAS and PyTorch)")
      ->capture_default_str();
  app.add_option("--device", o.device, "cpu or cuda")->capture_default_str();
  app.add_flag("--bf16", o.bf16, "CUDA: bf16 matrix products");
  app.add_option("--torch", o.torch, "PyTorch reference script")->capture_default_str();
  app.add_option("--python", o.python, "Python with PyTorch")->capture_default_str();
  app.add_flag("--no-torch", o.no_torch, "Skip the PyTorch reference");
}

struct model_timing {
  std::array<double, 3> parts{}; ///< F, B and W seconds
  double step_s = 0;             ///< F+B+W and the AdamW step
};

/// The whole model as `deepcee train` runs it: F, B, W, clip and AdamW step.
model_timing time_model(backend& be, const options& o, const tensor& tokens_t,
                        const tensor& targets_t) {
  const double tokens = static_cast<double>(o.batch) * o.model.context;
  gpt_model model(be, o.model, 1);
  runtime::optimizer_config oc;
  adamw opt(be, model.parameters(), oc);
  model_timing out;
  for (int i = -1; i < o.steps; ++i) {
    model.zero_grad();
    double f = seconds_of(be, [&] { model.forward(0, tokens_t, &targets_t, 1.0f / tokens); });
    double b = seconds_of(be, [&] { model.backward_input(0, {}); });
    double w = seconds_of(be, [&] { model.backward_weight(0); });
    double s = seconds_of(be, [&] { opt.step(1e-4f, i + 2, std::sqrt(opt.grad_sum_squares())); });
    if (i >= 0) {
      out.parts[0] += f / o.steps;
      out.parts[1] += b / o.steps;
      out.parts[2] += w / o.steps;
      out.step_s += (f + b + w + s) / o.steps;
    }
  }
  return out;
}

void print_torch_comparison(const options& o, double tokens_per_s) {
  std::string why;
  double torch = torch_tokens_per_s(o, why);
  if (torch > 0)
    fmt::print("PyTorch {}{} same model and batch: {:.0f} tokens/s -> deepcee / PyTorch = {:.2f}\n",
               o.device, o.bf16 ? " bf16 autocast" : "", torch, tokens_per_s / torch);
  else
    fmt::print("PyTorch reference unavailable ({} {}: {}); on a CPU machine Debian's python3-torch "
               "serves (DEEPCEE_WITH_TORCH=1 ./setup.sh), on a GPU one --python must name a "
               "PyTorch built with CUDA\n",
               o.python, o.torch, why.empty() ? "no output" : why);
}

} // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{"bench_gpt: forward+B+W tokens/s per layer kind and whole model vs PyTorch"};
  add_options(app, o);
  CLI11_PARSE(app, argc, argv);

  backend_options bo;
  bo.kind = parse_backend_kind(o.device);
  bo.threads = o.threads;
  bo.precision = o.bf16 ? matmul_precision::bf16 : matmul_precision::fp32;
  std::unique_ptr<backend> be;
  try {
    be = make_backend(bo);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpt: %s\n", e.what());
    return 2;
  }
  const auto& m = o.model;
  const int B = o.batch, T = m.context, C = m.d_model;
  const double tokens = static_cast<double>(B) * T;
  fmt::print("deepcee bench_gpt on {}: {} layers, d_model {}, {} heads, context {}, batch {}\n\n",
             be->name(), m.n_layer, C, m.n_head, T, B);
  fmt::print("| {:<16} | {:>9} | {:>9} | {:>9} | {:>10} | {:>12} |\n", "part", "F ms", "B ms",
             "W ms", "F+B+W ms", "tokens/s");
  fmt::print("|{:-<18}|{:->11}|{:->11}|{:->11}|{:->12}|{:->14}|\n", "", "", "", "", "", "");
  auto row = [&](const std::string& name, std::array<double, 3> t) {
    double sum = t[0] + t[1] + t[2];
    fmt::print("| {:<16} | {:>9.2f} | {:>9.2f} | {:>9.2f} | {:>10.2f} | {:>12.0f} |\n", name,
               t[0] * 1e3, t[1] * 1e3, t[2] * 1e3, sum * 1e3, tokens / sum);
  };

  tensor tokens_t = random_tokens(*be, B, T, 1), targets_t = random_tokens(*be, B, T, 2);
  tensor act = be->zeros({B, T, C});
  {
    embedding_layer emb(*be, m.vocab, T, C, 1);
    row("embedding", time_layer(*be, emb, tokens_t, act, o.steps, [](int) {}));
  }
  {
    transformer_block block(*be, 0, C, m.n_head, m.n_layer, 1);
    row("block", time_layer(*be, block, act, act, o.steps, [](int) {}));
  }
  {
    head_layer head(*be, m.vocab, C, 1);
    row("head", time_layer(*be, head, act, {}, o.steps,
                           [&](int i) { head.set_targets(i, targets_t, 1.0f / tokens); }));
  }

  const model_timing whole = time_model(*be, o, tokens_t, targets_t);
  row("whole model", whole.parts);
  fmt::print("\ntrain step (F+B+W+AdamW): {:.1f} ms, {:.0f} tokens/s\n", whole.step_s * 1e3,
             tokens / whole.step_s);
  if (!o.no_torch)
    print_torch_comparison(o, tokens / whole.step_s);
  return 0;
}

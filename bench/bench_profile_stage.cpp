// The profile's fidelity: what it predicts for a stage's ops, beside what the runtime's
// stage op path takes. Both run in one process, interleaved. The stages are the small
// model's two stages of the fidelity bench (layers [0, 3) and [3, 6)). The prediction is
// the profile's per-layer F, B and W summed over each stage's layers (kernels/profile
// time_layer). The runtime's side is the stage's worker (kernels/train stage_worker, what a
// device actor runs). It runs a GPipe-like order of micro-batches: every F, then B and W of
// each. Medians of each op; thread CPU time beside the wall time shows whether the process
// was preempted. Usage:
//   build/bench/bench_profile_stage [MICRO_BATCH] [MICRO_BATCHES] [ROUNDS]
#include "kernels/device/make_backend.hpp"
#include "kernels/profile/layer_timing.hpp"
#include "kernels/train/stage_worker.hpp"
#include "runtime/base/statistics.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>

using namespace deepcee;
using namespace deepcee::kernels;

namespace {

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double wall_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct op_times {
  std::vector<double> wall, cpu;
  void add(double w, double c) {
    wall.push_back(w);
    cpu.push_back(c);
  }
};

} // namespace

int main(int argc, char** argv) {
  const int b = argc > 1 ? std::atoi(argv[1]) : 2;
  const int micros = argc > 2 ? std::atoi(argv[2]) : 4;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  if (b < 1 || micros < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: bench_profile_stage [MICRO_BATCH] [MICRO_BATCHES] [ROUNDS]\n");
    return 2;
  }
  auto be = make_backend({});
  const runtime::model_config m; // the small model
  std::printf("micro-batch %d, %d micro-batches; ms per op (stage 0: embedding + 2 blocks, "
              "stage 1: 2 blocks + head)\n",
              b, micros);
  std::printf("%-8s %-8s %8s %8s %8s %8s %8s %8s\n", "round", "side", "s0 F", "s0 B", "s0 W",
              "s1 F", "s1 B", "s1 W");
  for (int round = 0; round < rounds; ++round) {
    const layer_timing e = time_layer(*be, m, runtime::layer_kind::embedding, b);
    const layer_timing k = time_layer(*be, m, runtime::layer_kind::block, b);
    const layer_timing h = time_layer(*be, m, runtime::layer_kind::head, b);
    std::printf("%-8d %-8s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", round, "profile",
                (e.f_s + 2 * k.f_s) * 1e3, (e.b_s + 2 * k.b_s) * 1e3, (e.w_s + 2 * k.w_s) * 1e3,
                (h.f_s + 2 * k.f_s) * 1e3, (h.b_s + 2 * k.b_s) * 1e3, (h.w_s + 2 * k.w_s) * 1e3);
    double row[2][6] = {};
    for (int s = 0; s < 2; ++s) {
      stage_worker w(*be, m, s * 3, s * 3 + 3, 1, {});
      std::mt19937 rng(1);
      std::vector<int32_t> tok(static_cast<size_t>(b) * static_cast<size_t>(m.context));
      for (auto& x : tok)
        x = static_cast<int32_t>(rng() % static_cast<unsigned>(m.vocab));
      std::vector<float> act(tok.size() * static_cast<size_t>(m.d_model));
      std::normal_distribution<float> pick;
      for (auto& x : act)
        x = pick(rng);
      const tensor tokens = be->from_host(tok, {b, m.context});
      const tensor values = be->from_host(act, {b, m.context, m.d_model});
      op_times f, bw, ww;
      const float scale = 1.0f / static_cast<float>(b * m.context * micros);
      for (int step = 0; step < 6; ++step) { // step 0 warms up
        for (int i = 0; i < micros; ++i) {
          const double t0 = wall_s(), c0 = thread_cpu_s();
          w.forward(i, s == 0 ? tokens : values, s == 1 ? &tokens : nullptr, scale);
          if (step > 0)
            f.add(wall_s() - t0, thread_cpu_s() - c0);
        }
        for (int i = 0; i < micros; ++i) {
          double t0 = wall_s(), c0 = thread_cpu_s();
          w.backward_input(i, values);
          if (step > 0)
            bw.add(wall_s() - t0, thread_cpu_s() - c0);
          t0 = wall_s();
          c0 = thread_cpu_s();
          w.backward_weight(i);
          if (step > 0)
            ww.add(wall_s() - t0, thread_cpu_s() - c0);
        }
      }
      const op_times* ops[3] = {&f, &bw, &ww};
      for (int o = 0; o < 3; ++o) {
        row[0][s * 3 + o] = runtime::median(ops[o]->wall) * 1e3;
        row[1][s * 3 + o] = runtime::median(ops[o]->cpu) * 1e3;
      }
    }
    for (int r = 0; r < 2; ++r)
      std::printf("%-8d %-8s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", round,
                  r == 0 ? "stage" : "(cpu)", row[r][0], row[r][1], row[r][2], row[r][3], row[r][4],
                  row[r][5]);
  }
  return 0;
}

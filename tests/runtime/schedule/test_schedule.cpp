#include "runtime/schedule/schedule.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace deepcee::runtime;

namespace {

const std::vector<schedule_kind> fixed_kinds = {schedule_kind::gpipe, schedule_kind::one_f_one_b,
                                                schedule_kind::zb_h1, schedule_kind::zb_h2};

/// Micro-batch counts below, at and well above the stage count.
std::vector<int> micro_counts(int p) {
  std::vector<int> ms = {1, 2, 3, p - 1, p, p + 1, 2 * p - 1, 2 * p, 2 * p + 3, 4 * p, 32};
  ms.erase(std::remove_if(ms.begin(), ms.end(), [](int m) { return m < 1; }), ms.end());
  std::sort(ms.begin(), ms.end());
  ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
  return ms;
}

const std::vector<int> stage_counts = {1, 2, 3, 4, 5, 8};

int count(const std::vector<schedule_op>& ops, op_kind kind, int micro) {
  return static_cast<int>(std::count(ops.begin(), ops.end(), schedule_op{kind, micro}));
}

/// Message of the std::invalid_argument that `f` throws, or "" when it throws none.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::vector<stage_cost> with_limit(std::vector<stage_cost> costs, double limit) {
  for (auto& c : costs)
    c.memory_limit = limit;
  return costs;
}

} // namespace

BOOST_AUTO_TEST_SUITE(schedule)

BOOST_AUTO_TEST_CASE(kind_names_round_trip) {
  for (auto kind : {schedule_kind::gpipe, schedule_kind::one_f_one_b, schedule_kind::zb_h1,
                    schedule_kind::zb_h2, schedule_kind::greedy})
    BOOST_TEST((parse_schedule_kind(to_string(kind)) == kind));
  BOOST_TEST(to_string(schedule_kind::one_f_one_b) == "1f1b");
  BOOST_TEST(to_string(schedule_kind::zb_h1) == "zb-h1");
  BOOST_TEST(error_of([] { parse_schedule_kind("zb-h3"); }).find("zb-h3") != std::string::npos);
  BOOST_CHECK_THROW(make_schedule(schedule_kind::greedy, 4, 8), std::invalid_argument);
  BOOST_CHECK_THROW(make_schedule(schedule_kind::zb_h1, 0, 8), std::invalid_argument);
  BOOST_CHECK_THROW(make_schedule(schedule_kind::zb_h1, 4, 0), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(every_op_exactly_once_and_valid) {
  for (auto kind : fixed_kinds)
    for (int p : stage_counts)
      for (int m : micro_counts(p)) {
        BOOST_TEST_CONTEXT(to_string(kind) << " p=" << p << " m=" << m) {
          const auto s = make_schedule(kind, p, m);
          BOOST_TEST(s.stage_count() == p);
          BOOST_CHECK_NO_THROW(check_schedule(s, m));
          for (const auto& ops : s.stages) {
            BOOST_TEST(ops.size() == 3u * static_cast<size_t>(m));
            for (int i = 0; i < m; ++i)
              for (auto k : {op_kind::forward, op_kind::backward_input, op_kind::backward_weight})
                BOOST_TEST(count(ops, k, i) == 1);
            if (s.fused_backward)
              for (size_t k = 0; k < ops.size(); ++k)
                if (ops[k].kind == op_kind::backward_input)
                  BOOST_TEST(
                      (ops.at(k + 1) == schedule_op{op_kind::backward_weight, ops[k].micro}));
          }
        }
      }
}

BOOST_AUTO_TEST_CASE(one_f_one_b_and_gpipe_bubble_is_exact) {
  // Equal stages, T_F = T_B = T_W, no communication, fused B+W: (p-1)/(m+p-1).
  for (auto kind : {schedule_kind::one_f_one_b, schedule_kind::gpipe})
    for (int p : stage_counts)
      for (int m : micro_counts(p)) {
        BOOST_TEST_CONTEXT(to_string(kind) << " p=" << p << " m=" << m) {
          const auto t = time_schedule(make_schedule(kind, p, m), uniform_costs(p));
          const double expected = double(p - 1) / double(m + p - 1);
          BOOST_TEST(t.bubble_ratio == expected, boost::test_tools::tolerance(1e-12));
          BOOST_TEST(t.steady_bubble_ratio == expected, boost::test_tools::tolerance(1e-12));
          BOOST_TEST(t.makespan == 3.0 * (m + p - 1), boost::test_tools::tolerance(1e-12));
        }
      }
}

BOOST_AUTO_TEST_CASE(zb_h1_bubble_is_the_papers) {
  // The paper: ZB-H1 idles (p-1)(T_F + T_B - T_W) per stage, against 1F1B's
  // (p-1)(T_F + T_B + T_W); never less than (p-1) T_F, the wait for the first F.
  for (int p : stage_counts)
    for (int m : micro_counts(p)) {
      if (m < p)
        continue; // too few micro-batches for the steady phase the formula assumes
      for (double w : {0.5, 1.0, 1.5}) {
        BOOST_TEST_CONTEXT("p=" << p << " m=" << m << " T_W=" << w) {
          const auto costs = uniform_costs(p, 1.0, 1.0, w);
          const auto t = time_schedule(make_schedule(schedule_kind::zb_h1, p, m), costs);
          const double idle = (p - 1) * std::max(1.0, 2.0 - w);
          BOOST_TEST(t.makespan == m * (2.0 + w) + idle, boost::test_tools::tolerance(1e-12));
        }
      }
      const auto costs = uniform_costs(p);
      const auto h1 = time_schedule(make_schedule(schedule_kind::zb_h1, p, m), costs);
      const auto fb = time_schedule(make_schedule(schedule_kind::one_f_one_b, p, m), costs);
      BOOST_TEST_CONTEXT("p=" << p << " m=" << m) {
        BOOST_TEST(h1.bubble_ratio == double(p - 1) / double(3 * m + p - 1),
                   boost::test_tools::tolerance(1e-12));
        // "About a third": (m+p-1)/(3m+p-1) of 1F1B, below 3/7 once m >= 2p.
        if (p > 1 && m >= 2 * p)
          BOOST_TEST(h1.bubble_ratio <= 0.43 * fb.bubble_ratio);
      }
    }
}

BOOST_AUTO_TEST_CASE(zb_h1_beats_one_f_one_b_for_any_m) {
  for (int p : stage_counts)
    for (int m : micro_counts(p)) {
      const auto costs = uniform_costs(p);
      const auto h1 = time_schedule(make_schedule(schedule_kind::zb_h1, p, m), costs);
      const auto fb = time_schedule(make_schedule(schedule_kind::one_f_one_b, p, m), costs);
      BOOST_TEST_CONTEXT("p=" << p << " m=" << m) {
        BOOST_TEST(h1.makespan <= fb.makespan);
        if (p > 1)
          BOOST_TEST(h1.makespan < fb.makespan);
      }
    }
}

BOOST_AUTO_TEST_CASE(zb_h2_is_zero_bubble_in_steady_state) {
  // ZB-H2's gain shows once steps overlap (the paper's optimizer post-validation): every
  // stage runs without a gap from its first op to its last. A synchronous step still pays
  // the (p-1) T_F wait for the first F, so there it is as good as ZB-H1, not better.
  for (int p : stage_counts)
    for (int m : micro_counts(p)) {
      const auto costs = uniform_costs(p);
      const auto h2 = time_schedule(make_schedule(schedule_kind::zb_h2, p, m), costs);
      const auto h1 = time_schedule(make_schedule(schedule_kind::zb_h1, p, m), costs);
      BOOST_TEST_CONTEXT("p=" << p << " m=" << m) {
        BOOST_TEST(h2.makespan <= h1.makespan);
        BOOST_TEST(h2.steady_bubble_ratio <= h1.steady_bubble_ratio + 1e-12);
        if (m >= 2 * p - 1)
          BOOST_TEST(h2.steady_bubble_ratio == 0.0, boost::test_tools::tolerance(1e-12));
      }
    }
}

BOOST_AUTO_TEST_CASE(peak_in_flight_bounds) {
  // Counted as micro-batches with F done and W not done (the stricter count; F done and B not
  // done is never larger).
  for (int p : stage_counts)
    for (int m : micro_counts(p)) {
      BOOST_TEST_CONTEXT("p=" << p << " m=" << m) {
        const auto costs = uniform_costs(p);
        auto peak = [&](schedule_kind kind) {
          const auto t = time_schedule(make_schedule(kind, p, m), costs);
          BOOST_TEST(t.max_peak_in_flight_fb() <= t.max_peak_in_flight_fw());
          return t.max_peak_in_flight_fw();
        };
        BOOST_TEST(peak(schedule_kind::gpipe) == m);
        BOOST_TEST(peak(schedule_kind::one_f_one_b) == std::min(p, m));
        BOOST_TEST(peak(schedule_kind::zb_h1) <= p);
        BOOST_TEST(peak(schedule_kind::zb_h2) <= 2 * p - 1);
        // 1F1B: stage s holds p - s.
        const auto t = time_schedule(make_schedule(schedule_kind::one_f_one_b, p, m), costs);
        for (int s = 0; s < p; ++s)
          BOOST_TEST(t.peak_in_flight_fw[static_cast<size_t>(s)] == std::min(p - s, m));
      }
    }
}

BOOST_AUTO_TEST_CASE(timing_respects_dependencies_and_communication) {
  const int p = 4;
  const int m = 8;
  auto costs = uniform_costs(p, 1.0, 2.0, 0.5);
  for (auto& c : costs)
    c.comm_to_next = 0.25;
  for (auto kind : fixed_kinds) {
    const auto s = make_schedule(kind, p, m);
    const auto t = time_schedule(s, costs);
    BOOST_TEST_CONTEXT(to_string(kind)) {
      BOOST_TEST(t.makespan > time_schedule(s, uniform_costs(p, 1.0, 2.0, 0.5)).makespan);
      for (int st = 0; st < p; ++st) {
        const auto& ops = t.ops[static_cast<size_t>(st)];
        for (size_t k = 1; k < ops.size(); ++k)
          BOOST_TEST(ops[k].start >= ops[k - 1].end); // one op at a time, in list order
        BOOST_TEST(t.busy[static_cast<size_t>(st)] == m * 3.5, boost::test_tools::tolerance(1e-12));
      }
      // F(i, s) starts no earlier than F(i, s-1) ends plus the transfer.
      auto start_of = [&](int st, op_kind kind, int i) {
        for (const auto& o : t.ops[static_cast<size_t>(st)])
          if (o.op == schedule_op{kind, i})
            return o;
        throw std::logic_error("missing op");
      };
      for (int st = 1; st < p; ++st)
        for (int i = 0; i < m; ++i)
          BOOST_TEST(start_of(st, op_kind::forward, i).start >=
                     start_of(st - 1, op_kind::forward, i).end + 0.25 - 1e-12);
    }
  }
}

BOOST_AUTO_TEST_CASE(peak_bytes_count_both_kinds) {
  const int p = 2;
  auto costs = uniform_costs(p);
  for (auto& c : costs) {
    c.activation_bytes = 100.0;
    c.weight_grad_bytes = 10.0;
  }
  const auto t = time_schedule(make_schedule(schedule_kind::gpipe, p, 4), costs);
  BOOST_TEST(t.peak_bytes[0] == 400.0); // all four activations before the first B
  const auto h2 = time_schedule(make_schedule(schedule_kind::zb_h2, p, 8), costs);
  for (int s = 0; s < p; ++s)
    BOOST_TEST(h2.peak_bytes[static_cast<size_t>(s)] <= 100.0 * (2 * p - 1));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(schedule_check)

BOOST_AUTO_TEST_CASE(rejects_missing_duplicated_and_out_of_range_ops) {
  const int m = 4;
  auto s = make_schedule(schedule_kind::zb_h1, 3, m);
  auto missing = s;
  auto& ops = missing.stages[1];
  ops.erase(std::find(ops.begin(), ops.end(), schedule_op{op_kind::backward_weight, 2}));
  const auto what = error_of([&] { check_schedule(missing, m); });
  BOOST_TEST(what.find("stage 1") != std::string::npos);
  BOOST_TEST(what.find("W2") != std::string::npos);
  BOOST_TEST(what.find("missing") != std::string::npos);

  auto duplicated = s;
  duplicated.stages[2].push_back({op_kind::forward, 0});
  BOOST_TEST(error_of([&] { check_schedule(duplicated, m); }).find("stage 2: F0") !=
             std::string::npos);

  auto out_of_range = s;
  out_of_range.stages[0][0].micro = m;
  BOOST_TEST(error_of([&] { check_schedule(out_of_range, m); }).find("stage 0") !=
             std::string::npos);

  BOOST_CHECK_THROW(check_schedule(pipeline_schedule{}, m), std::invalid_argument);
  BOOST_CHECK_THROW(time_schedule(s, uniform_costs(2)), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(rejects_deadlocks) {
  const int m = 4;
  // B before its own F on the last stage.
  auto s = make_schedule(schedule_kind::one_f_one_b, 3, m);
  s.fused_backward = false;
  auto& last = s.stages[2];
  std::swap(last[0], last[1]); // F0 B0 -> B0 F0
  const auto what = error_of([&] { check_schedule(s, m); });
  BOOST_TEST(what.find("stage 2: B0") != std::string::npos);
  BOOST_TEST(what.find("deadlock") != std::string::npos);

  // A cycle across stages: stage 0 waits for B1 before running F1, which B1 needs.
  auto cross = make_schedule(schedule_kind::zb_h1, 2, 2);
  auto& first = cross.stages[0];
  first = {{op_kind::forward, 0}, {op_kind::backward_input, 0},  {op_kind::backward_input, 1},
           {op_kind::forward, 1}, {op_kind::backward_weight, 0}, {op_kind::backward_weight, 1}};
  BOOST_TEST(error_of([&] { check_schedule(cross, 2); }).find("deadlock") != std::string::npos);

  // W before its B on the same stage.
  auto early_w = make_schedule(schedule_kind::zb_h1, 2, 2);
  auto& ops = early_w.stages[0];
  const auto w = std::find(ops.begin(), ops.end(), schedule_op{op_kind::backward_weight, 1});
  const auto b = std::find(ops.begin(), ops.end(), schedule_op{op_kind::backward_input, 1});
  std::iter_swap(w, b);
  BOOST_CHECK_THROW(check_schedule(early_w, 2), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(rejects_a_split_fused_backward) {
  auto s = make_schedule(schedule_kind::one_f_one_b, 2, 3);
  auto& ops = s.stages[1];
  const auto w = std::find(ops.begin(), ops.end(), schedule_op{op_kind::backward_weight, 0});
  std::rotate(w, w + 1, ops.end()); // W0 moved to the end
  BOOST_TEST(error_of([&] { check_schedule(s, 3); }).find("fused") != std::string::npos);
  s.fused_backward = false; // the same order is valid when B and W are separate kernels
  BOOST_CHECK_NO_THROW(check_schedule(s, 3));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(greedy_schedule)

BOOST_AUTO_TEST_CASE(matches_zb_h1_on_equal_stages) {
  greedy_options list_only;
  list_only.compare_with_fixed = false;
  for (int p : {1, 2, 3, 4, 8})
    for (int m : {1, 2, 3, 4, 8, 16, 32}) {
      BOOST_TEST_CONTEXT("p=" << p << " m=" << m) {
        const auto costs = with_limit(uniform_costs(p), p); // 1F1B's memory
        const auto h1 = time_schedule(make_schedule(schedule_kind::zb_h1, p, m), costs);
        for (const auto& options : {list_only, greedy_options{}}) {
          const auto g = make_greedy_schedule(costs, m, options);
          BOOST_CHECK_NO_THROW(check_schedule(g, m));
          const auto t = time_schedule(g, costs);
          BOOST_TEST(t.bubble_ratio <= h1.bubble_ratio + 1e-12);
          BOOST_TEST(t.max_peak_in_flight_fw() <= p);
        }
      }
    }
}

BOOST_AUTO_TEST_CASE(respects_per_stage_memory_limits) {
  const int p = 4;
  const int m = 12;
  auto costs = uniform_costs(p, 1.0, 1.5, 0.7);
  const std::vector<double> limits = {2.0, 3.5, 1.0, 6.0};
  for (int s = 0; s < p; ++s) {
    auto& c = costs[static_cast<size_t>(s)];
    c.activation_bytes = 1.0;
    c.weight_grad_bytes = 0.5;
    c.memory_limit = limits[static_cast<size_t>(s)];
    c.comm_to_next = 0.1;
  }
  for (bool compare : {false, true}) {
    greedy_options options;
    options.compare_with_fixed = compare;
    const auto g = make_greedy_schedule(costs, m, options);
    BOOST_CHECK_NO_THROW(check_schedule(g, m));
    const auto t = time_schedule(g, costs);
    for (int s = 0; s < p; ++s)
      BOOST_TEST(t.peak_bytes[static_cast<size_t>(s)] <= limits[static_cast<size_t>(s)]);
  }
  greedy_options capped;
  capped.max_in_flight = 2;
  const auto t = time_schedule(make_greedy_schedule(with_limit(uniform_costs(p), 100.0), m, capped),
                               uniform_costs(p));
  BOOST_TEST(t.max_peak_in_flight_fw() <= 2);
}

BOOST_AUTO_TEST_CASE(handles_a_slow_stage) {
  for (int p : {2, 3, 4, 6})
    for (int m : {2, 4, 8, 16}) {
      for (int slow = 0; slow < p; ++slow) {
        auto costs = with_limit(uniform_costs(p), p);
        auto& c = costs[static_cast<size_t>(slow)];
        c.f *= 2;
        c.b *= 2;
        c.w *= 2;
        BOOST_TEST_CONTEXT("p=" << p << " m=" << m << " slow=" << slow) {
          const auto g = time_schedule(make_greedy_schedule(costs, m), costs);
          for (auto kind : {schedule_kind::one_f_one_b, schedule_kind::zb_h1})
            BOOST_TEST(g.makespan <= time_schedule(make_schedule(kind, p, m), costs).makespan);
          BOOST_TEST(g.max_peak_in_flight_fw() <= p);
        }
      }
    }
}

BOOST_AUTO_TEST_CASE(uneven_costs_with_communication) {
  // Stages of different speeds and F/B/W ratios over slow links: the list scheduler alone
  // should not lose to the fixed schedules by much, and the full greedy never loses.
  const std::vector<stage_cost> costs = {{1.0, 1.2, 0.6, 0.3, 1, 1, 4},
                                         {2.0, 2.5, 1.0, 0.5, 1, 1, 3},
                                         {0.7, 0.8, 0.5, 0.3, 1, 1, 2},
                                         {1.4, 1.5, 0.9, 0.0, 1, 1, 4}};
  const int m = 16;
  greedy_options list_only;
  list_only.compare_with_fixed = false;
  const auto g = time_schedule(make_greedy_schedule(costs, m), costs);
  const auto l = time_schedule(make_greedy_schedule(costs, m, list_only), costs);
  const auto fb = time_schedule(
      make_schedule(schedule_kind::one_f_one_b, static_cast<int>(costs.size()), m), costs);
  BOOST_TEST(g.makespan <= fb.makespan);
  BOOST_TEST(l.makespan <= 1.1 * fb.makespan);
  for (size_t s = 0; s < costs.size(); ++s)
    BOOST_TEST(g.peak_bytes[s] <= costs[s].memory_limit);
}

BOOST_AUTO_TEST_CASE(is_deterministic) {
  auto costs = uniform_costs(5, 1.0, 1.3, 0.4);
  costs[2].f = 2.5;
  costs[3].comm_to_next = 0.7;
  const auto a = make_greedy_schedule(with_limit(costs, 4), 20);
  const auto b = make_greedy_schedule(with_limit(costs, 4), 20);
  BOOST_TEST((a.stages == b.stages));
}

BOOST_AUTO_TEST_CASE(the_timed_variant_returns_the_same_schedule_and_its_timing) {
  auto costs = uniform_costs(5, 1.0, 1.3, 0.4);
  costs[2].f = 2.5;
  costs[3].comm_to_next = 0.7;
  for (double limit : {1.0, 2.0, 4.0, 100.0}) {
    const auto limited = with_limit(costs, limit);
    const timed_schedule t = make_timed_greedy_schedule(limited, 20);
    BOOST_TEST((t.schedule.stages == make_greedy_schedule(limited, 20).stages));
    const schedule_timing again = time_schedule(t.schedule, limited);
    BOOST_TEST(t.timing.makespan == again.makespan);
    BOOST_TEST((t.timing.peak_bytes == again.peak_bytes));
  }
}

BOOST_AUTO_TEST_CASE(rejects_bad_costs) {
  auto costs = uniform_costs(3);
  BOOST_CHECK_THROW(make_greedy_schedule({}, 4), std::invalid_argument);
  BOOST_CHECK_THROW(make_greedy_schedule(costs, 0), std::invalid_argument);
  auto zero_f = costs;
  zero_f[1].f = 0.0;
  BOOST_CHECK_THROW(make_greedy_schedule(zero_f, 4), std::invalid_argument);
  auto tiny = costs;
  tiny[2].memory_limit = 0.5; // below one activation
  BOOST_TEST(error_of([&] { make_greedy_schedule(tiny, 4); }).find("stage 2") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(schedule_lower_bound)

BOOST_AUTO_TEST_CASE(no_schedule_finishes_before_it) {
  // Random stage times and transfers, every fixed schedule and the greedy one (whose list
  // scheduler waits and picks differently from the fixed orders): none beats the bound.
  std::mt19937 rng(14);
  std::uniform_real_distribution<double> time(0.05, 3.0);
  std::uniform_real_distribution<double> comm(0.0, 2.0);
  for (int trial = 0; trial < 40; ++trial)
    for (int p : stage_counts)
      for (int m : micro_counts(p)) {
        std::vector<stage_cost> costs(static_cast<size_t>(p));
        for (auto& c : costs) {
          c.f = time(rng);
          c.b = time(rng);
          c.w = trial % 4 == 0 ? 0.0 : time(rng);
          c.comm_to_next = trial % 3 == 0 ? 0.0 : comm(rng);
        }
        const double bound = makespan_bound(costs, m);
        BOOST_TEST_CONTEXT("trial " << trial << " p=" << p << " m=" << m) {
          for (auto kind : fixed_kinds)
            BOOST_TEST(time_schedule(make_schedule(kind, p, m), costs).makespan >=
                       bound * (1 - 1e-12));
          greedy_options list_only;
          list_only.compare_with_fixed = false;
          BOOST_TEST(time_schedule(make_greedy_schedule(costs, m, list_only), costs).makespan >=
                     bound * (1 - 1e-12));
        }
      }
}

BOOST_AUTO_TEST_CASE(is_attained_by_zb_h1_on_equal_stages) {
  // ZB-H1 takes (3m + p - 1) T with equal unit stages (schedule.hpp): the bound is tight.
  for (int p : stage_counts)
    for (int m : micro_counts(p)) {
      if (m < p)
        continue;
      BOOST_TEST_CONTEXT("p=" << p << " m=" << m) {
        const auto costs = uniform_costs(p);
        BOOST_TEST(makespan_bound(costs, m) == 3.0 * m + p - 1);
        BOOST_TEST(time_schedule(make_schedule(schedule_kind::zb_h1, p, m), costs).makespan ==
                   makespan_bound(costs, m));
      }
    }
  // One stage: all of its ops, one after the other.
  BOOST_TEST(makespan_bound(uniform_costs(1, 1.0, 2.0, 0.5), 4) == 14.0);
  BOOST_TEST(makespan_bound({}, 4) == 0.0);
}

BOOST_AUTO_TEST_SUITE_END()

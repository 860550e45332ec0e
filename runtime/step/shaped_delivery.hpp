#pragma once

#include "runtime/plan/plan.hpp"
#include "runtime/sim/virtual_cluster.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

/// Shaped wall time: where a transfer spends its modelled time. The sender's link model
/// gives each message its arrival. Waiting for it on the sender's side and only then
/// sending makes the real transfer (serialize, socket, deserialize) come on top of the
/// model, so a shaped link is slower than the one it emulates. When sender and receiver
/// read one steady clock, the sender sends at once with the arrival on that clock and the
/// receiver holds the message until then: the real transfer happens inside the modelled
/// time. Two processes share the steady clock (CLOCK_MONOTONIC) exactly when they run on one
/// boot of one host; on different hosts their clocks have unrelated zeros, so the sender
/// waits there, as before.
namespace deepcee::runtime {

enum class shaping_side { hold_at_receiver, wait_at_sender };

/// Who waits for a shaped transfer between processes whose hosts' boot ids are these ("":
/// unknown, as on a system without /proc): the receiver when both are known and equal.
shaping_side shaping_side_of(std::string_view sender_boot, std::string_view receiver_boot);
/// The same for actors of one job: two actors of one process always read one clock.
shaping_side shaping_side_of(bool one_process, std::string_view sender_boot,
                             std::string_view receiver_boot);

/// This host's boot id (Linux: /proc/sys/kernel/random/boot_id, new at every boot), "" when
/// `path` cannot be read.
std::string read_boot_id(const std::string& path = "/proc/sys/kernel/random/boot_id");

/// The longest one transfer of `bytes` on `part` can take alone on its path: the worst
/// latency plus the bytes at the lowest bandwidth, jitter included, over the path's whole
/// history (pieces whose bandwidth is 0, a link down, are left out: the script brings it
/// back). 0 for a part without a link (both ends on one node).
double transfer_bound_s(const transfer_part& part, double bytes);

/// The longest a receiver may hold a shaped message of a job running plan `p` on `vc`.
/// A message waits in its sender's link FIFO behind that process's earlier transfers, which
/// belong to the step it is sent in or to the next one (a step ends when all its transfers
/// have arrived). So no honest hold exceeds twice the lone durations of one step's
/// transfers summed: every stage's activations and gradients of every micro-batch of the
/// job (all of them, as a rebalance may give one pipeline every micro-batch), each device's
/// ring hop carrying twice its stage's gradients and each gradient share carrying them once.
/// A hold past it comes from a bad clock or a hostile peer, and is cut to it.
double hold_limit_s(const virtual_cluster& vc, const plan& p);

/// When a message received at `now_ns` that asks to be held until `deliver_at_ns` (0: not
/// held) is released: then, never before `now_ns` (a message that came after its modelled
/// arrival is used as it comes) and never after `now_ns + limit_s`.
int64_t release_at_ns(int64_t now_ns, int64_t deliver_at_ns, double limit_s);

/// The timer from `now_ns` to a wake-up at `wake_ns` (hold_lines::wake_at), in whole
/// microseconds rounded up: a timer that fired early would find nothing due yet.
inline int64_t wake_timer_us(int64_t now_ns, int64_t wake_ns) {
  return (wake_ns - now_ns + 999) / 1000;
}

/// Held messages, released in time order within each line (a line: one sender's link), so a
/// message is never released before one received earlier on its line, whatever their hold
/// times: the receiver pushes each message it gets, uses what take_due gives and schedules a
/// wake-up for wake_at when it gives one.
template <class T, class Line = int>
class hold_lines {
public:
  void push(const Line& line, int64_t release_ns, T item) {
    auto& q = lines_[line];
    if (!q.empty())
      release_ns = std::max(release_ns, q.back().release_ns);
    q.push_back({release_ns, std::move(item)});
  }

  /// The messages due at `now_ns`, each line's in its order.
  std::vector<T> take_due(int64_t now_ns) {
    std::vector<T> out;
    for (auto it = lines_.begin(); it != lines_.end();) {
      auto& q = it->second;
      while (!q.empty() && q.front().release_ns <= now_ns) {
        out.push_back(std::move(q.front().item));
        q.pop_front();
      }
      it = q.empty() ? lines_.erase(it) : std::next(it);
    }
    return out;
  }

  /// A wake-up fired: the next wake_at gives the earliest release again.
  void woken() { wake_ns_.reset(); }

  /// When the receiver must wake to release the earliest held message, if no wake-up
  /// already comes by then; none when nothing is held.
  std::optional<int64_t> wake_at() {
    std::optional<int64_t> next;
    for (const auto& [line, q] : lines_)
      if (!next || q.front().release_ns < *next)
        next = q.front().release_ns;
    if (!next || (wake_ns_ && *wake_ns_ <= *next))
      return std::nullopt;
    wake_ns_ = next;
    return next;
  }

  size_t held() const {
    size_t n = 0;
    for (const auto& [line, q] : lines_)
      n += q.size();
    return n;
  }

private:
  struct held_item {
    int64_t release_ns = 0;
    T item;
  };
  std::map<Line, std::deque<held_item>> lines_;
  std::optional<int64_t> wake_ns_;
};

} // namespace deepcee::runtime

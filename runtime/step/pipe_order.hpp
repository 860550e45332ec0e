#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <vector>

/// Conservative (Chandy-Misra-Bryant) ordering of the transfers that several senders put on
/// one shared FIFO link in virtual time. Each sender submits its transfers in the order of
/// its virtual send times and promises lower bounds ("horizons") on the send times of the
/// transfers it has not submitted yet. A transfer is committed to the link only when no
/// sender can still submit one that goes before it, so the link's order is the order of
/// send times (ties: the lower sender id first, as the simulator processes stages), however
/// the host delivers the messages. Pure logic: the pipe actor feeds it.
namespace deepcee::runtime {

/// A point of virtual time within a step. Steps order first: once a sender is done with a
/// step it promises `{step, infinity}`, which lets every other sender's transfers of that
/// step through.
struct step_time {
  int64_t step = 0;
  double time_s = -std::numeric_limits<double>::infinity();

  friend bool operator<(const step_time& a, const step_time& b) {
    return a.step != b.step ? a.step < b.step : a.time_s < b.time_s;
  }
  friend bool operator==(const step_time& a, const step_time& b) = default;
};

/// The same promise with a finite time, as it can cross a process (the send horizon's
/// Cap'n Proto codec accepts finite times only). "Nothing more in step k" ({k, +inf}) becomes
/// "nothing before step k + 1" ({k + 1, lowest}), which no transfer can tell apart.
inline step_time finite_promise(step_time t) {
  if (t.time_s == std::numeric_limits<double>::infinity())
    return {t.step + 1, std::numeric_limits<double>::lowest()};
  if (t.time_s == -std::numeric_limits<double>::infinity())
    return {t.step, std::numeric_limits<double>::lowest()};
  return t;
}

class pipe_order {
public:
  /// One submitted transfer; `id` is the caller's handle for its details.
  struct transfer {
    int sender = 0;
    step_time send;
    uint64_t id = 0;
  };

  /// `senders`: ids of every sender that may use the link (at least one).
  explicit pipe_order(std::vector<int> senders);

  /// Queues a transfer. Throws std::invalid_argument for an unknown sender and
  /// std::logic_error when the send is earlier than that sender's promise or its previous
  /// transfer (its horizons were not lower bounds: committing would break the order).
  void submit(int sender, step_time send, uint64_t id);

  /// The sender promises that its later transfers are sent at `bound` or after. A bound
  /// below an earlier one says nothing new and is ignored.
  void promise(int sender, step_time bound);

  /// The next transfer that no sender can precede any more, removed from the queue.
  std::optional<transfer> next();

  /// Senders whose promises hold back the earliest queued transfer (for diagnostics).
  std::vector<int> holding_back() const;

  size_t queued() const;

private:
  struct sender_state {
    int id = 0;
    step_time horizon;
    std::deque<transfer> queue;
  };
  sender_state& find(int sender);
  /// Index of the sender whose queued front goes first, or -1.
  int earliest() const;

  std::vector<sender_state> senders_; ///< by ascending id
};

} // namespace deepcee::runtime

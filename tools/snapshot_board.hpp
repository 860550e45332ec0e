#pragma once

#include "runtime/watch/job_snapshot.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>

/// The mailbox between the job, which publishes a snapshot after every step, and the
/// inspection endpoint's threads (inspect_server.hpp). It holds locks, so it lives here,
/// where main wires the two, and not in runtime/watch with the snapshot it carries.
namespace deepcee::tools {

/// The frames of one streaming client: at most `capacity` wait; a frame that finds the queue
/// full is dropped and counted, so a client that does not read never holds the job up.
class snapshot_subscription {
public:
  using frame = std::shared_ptr<const runtime::job_snapshot>;

  explicit snapshot_subscription(size_t capacity) : capacity_(capacity) {}

  /// Never waits on the reader.
  void offer(frame f);
  /// The next frame, waiting up to `timeout`; nullptr on timeout or once closed.
  frame next(std::chrono::milliseconds timeout);
  void close();
  bool closed() const;
  /// Frames dropped for this client so far.
  int64_t dropped() const;

private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<frame> queue_;
  size_t capacity_;
  int64_t dropped_ = 0;
  bool closed_ = false;
};

/// The latest snapshot of a running job and its version. The job publishes after every
/// step; the lock is held only to swap a pointer and hand it to the subscriptions' queues,
/// never while a client reads or writes.
class snapshot_board {
public:
  using frame = snapshot_subscription::frame;

  /// Numbers `s` with the next version and makes it the latest.
  void publish(runtime::job_snapshot s);
  /// The latest (nullptr before the first publish).
  frame latest() const;
  uint64_t version() const;

  /// A client's queue of every snapshot published from now on (the latest first, if any).
  std::shared_ptr<snapshot_subscription> subscribe(size_t capacity);
  void unsubscribe(const std::shared_ptr<snapshot_subscription>& s);
  /// Frames dropped for every client, those gone included.
  int64_t dropped_frames() const;
  size_t subscribers() const;
  /// Closes every subscription (the endpoint is shutting down).
  void close();

private:
  mutable std::mutex mutex_;
  frame latest_;
  uint64_t version_ = 0;
  std::list<std::shared_ptr<snapshot_subscription>> subscriptions_;
  int64_t dropped_gone_ = 0; ///< of clients that unsubscribed
  bool closed_ = false;
};

} // namespace deepcee::tools

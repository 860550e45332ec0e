#include "tools/snapshot_board.hpp"

#include <algorithm>

namespace deepcee::tools {

void snapshot_subscription::offer(frame f) {
  {
    std::lock_guard lock(mutex_);
    if (closed_)
      return;
    if (queue_.size() >= capacity_) {
      ++dropped_;
      return;
    }
    queue_.push_back(std::move(f));
  }
  ready_.notify_one();
}

snapshot_subscription::frame snapshot_subscription::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return closed_ || !queue_.empty(); });
  if (closed_ || queue_.empty())
    return nullptr;
  auto f = std::move(queue_.front());
  queue_.pop_front();
  return f;
}

void snapshot_subscription::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    queue_.clear();
  }
  ready_.notify_all();
}

bool snapshot_subscription::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

int64_t snapshot_subscription::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

void snapshot_board::publish(runtime::job_snapshot s) {
  auto f = std::make_shared<runtime::job_snapshot>(std::move(s)); // built before the lock
  std::lock_guard lock(mutex_);
  f->version = ++version_;
  latest_ = f;
  for (const auto& sub : subscriptions_)
    sub->offer(f);
}

snapshot_board::frame snapshot_board::latest() const {
  std::lock_guard lock(mutex_);
  return latest_;
}

uint64_t snapshot_board::version() const {
  std::lock_guard lock(mutex_);
  return version_;
}

std::shared_ptr<snapshot_subscription> snapshot_board::subscribe(size_t capacity) {
  auto sub = std::make_shared<snapshot_subscription>(std::max<size_t>(capacity, 1));
  std::lock_guard lock(mutex_);
  if (closed_) {
    sub->close();
    return sub;
  }
  if (latest_)
    sub->offer(latest_);
  subscriptions_.push_back(sub);
  return sub;
}

void snapshot_board::unsubscribe(const std::shared_ptr<snapshot_subscription>& s) {
  s->close();
  std::lock_guard lock(mutex_);
  const auto before = subscriptions_.size();
  subscriptions_.remove(s);
  if (subscriptions_.size() != before)
    dropped_gone_ += s->dropped();
}

int64_t snapshot_board::dropped_frames() const {
  std::lock_guard lock(mutex_);
  int64_t total = dropped_gone_;
  for (const auto& sub : subscriptions_)
    total += sub->dropped();
  return total;
}

size_t snapshot_board::subscribers() const {
  std::lock_guard lock(mutex_);
  return subscriptions_.size();
}

void snapshot_board::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  for (const auto& sub : subscriptions_)
    sub->close();
}

} // namespace deepcee::tools

#include "runtime/step/pipe_order.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>

namespace deepcee::runtime {

namespace {

std::string text(const step_time& t) {
  return "step " + std::to_string(t.step) + " at " + std::to_string(t.time_s) + " s";
}

/// The link's order: send time, then sender id (each sender's own order is its queue's).
bool before(const step_time& a, int sender_a, const step_time& b, int sender_b) {
  return std::tie(a, sender_a) < std::tie(b, sender_b);
}

} // namespace

pipe_order::pipe_order(std::vector<int> senders) {
  std::sort(senders.begin(), senders.end());
  senders.erase(std::unique(senders.begin(), senders.end()), senders.end());
  if (senders.empty())
    throw std::invalid_argument("pipe_order: a link without senders");
  for (int s : senders)
    senders_.push_back({s, {}, {}});
}

pipe_order::sender_state& pipe_order::find(int sender) {
  auto it = std::lower_bound(senders_.begin(), senders_.end(), sender,
                             [](const sender_state& s, int id) { return s.id < id; });
  if (it == senders_.end() || it->id != sender)
    throw std::invalid_argument("pipe_order: " + std::to_string(sender) +
                                " is not a sender of this link");
  return *it;
}

void pipe_order::submit(int sender, step_time send, uint64_t id) {
  auto& s = find(sender);
  if (send < s.horizon)
    throw std::logic_error("sender " + std::to_string(sender) + " sent at " + text(send) +
                           ", before its promised " + text(s.horizon));
  s.horizon = send;
  s.queue.push_back({sender, send, id});
}

void pipe_order::promise(int sender, step_time bound) {
  auto& s = find(sender);
  s.horizon = std::max(s.horizon, bound);
}

int pipe_order::earliest() const {
  int best = -1;
  for (size_t k = 0; k < senders_.size(); ++k) {
    const auto& s = senders_[k];
    if (s.queue.empty())
      continue;
    const auto& b = senders_[static_cast<size_t>(best < 0 ? 0 : best)];
    if (best < 0 || before(s.queue.front().send, s.id, b.queue.front().send, b.id))
      best = static_cast<int>(k);
  }
  return best;
}

std::optional<pipe_order::transfer> pipe_order::next() {
  const int best = earliest();
  if (best < 0)
    return std::nullopt;
  auto& head = senders_[static_cast<size_t>(best)];
  const auto& t = head.queue.front();
  // A sender with nothing queued may still send before t unless its promise says not.
  for (const auto& s : senders_)
    if (s.queue.empty() && !before(t.send, t.sender, s.horizon, s.id))
      return std::nullopt;
  auto out = t;
  head.queue.pop_front();
  return out;
}

std::vector<int> pipe_order::holding_back() const {
  std::vector<int> out;
  const int best = earliest();
  if (best < 0)
    return out;
  const auto& t = senders_[static_cast<size_t>(best)].queue.front();
  for (const auto& s : senders_)
    if (s.queue.empty() && !before(t.send, t.sender, s.horizon, s.id))
      out.push_back(s.id);
  return out;
}

size_t pipe_order::queued() const {
  size_t n = 0;
  for (const auto& s : senders_)
    n += s.queue.size();
  return n;
}

} // namespace deepcee::runtime

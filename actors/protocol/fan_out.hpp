#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include <caf/error.hpp>

namespace deepcee::actors {

/// Gathers the answers to requests sent to several actors at once, shaped like CAF 0.18's
/// `fan_out_request` with `select_all`. `on_all` runs once, after the last answer, with
/// every answer in the order the requests were numbered; `on_error` runs once, with the
/// first error, and later answers are ignored. No caller keeps a counter of its own.
template <class Result>
class fan_in : public std::enable_shared_from_this<fan_in<Result>> {
public:
  template <class OnAll, class OnError>
  fan_in(size_t count, OnAll on_all, OnError on_error)
      : answers_(count), missing_(count), on_all_(std::move(on_all)),
        on_error_(std::move(on_error)) {}

  /// The handler of request `k`'s answer.
  auto answer(size_t k) {
    return [self = this->shared_from_this(), k](Result& value) {
      self->answers_.at(k) = std::move(value);
      if (--self->missing_ == 0 && !self->failed_)
        self->on_all_(self->answers_);
    };
  }

  /// The handler of any request's error.
  auto failure() {
    return [self = this->shared_from_this()](caf::error& e) {
      if (!std::exchange(self->failed_, true))
        self->on_error_(e);
    };
  }

  /// Runs `on_all` at once when there was nothing to ask.
  void finish_if_empty() {
    if (answers_.empty() && !std::exchange(failed_, true))
      on_all_(answers_);
  }

private:
  std::vector<Result> answers_;
  size_t missing_;
  bool failed_ = false;
  std::function<void(std::vector<Result>&)> on_all_;
  std::function<void(caf::error&)> on_error_;
};

template <class Result, class OnAll, class OnError>
std::shared_ptr<fan_in<Result>> make_fan_in(size_t count, OnAll on_all, OnError on_error) {
  return std::make_shared<fan_in<Result>>(count, std::move(on_all), std::move(on_error));
}

/// Sends the same request to every one of `targets`; `.then(on_all, on_error)` as fan_in.
template <class Result, class Self, class Handle, class Timeout, class... Ts>
class fan_out_request {
public:
  fan_out_request(Self self, std::vector<Handle> targets, Timeout timeout, Ts... xs)
      : self_(self), targets_(std::move(targets)), timeout_(timeout), message_(std::move(xs)...) {}

  template <class OnAll, class OnError>
  void then(OnAll on_all, OnError on_error) {
    auto all = make_fan_in<Result>(targets_.size(), std::move(on_all), std::move(on_error));
    for (size_t k = 0; k < targets_.size(); ++k)
      std::apply(
          [&](const auto&... xs) {
            self_->request(targets_[k], timeout_, xs...).then(all->answer(k), all->failure());
          },
          message_);
    all->finish_if_empty();
  }

private:
  Self self_;
  std::vector<Handle> targets_;
  Timeout timeout_;
  std::tuple<Ts...> message_;
};

/// `fan_out<Result>(self, targets, timeout, message...).then(on_all, on_error)`.
template <class Result, class Self, class Handle, class Timeout, class... Ts>
auto fan_out(Self self, std::vector<Handle> targets, Timeout timeout, Ts... xs) {
  return fan_out_request<Result, Self, Handle, Timeout, Ts...>(self, std::move(targets), timeout,
                                                               std::move(xs)...);
}

} // namespace deepcee::actors

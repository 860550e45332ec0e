#include "tools/interrupt_flag.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>

namespace deepcee::tools {

namespace {

std::atomic<bool> sigint_seen{false};
/// The line a second SIGINT writes before it ends the process (empty: it does not). Set
/// before the handler is installed, read only inside it (write(2) and _exit are safe there).
char second_sigint_line[256];
size_t second_sigint_length = 0;

void on_sigint(int) {
  if (sigint_seen.exchange(true) && second_sigint_length > 0) {
    (void)!::write(STDERR_FILENO, second_sigint_line, second_sigint_length);
    ::_exit(130);
  }
}

} // namespace

interrupt_flag::interrupt_flag(std::string second_leaves) {
  sigint_seen = false;
  if (!second_leaves.empty())
    second_leaves += '\n';
  second_sigint_length = std::min(second_leaves.size(), sizeof second_sigint_line);
  std::memcpy(second_sigint_line, second_leaves.data(), second_sigint_length);
  previous_ = std::signal(SIGINT, on_sigint);
}

interrupt_flag::~interrupt_flag() {
  std::signal(SIGINT, previous_);
  second_sigint_length = 0;
}

bool interrupt_flag::raised() const {
  return sigint_seen;
}

} // namespace deepcee::tools

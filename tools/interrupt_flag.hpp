#pragma once

#include <string>

namespace deepcee::tools {

/// While it lives, Ctrl-C (SIGINT) sets a flag instead of ending the process, so a command
/// stops after its current step and saves its checkpoint.
/// With `second_leaves` (a member node, which waits for the coordinator's node to end the
/// job), a second Ctrl-C ends the process at once: it writes `second_leaves` as its one
/// line and exits 130.
/// A signal handler can reach no object, so the flag is the process's one piece of mutable
/// state (interrupt_flag.cpp); at most one interrupt_flag lives at a time.
class interrupt_flag {
public:
  explicit interrupt_flag(std::string second_leaves = "");
  ~interrupt_flag();
  interrupt_flag(const interrupt_flag&) = delete;
  interrupt_flag& operator=(const interrupt_flag&) = delete;
  bool raised() const;

private:
  void (*previous_)(int);
};

} // namespace deepcee::tools

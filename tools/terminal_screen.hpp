#pragma once

#include <string>
#include <vector>

/// The terminal of a full-screen view, as htop uses it: the alternate screen, no echo, keys
/// read one at a time, the cursor hidden. The terminal is restored when the screen ends,
/// however it ends (q, Ctrl-C, an error).
namespace deepcee::tools {

class terminal_screen {
public:
  /// Takes over the terminal of stdin/stdout (both must be terminals). Ctrl-C and SIGTERM
  /// then set quit() instead of ending the process.
  terminal_screen();
  ~terminal_screen();
  terminal_screen(const terminal_screen&) = delete;
  terminal_screen& operator=(const terminal_screen&) = delete;

  /// Columns and rows.
  std::pair<int, int> size() const;
  /// Redraws in place: each line cleared to its end, the rest of the screen cleared.
  void draw(const std::vector<std::string>& lines) const;
  /// A key pressed within `timeout_ms`, or -1.
  int key(int timeout_ms) const;
  /// Ctrl-C or SIGTERM arrived.
  bool quit() const;
  /// The terminal was resized since the last call.
  bool resized() const;
  /// Restores the terminal now (the destructor does it too).
  void restore();

private:
  bool active_ = false;
  struct saved;
  saved* saved_ = nullptr;
};

/// Whether stdout is a terminal.
bool stdout_is_terminal();

} // namespace deepcee::tools

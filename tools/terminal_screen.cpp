#include "tools/terminal_screen.hpp"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <poll.h>
#include <stdexcept>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

namespace deepcee::tools {

namespace {

// A signal handler reaches no object: the screen's flags are the process's.
volatile std::sig_atomic_t quit_signal = 0;
volatile std::sig_atomic_t resize_signal = 0;

void on_quit(int) {
  quit_signal = 1;
}
void on_resize(int) {
  resize_signal = 1;
}

void write_all(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const auto n = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (n <= 0)
      return;
    done += size_t(n);
  }
}

} // namespace

struct terminal_screen::saved {
  termios mode{};
  struct sigaction interrupt {
  }, terminate{}, resize{};
};

bool stdout_is_terminal() {
  return ::isatty(STDOUT_FILENO) == 1;
}

terminal_screen::terminal_screen() : saved_(new saved) {
  if (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO))
    throw std::runtime_error("the live view needs a terminal (use --once or --json)");
  if (::tcgetattr(STDIN_FILENO, &saved_->mode) != 0)
    throw std::runtime_error("cannot read the terminal's settings");
  struct sigaction quit {
  }, resize{};
  quit.sa_handler = on_quit; // no SA_RESTART: a waiting poll() returns at once
  resize.sa_handler = on_resize;
  sigemptyset(&quit.sa_mask);
  sigemptyset(&resize.sa_mask);
  ::sigaction(SIGINT, &quit, &saved_->interrupt);
  ::sigaction(SIGTERM, &quit, &saved_->terminate);
  ::sigaction(SIGWINCH, &resize, &saved_->resize);
  termios raw = saved_->mode;
  raw.c_lflag &= ~tcflag_t(ICANON | ECHO);
  raw.c_cc[VMIN] = 0;
  raw.c_cc[VTIME] = 0;
  ::tcsetattr(STDIN_FILENO, TCSANOW, &raw);
  active_ = true;
  write_all("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J"); // alternate screen, cursor hidden
}

terminal_screen::~terminal_screen() {
  restore();
  delete saved_;
}

void terminal_screen::restore() {
  if (!active_)
    return;
  active_ = false;
  write_all("\x1b[?25h\x1b[?1049l"); // cursor shown, the shell's screen back
  ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_->mode);
  ::sigaction(SIGINT, &saved_->interrupt, nullptr);
  ::sigaction(SIGTERM, &saved_->terminate, nullptr);
  ::sigaction(SIGWINCH, &saved_->resize, nullptr);
}

std::pair<int, int> terminal_screen::size() const {
  winsize w{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) != 0 || w.ws_col == 0 || w.ws_row == 0)
    return {80, 24};
  return {w.ws_col, w.ws_row};
}

void terminal_screen::draw(const std::vector<std::string>& lines) const {
  std::string out = "\x1b[H";
  for (const auto& l : lines)
    out += l + "\x1b[K\r\n";
  if (!lines.empty())
    out.resize(out.size() - 2); // no scroll past the last row
  out += "\x1b[J";
  write_all(out);
}

int terminal_screen::key(int timeout_ms) const {
  pollfd p{STDIN_FILENO, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0 || !(p.revents & POLLIN))
    return -1;
  unsigned char c = 0;
  return ::read(STDIN_FILENO, &c, 1) == 1 ? int(c) : -1;
}

bool terminal_screen::quit() const {
  return quit_signal != 0;
}

bool terminal_screen::resized() const {
  const bool r = resize_signal != 0;
  resize_signal = 0;
  return r;
}

} // namespace deepcee::tools

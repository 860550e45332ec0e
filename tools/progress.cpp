#include "tools/progress.hpp"

#include <algorithm>
#include <unistd.h>

namespace deepcee::tools {

progress_bar::progress_bar(int first, int total, std::FILE* out)
    : first_(first), total_(total), out_(out), terminal_(::isatty(::fileno(out)) == 1),
      plain_every_(std::max(1, (total - first) / 20)) {}

std::string progress_bar::duration(double seconds) {
  long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

std::string progress_bar::bar(int done) const {
  constexpr int width = 24;
  int filled = total_ > 0 ? width * done / total_ : width;
  return "[" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
}

void progress_bar::update(int done, const std::string& fields) {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  int since = done - first_;
  std::string eta = since > 0 ? duration(elapsed / since * (total_ - done)) : "?";
  std::string counter = std::to_string(done) + "/" + std::to_string(total_);
  if (terminal_) {
    std::fprintf(out_, "\r\033[K%s %s | %s | ETA %s", bar(done).c_str(), counter.c_str(),
                 fields.c_str(), eta.c_str());
    drawn_ = true;
  } else if (since % plain_every_ == 0 || done == total_) {
    std::fprintf(out_, "%s | %s | elapsed %s | ETA %s\n", counter.c_str(), fields.c_str(),
                 duration(elapsed).c_str(), eta.c_str());
  }
  std::fflush(out_);
}

void progress_bar::message(const std::string& line) {
  if (terminal_ && drawn_)
    std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "%s\n", line.c_str());
  drawn_ = false;
  std::fflush(out_);
}

void progress_bar::finish() {
  if (terminal_ && drawn_)
    std::fprintf(out_, "\n");
  drawn_ = false;
  std::fflush(out_);
}

progress_line::progress_line(std::FILE* out, double quiet_s, double plain_every_s)
    : out_(out), terminal_(::isatty(::fileno(out)) == 1), quiet_s_(quiet_s),
      plain_every_s_(plain_every_s) {}

double progress_line::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void progress_line::update(const std::string& text) {
  const double now = elapsed();
  if (now < quiet_s_)
    return;
  const std::string phase = text.substr(0, text.find(' '));
  const std::string line = text + " | elapsed " + progress_bar::duration(now);
  if (terminal_) {
    if (now - last_s_ < 0.1 && phase == last_phase_)
      return;
    std::fprintf(out_, "\r\033[K%s", line.c_str());
    drawn_ = true;
  } else {
    if (now - last_s_ < plain_every_s_ && phase == last_phase_)
      return;
    std::fprintf(out_, "%s\n", line.c_str());
  }
  shown_ = true;
  last_s_ = now;
  last_phase_ = phase;
  std::fflush(out_);
}

void progress_line::finish() {
  if (terminal_ && drawn_)
    std::fprintf(out_, "\r\033[K");
  drawn_ = false;
  std::fflush(out_);
}

} // namespace deepcee::tools

#include "runtime/base/bounded_file.hpp"

#include "runtime/base/errors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace deepcee::runtime {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

uint64_t check_status(const std::filesystem::path& path, const struct stat& st, uint64_t max_bytes,
                      const std::string& what) {
  if (!S_ISREG(st.st_mode))
    fail_input(path, 0,
               what + " is " + kind_of(st.st_mode) + ", not a regular file, so it cannot be read");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes)
    fail_input(path, 0,
               what + " has " + byte_size_text(static_cast<double>(size)) + ", more than the " +
                   byte_size_text(static_cast<double>(max_bytes)) + " this reader accepts");
  return size;
}

} // namespace

std::string byte_size_text(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%.0f bytes", bytes);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", bytes, units[u]);
  return buf;
}

uint64_t require_regular_file(const std::filesystem::path& path, uint64_t max_bytes,
                              const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT)
      fail_input(path, 0, what + " does not exist");
    fail_input(path, 0, "cannot read the " + what + ": " + std::strerror(errno));
  }
  return check_status(path, st, max_bytes, what);
}

std::string read_bounded_file(const std::filesystem::path& path, uint64_t max_bytes,
                              const std::string& what) {
  require_regular_file(path, max_bytes, what);
  // O_NONBLOCK: should the path become a FIFO between the check and the open, opening it
  // does not wait for a writer; fstat below then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    fail_input(path, 0, "cannot open the " + what + ": " + std::strerror(errno));
  std::string bytes;
  try {
    struct stat st {};
    if (::fstat(fd, &st) != 0)
      fail_input(path, 0, "cannot read the " + what + ": " + std::strerror(errno));
    const uint64_t size = check_status(path, st, max_bytes, what);
    bytes.resize(static_cast<size_t>(size));
    size_t done = 0;
    // A file that grows while it is read is cut at `max_bytes`; one that shrinks ends early.
    while (true) {
      if (done == bytes.size()) {
        if (bytes.size() >= max_bytes)
          break;
        bytes.resize(std::min<uint64_t>(max_bytes, bytes.size() + 65536));
      }
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        fail_input(path, 0, "cannot read the " + what + ": " + std::strerror(errno));
      if (n == 0)
        break;
      done += static_cast<size_t>(n);
    }
    bytes.resize(done);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return bytes;
}

} // namespace deepcee::runtime

#include "tools/lab_exec.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace deepcee::tools {

namespace {

std::vector<char*> argv_of(std::vector<std::string>& args) {
  std::vector<char*> out;
  for (auto& a : args)
    out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

int status_of(int raw) {
  if (WIFEXITED(raw))
    return WEXITSTATUS(raw);
  return WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : -1;
}

} // namespace

std::optional<std::filesystem::path> find_program(const std::string& name,
                                                  const std::string& path) {
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const auto candidate = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return std::nullopt;
}

exec_result run_program(const std::vector<std::string>& argv, const std::string& path) {
  const auto program = find_program(argv.at(0), path);
  if (!program)
    return {127, argv[0] + ": not found"};
  int pipe_fd[2];
  if (::pipe2(pipe_fd, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  auto args = argv;
  args[0] = program->string();
  auto c_args = argv_of(args);
  const pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(pipe_fd[1], STDOUT_FILENO);
    ::dup2(pipe_fd[1], STDERR_FILENO);
    ::execv(c_args[0], c_args.data());
    ::_exit(127);
  }
  ::close(pipe_fd[1]);
  exec_result r;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe_fd[0], buf, sizeof buf)) > 0;)
    r.output.append(buf, static_cast<size_t>(n));
  ::close(pipe_fd[0]);
  int raw = 0;
  ::waitpid(pid, &raw, 0);
  r.status = status_of(raw);
  while (!r.output.empty() && (r.output.back() == '\n' || r.output.back() == ' '))
    r.output.pop_back();
  return r;
}

int spawn_program(const std::vector<std::string>& argv, const std::filesystem::path& log,
                  const std::optional<std::filesystem::path>& cgroup_procs) {
  auto args = argv;
  auto c_args = argv_of(args);
  const std::string log_path = log.string();
  const std::string procs = cgroup_procs ? cgroup_procs->string() : "";
  const pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    ::setpgid(0, 0); // Ctrl-C reaches the parent, which passes it on once
    if (!procs.empty()) {
      const int fd = ::open(procs.c_str(), O_WRONLY);
      char pid_text[24];
      const int len = std::snprintf(pid_text, sizeof pid_text, "%d", static_cast<int>(::getpid()));
      if (fd < 0 || ::write(fd, pid_text, static_cast<size_t>(len)) != len)
        ::_exit(126);
      ::close(fd);
    }
    const int out = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0)
      ::_exit(126);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    ::execv(c_args[0], c_args.data());
    ::_exit(127);
  }
  return pid;
}

bool has_net_admin() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.starts_with("CapEff:")) {
      const auto caps = std::stoull(line.substr(7), nullptr, 16);
      return (caps >> 12) & 1; // CAP_NET_ADMIN
    }
  return ::geteuid() == 0;
}

host_facts read_host_facts() {
  host_facts h;
  h.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:")
      h.memory_bytes = kib * 1024;
  return h;
}

} // namespace deepcee::tools

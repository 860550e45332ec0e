#include "tools/host_probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace deepcee::tools {

runtime::host_resources probe_host() {
  runtime::host_resources h;
  h.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string key;
    double kib = 0;
    if (s >> key >> kib && key == "MemAvailable:") {
      h.available_bytes = kib * 1024.0;
      return h;
    }
  }
  const long pages = ::sysconf(_SC_AVPHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  h.available_bytes = pages > 0 && page > 0 ? double(pages) * double(page) : 0.0;
  return h;
}

} // namespace deepcee::tools

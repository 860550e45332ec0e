#include "tools/run_directory.hpp"

#include "kernels/device/make_backend.hpp"
#include "runtime/base/errors.hpp"

#include <ctime>

namespace deepcee::tools {

std::filesystem::path make_run_directory(const std::optional<std::string>& explicit_dir,
                                         const std::filesystem::path& root,
                                         const std::string& kind) {
  std::filesystem::path dir;
  if (explicit_dir) {
    dir = *explicit_dir;
  } else {
    std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    dir = root / (kind + "-" + stamp);
    for (int i = 2; std::filesystem::exists(dir); ++i)
      dir = root / (kind + "-" + stamp + "-" + std::to_string(i));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    runtime::fail_input(dir, 0, "cannot create run directory: " + ec.message());
  return dir;
}

std::unique_ptr<kernels::backend> open_backend(const std::string& device, int threads, bool bf16) {
  kernels::backend_options o;
  o.kind = kernels::parse_backend_kind(device);
  o.threads = threads;
  o.precision = bf16 ? kernels::matmul_precision::bf16 : kernels::matmul_precision::fp32;
  try {
    return kernels::make_backend(o);
  } catch (const std::runtime_error& e) {
    throw runtime::input_error(e.what());
  }
}

} // namespace deepcee::tools

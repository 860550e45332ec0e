#include "runtime/plan/job_config.hpp"

namespace deepcee::runtime {

std::string_view to_string(time_mode m) {
  switch (m) {
  case time_mode::wall:
    return "wall";
  case time_mode::virtual_time:
    return "virtual";
  case time_mode::dry:
    return "dry";
  }
  return "?";
}

} // namespace deepcee::runtime

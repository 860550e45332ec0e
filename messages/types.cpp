#include "messages/types.hpp"

namespace deepcee::messages {

std::string_view to_string(message_kind k) {
  switch (k) {
#define DEEPCEE_KIND_NAME(type, kind, schema)                                                      \
  case message_kind::kind:                                                                         \
    return #kind;
    DEEPCEE_WIRE_MESSAGES(DEEPCEE_KIND_NAME)
#undef DEEPCEE_KIND_NAME
  }
  return "unknown";
}

int64_t tensor_header::rows() const {
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i)
    rows *= shape[i];
  return rows;
}

int64_t tensor_header::cols() const {
  return shape.empty() ? 1 : shape.back();
}

} // namespace deepcee::messages

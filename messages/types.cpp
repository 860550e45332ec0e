#include "messages/types.hpp"

namespace deepcee::messages {

std::string_view to_string(message_kind k) {
  switch (k) {
  case message_kind::job_deployment:
    return "job_deployment";
  case message_kind::step_start:
    return "step_start";
  case message_kind::tensor:
    return "tensor";
  case message_kind::link_sample:
    return "link_sample";
  case message_kind::step_stats:
    return "step_stats";
  case message_kind::rebalance:
    return "rebalance";
  case message_kind::heartbeat:
    return "heartbeat";
  case message_kind::error:
    return "error";
  case message_kind::optimize_order:
    return "optimize_order";
  case message_kind::stage_report:
    return "stage_report";
  case message_kind::node_join:
    return "node_join";
  case message_kind::pipe_request:
    return "pipe_request";
  case message_kind::send_horizon:
    return "send_horizon";
  case message_kind::pipe_arrival:
    return "pipe_arrival";
  case message_kind::stage_snapshot:
    return "stage_snapshot";
  case message_kind::deployment_request:
    return "deployment_request";
  case message_kind::device_rows:
    return "device_rows";
  case message_kind::device_output:
    return "device_output";
  case message_kind::ring_chunk:
    return "ring_chunk";
  case message_kind::gradient_values:
    return "gradient_values";
  case message_kind::script_update:
    return "script_update";
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

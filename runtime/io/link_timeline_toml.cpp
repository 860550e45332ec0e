#include "runtime/io/link_timeline_toml.hpp"

#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/io/units_toml.hpp"

namespace deepcee::runtime {

link_timeline parse_link_timeline(std::string_view toml_text, const cluster& c,
                                  const std::filesystem::path& source) {
  using namespace toml_input;
  toml::table root;
  try {
    root = toml::parse(toml_text, source.string());
  } catch (const toml::parse_error& e) {
    fail_input(source, static_cast<int64_t>(e.source().begin.line), std::string(e.description()));
  }
  check_keys(source, root, {"change"}, "the timeline");
  std::vector<link_change> changes;
  const toml::node* list = root.get("change");
  if (!list)
    return link_timeline{};
  if (!list->is_array_of_tables())
    fail_at(source, *list, "'change' must be an array of tables ([[change]])");
  const auto endpoint = [&](const toml::node& n) -> link_endpoint {
    const std::string name = get_string(source, n, "'between' entry");
    if (auto i = c.find_device(name))
      return {link_endpoint::scope::device, *i};
    if (auto i = c.find_node(name))
      return {link_endpoint::scope::node, *i};
    if (auto i = c.find_region(name))
      return {link_endpoint::scope::region, *i};
    fail_at(source, n, "unknown region, node or device '" + name + "'");
  };
  for (const auto& item : *list->as_array()) {
    const auto& t = as_table(source, item, "[[change]]");
    check_keys(source, t, {"at", "between", "bandwidth", "latency"}, "[[change]]");
    link_change ch;
    ch.line = line_of(t);
    const toml::node* at = t.get("at");
    if (!at)
      fail_at(source, t, "a [[change]] needs 'at' (seconds from the start)");
    ch.at_s = get_quantity(source, *at, "'at'", parse_duration, 1.0, "\"30s\"");
    if (ch.at_s < 0)
      fail_at(source, *at, "'at' must not be negative");
    const toml::node* between = t.get("between");
    const toml::array* pair = between ? between->as_array() : nullptr;
    if (!pair || pair->size() != 2)
      fail_at(source, between ? *between : static_cast<const toml::node&>(t),
              "a [[change]] needs 'between = [a, b]' naming two regions, nodes or devices");
    ch.a = endpoint(*pair->get(0));
    ch.b = endpoint(*pair->get(1));
    if (auto n = t.get("bandwidth")) {
      ch.bandwidth_Bps =
          get_quantity(source, *n, "'bandwidth'", parse_bandwidth, 1e6 / 8, "\"50Mbps\"");
      if (!(*ch.bandwidth_Bps > 0))
        fail_at(source, *n, "'bandwidth' must be positive");
    }
    if (auto n = t.get("latency")) {
      ch.latency_s = get_quantity(source, *n, "'latency'", parse_duration, 1e-3, "\"80ms\"");
      if (*ch.latency_s < 0)
        fail_at(source, *n, "'latency' must not be negative");
    }
    if (!ch.bandwidth_Bps && !ch.latency_s)
      fail_at(source, t, "a [[change]] must set 'bandwidth', 'latency' or both");
    changes.push_back(ch);
  }
  return link_timeline(std::move(changes));
}

link_timeline load_link_timeline(const std::filesystem::path& path, const cluster& c) {
  return parse_link_timeline(read_bounded_file(path, max_config_bytes, "link timeline"), c, path);
}

} // namespace deepcee::runtime

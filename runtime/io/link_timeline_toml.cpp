#include "runtime/io/link_timeline_toml.hpp"

#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/io/units_toml.hpp"

namespace deepcee::runtime {

namespace {

using namespace toml_input;

constexpr const char* node_actions = R"("stop", "resume", "kill", "partition" or "heal")";

/// Reads one scripted table's `at` or `step` (exactly one of them).
struct event_reader {
  const std::filesystem::path& source;
  const cluster& c;
  /// Injected events (`deepcee inject`) may give neither: they apply at the next step.
  bool untimed_ok = false;

  void time_of(const toml::table& t, const char* what, double& at_s,
               std::optional<int>& step) const {
    const toml::node* at = t.get("at");
    const toml::node* st = t.get("step");
    if (untimed_ok && !at && !st)
      return; // time 0: the next step boundary (take_injected)
    if (!at == !st)
      fail_at(source, t,
              std::string("a ") + what +
                  " needs 'at' (seconds from the start) or 'step' (a step number), not both");
    if (at) {
      at_s = get_quantity(source, *at, "'at'", parse_duration, 1.0, "\"30s\"");
      if (at_s < 0)
        fail_at(source, *at, "'at' must not be negative");
      return;
    }
    const int64_t k = get_integer(source, *st, "'step'");
    if (k < 1 || k > 1'000'000'000)
      fail_at(source, *st, "'step' must be a step number from 1");
    step = static_cast<int>(k - 1); // the first step is 1 in files, as metrics.csv has it
  }

  link_endpoint endpoint(const toml::node& n, const char* what) const {
    const std::string name = get_string(source, n, what);
    if (auto i = c.find_device(name))
      return {link_endpoint::scope::device, *i};
    if (auto i = c.find_node(name))
      return {link_endpoint::scope::node, *i};
    if (auto i = c.find_region(name))
      return {link_endpoint::scope::region, *i};
    fail_at(source, n, "unknown region, node or device '" + name + "'");
  }

  double positive(const toml::table& t, const char* key) const {
    const toml::node& n = *t.get(key);
    const double v = get_number(source, n, std::string("'") + key + "'");
    if (!(v > 0))
      fail_at(source, n, std::string("'") + key + "' must be positive");
    return v;
  }

  link_change link(const toml::table& t) const {
    check_keys(source, t,
               {"at", "step", "between", "of", "bandwidth", "latency", "bandwidth_scale",
                "latency_scale", "jitter", "seed"},
               "[[change]]");
    link_change ch;
    ch.line = line_of(t);
    time_of(t, "[[change]]", ch.at_s, ch.at_step);
    const toml::node* between = t.get("between");
    const toml::node* of = t.get("of");
    if (between && of)
      fail_at(source, t, "a [[change]] names 'between' or 'of', not both");
    if (of) {
      ch.a = endpoint(*of, "'of'");
      ch.any_peer = true;
    } else {
      const toml::array* pair = between ? between->as_array() : nullptr;
      if (!pair || pair->size() != 2)
        fail_at(source, between ? *between : static_cast<const toml::node&>(t),
                "a [[change]] needs 'between = [a, b]' naming two regions, nodes or devices, or "
                "'of = x' naming one");
      ch.a = endpoint(*pair->get(0), "'between' entry");
      ch.b = endpoint(*pair->get(1), "'between' entry");
    }
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
    if (t.get("bandwidth_scale"))
      ch.bandwidth_scale = positive(t, "bandwidth_scale");
    if (t.get("latency_scale"))
      ch.latency_scale = positive(t, "latency_scale");
    if (auto n = t.get("jitter")) {
      ch.jitter = get_number(source, *n, "'jitter'");
      if (!(*ch.jitter >= 0 && *ch.jitter < 1))
        fail_at(source, *n, "'jitter' must be a fraction in [0, 1) (0.2 is +-20%)");
    }
    if (auto n = t.get("seed")) {
      if (!ch.jitter)
        fail_at(source, *n, "'seed' only goes with 'jitter'");
      ch.seed = static_cast<uint64_t>(get_integer(source, *n, "'seed'"));
    }
    if (!ch.bandwidth_Bps && !ch.latency_s && !ch.bandwidth_scale && !ch.latency_scale &&
        !ch.jitter)
      fail_at(source, t,
              "a [[change]] must set 'bandwidth', 'latency', 'bandwidth_scale', "
              "'latency_scale' or 'jitter'");
    if ((ch.bandwidth_Bps && ch.bandwidth_scale) || (ch.latency_s && ch.latency_scale))
      fail_at(source, t, "a [[change]] sets or scales a quantity, not both");
    return ch;
  }

  /// The index `find` gives for the name under `key` (a [[device]]'s device, a [[node]]'s
  /// node); a missing or unknown name is one line naming the file and line.
  template <class Find>
  int named(const toml::table& t, const std::string& key, Find find) const {
    const toml::node* name = t.get(key);
    if (!name)
      fail_at(source, t,
              "a [[" + key + "]] needs '" + key + "' naming a " + key + " of the cluster");
    const std::string s = get_string(source, *name, "'" + key + "'");
    const auto i = find(s);
    if (!i)
      fail_at(source, *name, "unknown " + key + " '" + s + "'");
    return *i;
  }

  device_change device(const toml::table& t) const {
    check_keys(source, t, {"at", "step", "device", "slowdown"}, "[[device]]");
    device_change d;
    d.line = line_of(t);
    time_of(t, "[[device]]", d.at_s, d.at_step);
    d.device = named(t, "device", [&](const std::string& s) { return c.find_device(s); });
    if (!t.get("slowdown"))
      fail_at(source, t, "a [[device]] needs 'slowdown' (3 makes it 3x slower, 1 restores it)");
    d.slowdown = positive(t, "slowdown");
    return d;
  }

  node_change node(const toml::table& t) const {
    check_keys(source, t, {"at", "step", "node", "action"}, "[[node]]");
    node_change n;
    n.line = line_of(t);
    time_of(t, "[[node]]", n.at_s, n.at_step);
    n.node = named(t, "node", [&](const std::string& s) { return c.find_node(s); });
    const toml::node* action = t.get("action");
    if (!action)
      fail_at(source, t, std::string("a [[node]] needs 'action' (") + node_actions + ")");
    const std::string a = get_string(source, *action, "'action'");
    if (a == "stop")
      n.action = node_action::stop;
    else if (a == "resume")
      n.action = node_action::resume;
    else if (a == "kill")
      n.action = node_action::kill;
    else if (a == "partition")
      n.action = node_action::partition;
    else if (a == "heal")
      n.action = node_action::heal;
    else
      fail_at(source, *action, "unknown action '" + a + "' (" + node_actions + ")");
    return n;
  }
};

/// Calls `read` on every table of the array `key` ([[key]]), if there is one.
template <class Read>
void each_table(const std::filesystem::path& source, const toml::table& root, const char* key,
                Read read) {
  const toml::node* list = root.get(key);
  if (!list)
    return;
  if (!list->is_array_of_tables())
    fail_at(source, *list,
            std::string("'") + key + "' must be an array of tables ([[" + key + "]])");
  for (const auto& item : *list->as_array())
    read(as_table(source, item, std::string("[[") + key + "]]"));
}

} // namespace

namespace {

link_timeline read_events(const toml::table& root, const event_reader& reader) {
  const auto& source = reader.source;
  check_keys(source, root, {"change", "device", "node"}, "the timeline");
  std::vector<link_change> links;
  std::vector<device_change> devices;
  std::vector<node_change> nodes;
  each_table(source, root, "change",
             [&](const toml::table& t) { links.push_back(reader.link(t)); });
  each_table(source, root, "device",
             [&](const toml::table& t) { devices.push_back(reader.device(t)); });
  each_table(source, root, "node", [&](const toml::table& t) { nodes.push_back(reader.node(t)); });
  return link_timeline(std::move(links), std::move(devices), std::move(nodes));
}

} // namespace

link_timeline parse_link_timeline(std::string_view toml_text, const cluster& c,
                                  const std::filesystem::path& source) {
  return read_events(parse_text(toml_text, source), event_reader{source, c});
}

link_timeline parse_injected_events(std::string_view toml_text, const cluster& c,
                                    const std::filesystem::path& source) {
  return read_events(parse_text(toml_text, source), event_reader{source, c, true});
}

link_timeline parse_event_option(std::string_view text, const cluster& c) {
  const std::filesystem::path source = "--event";
  const toml::table root = parse_text(text, source);
  const event_reader reader{source, c, true};
  if (root.size() != 1)
    fail_input(source, 1,
               "--event takes one event: change = {...}, device = {...} or node = {...}");
  const auto first = root.begin(); // its entry refers into the iterator: keep it alive
  const std::string kind(first->first.str());
  const toml::node& value = first->second;
  if (kind != "change" && kind != "device" && kind != "node")
    fail_at(source, value,
            "unknown event '" + kind + "' (change = {...}, device = {...} or node = {...})");
  const toml::table& t = as_table(source, value, "'" + kind + "'");
  if (kind == "change")
    return link_timeline({reader.link(t)});
  if (kind == "device")
    return link_timeline({}, {reader.device(t)});
  return link_timeline({}, {}, {reader.node(t)});
}

link_timeline parse_injection(const std::string& source, std::string_view text, const cluster& c) {
  if (source != "--event")
    return parse_injected_events(text, c, source);
  link_timeline all;
  size_t k = 1;
  for (size_t begin = 0; begin < text.size(); ++k) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    try {
      all = merged(all, parse_event_option(text.substr(begin, end - begin), c));
    } catch (const input_error& e) {
      const std::string what = e.what(), first = "--event:1:";
      throw input_error("--event:" + std::to_string(k) + ":" +
                        (what.starts_with(first) ? what.substr(first.size()) : what));
    }
    begin = end + 1;
  }
  return all;
}

link_timeline load_link_timeline(const std::filesystem::path& path, const cluster& c) {
  return parse_link_timeline(read_bounded_file(path, max_config_bytes, "link timeline"), c, path);
}

} // namespace deepcee::runtime

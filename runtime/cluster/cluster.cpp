#include "runtime/cluster/cluster.hpp"

namespace deepcee::runtime {

bool endpoint_contains(const cluster& c, const link_endpoint& e, int dev) {
  const device& d = c.devices[static_cast<size_t>(dev)];
  switch (e.what) {
  case link_endpoint::scope::region:
    return d.region == e.index;
  case link_endpoint::scope::node:
    return d.node == e.index;
  case link_endpoint::scope::device:
    return d.id == e.index;
  }
  return false;
}

namespace {

int specificity(const link_endpoint& e) {
  switch (e.what) {
  case link_endpoint::scope::region:
    return 0;
  case link_endpoint::scope::node:
    return 1;
  case link_endpoint::scope::device:
    return 2;
  }
  return 0;
}

template <class T>
std::optional<int> index_of(const std::vector<T>& items, std::string_view name) {
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].name == name)
      return static_cast<int>(i);
  return std::nullopt;
}

} // namespace

std::string_view to_string(region_tier t) {
  switch (t) {
  case region_tier::cloud:
    return "cloud";
  case region_tier::edge:
    return "edge";
  case region_tier::end:
    return "end";
  }
  return "?";
}

std::string_view to_string(link_level l) {
  switch (l) {
  case link_level::self:
    return "self";
  case link_level::same_node:
    return "same node";
  case link_level::same_region:
    return "same region";
  case link_level::cross_region:
    return "cross region";
  }
  return "?";
}

link_level cluster::level_between(int a, int b) const {
  if (a == b)
    return link_level::self;
  const device& da = devices[static_cast<size_t>(a)];
  const device& db = devices[static_cast<size_t>(b)];
  if (da.node == db.node)
    return link_level::same_node;
  if (da.region == db.region)
    return link_level::same_region;
  return link_level::cross_region;
}

link_params cluster::link_between(int a, int b) const {
  link_level level = level_between(a, b);
  link_params base;
  switch (level) {
  case link_level::self:
    return {0, std::numeric_limits<double>::infinity()};
  case link_level::same_node:
    base = links.same_node;
    break;
  case link_level::same_region:
    base = links.same_region;
    break;
  case link_level::cross_region:
    base = links.cross_region;
    break;
  }
  const link_override* best = nullptr;
  int best_score = -1;
  for (const auto& o : overrides) {
    // A region-wide override describes the network between hosts; it must not slow
    // down the bus inside one host.
    bool regional =
        o.from.what == link_endpoint::scope::region || o.to.what == link_endpoint::scope::region;
    if (regional && level == link_level::same_node)
      continue;
    bool forward = endpoint_contains(*this, o.from, a) && endpoint_contains(*this, o.to, b);
    bool backward =
        !o.directed && endpoint_contains(*this, o.from, b) && endpoint_contains(*this, o.to, a);
    if (!forward && !backward)
      continue;
    int score = specificity(o.from) + specificity(o.to);
    if (score > best_score || (score == best_score && (o.directed || !best->directed))) {
      best = &o;
      best_score = score;
    }
  }
  if (best) {
    if (best->latency_s)
      base.latency_s = *best->latency_s;
    if (best->bandwidth_Bps)
      base.bandwidth_Bps = *best->bandwidth_Bps;
  }
  return base;
}

std::optional<int> cluster::find_region(std::string_view name) const {
  return index_of(regions, name);
}

std::optional<int> cluster::find_node(std::string_view name) const {
  return index_of(nodes, name);
}

std::optional<int> cluster::find_device(std::string_view name) const {
  return index_of(devices, name);
}

} // namespace deepcee::runtime

#include "runtime/cluster/cluster_fingerprint.hpp"

#include <cstdint>
#include <cstdio>
#include <optional>

namespace deepcee::runtime {

namespace {

/// Text that names every value exactly: doubles as hex floats, fields separated.
class canonical_text {
public:
  canonical_text& operator<<(const std::string& s) {
    text_ += std::to_string(s.size()) + ':' + s + ';';
    return *this;
  }
  canonical_text& operator<<(int64_t v) {
    text_ += std::to_string(v) + ';';
    return *this;
  }
  canonical_text& operator<<(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%a;", v);
    text_ += buf;
    return *this;
  }
  canonical_text& operator<<(const link_params& l) {
    return *this << l.latency_s << l.bandwidth_Bps;
  }
  canonical_text& operator<<(const std::optional<double>& v) {
    return v ? (*this << int64_t{1} << *v) : (*this << int64_t{0});
  }
  canonical_text& operator<<(const link_endpoint& e) {
    return *this << static_cast<int64_t>(e.what) << int64_t{e.index};
  }
  const std::string& str() const { return text_; }

private:
  std::string text_;
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char ch : s) {
    h ^= ch;
    h *= 0x100000001b3ull;
  }
  return h;
}

} // namespace

std::string cluster_fingerprint(const cluster& c) {
  canonical_text t;
  t << static_cast<int64_t>(c.regions.size());
  for (const auto& r : c.regions)
    t << r.name << static_cast<int64_t>(r.tier);
  t << static_cast<int64_t>(c.nodes.size());
  for (const auto& n : c.nodes) {
    t << n.name << int64_t{n.region} << static_cast<int64_t>(n.devices.size());
    for (int d : n.devices)
      t << int64_t{d};
    if (n.nic_Bps) // only when given, so that files without one keep their fingerprints
      t << std::string("nic") << *n.nic_Bps;
  }
  t << static_cast<int64_t>(c.devices.size());
  for (const auto& d : c.devices)
    t << int64_t{d.id} << d.name << d.kind << static_cast<int64_t>(d.cls) << int64_t{d.node}
      << int64_t{d.region} << d.memory_bytes << d.fp32_flops << d.bf16_flops << d.mem_bandwidth_Bps;
  t << c.links.same_node << c.links.same_region << c.links.cross_region;
  t << static_cast<int64_t>(c.overrides.size());
  for (const auto& o : c.overrides)
    t << o.from << o.to << int64_t{o.directed} << o.latency_s << o.bandwidth_Bps;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(t.str())));
  return hex;
}

} // namespace deepcee::runtime

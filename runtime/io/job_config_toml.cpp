#include "runtime/io/job_config_toml.hpp"

#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/base/model_spec.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/io/profile_toml.hpp"
#include "runtime/io/train_config_table.hpp"
#include "runtime/io/train_config_toml.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <string_view>

namespace deepcee::runtime {

namespace fs = std::filesystem;

namespace {

int64_t line_of(const toml::node& n) {
  return static_cast<int64_t>(n.source().begin.line);
}

std::string text_of(const toml::table& t, std::string_view key, const fs::path& source) {
  const auto* n = t.get(key);
  if (!n)
    return {};
  if (!n->is_string())
    fail_input(source, line_of(*n), "'" + std::string(key) + "' must be a string");
  return std::string(*n->value<std::string>());
}

fs::path beside(const fs::path& job_file, const std::string& file) {
  return fs::path(file).is_absolute() ? fs::path(file) : job_file.parent_path() / file;
}

/// A [[node]]'s own `certificate` and `key` (both or neither), which need [security] ca.
void read_node_tls(const toml::table& t, const fs::path& path, const std::string& name,
                   job_config& job) {
  const auto cert = text_of(t, "certificate", path);
  const auto key = text_of(t, "key", path);
  if (cert.empty() && key.empty())
    return;
  const auto* at = t.get(cert.empty() ? "key" : "certificate");
  if (cert.empty() || key.empty())
    fail_input(path, line_of(*at),
               "[[node]] '" + name + "' needs both certificate = \"...\" and key = \"...\"");
  if (!job.tls)
    fail_input(path, line_of(*at),
               "[[node]] '" + name + "' has a certificate but [security] has no ca = \"...\"");
  job.tls->per_node[name] = {beside(path, cert), beside(path, key)};
}

/// [[node]] tables give each cluster node's host and port; `coordinator` names the node
/// that drives the job.
void read_nodes(const toml::table& root, const fs::path& path, job_config& job) {
  const std::pair<const char*, double*> durations[] = {
      {"connect_timeout", &job.connect_timeout_s},
      {"heartbeat_interval", &job.heartbeat_interval_s},
      {"heartbeat_timeout", &job.heartbeat_timeout_s}};
  for (const auto& [key, out] : durations)
    if (const auto* n = root.get(key)) {
      const auto v = n->value<double>();
      if (!v || !(*v >= 1e-3) || *v > 1e6)
        fail_input(path, line_of(*n),
                   std::string(key) + " must be a number of seconds from 0.001 to 1e6");
      *out = *v;
    }
  const auto* beat_key = root.get("heartbeat_timeout") ? root.get("heartbeat_timeout")
                                                       : root.get("heartbeat_interval");
  if (job.heartbeat_timeout_s <= job.heartbeat_interval_s)
    fail_input(path, beat_key ? line_of(*beat_key) : 0,
               "heartbeat_timeout (" + std::to_string(job.heartbeat_timeout_s) +
                   " s) must be longer than heartbeat_interval (" +
                   std::to_string(job.heartbeat_interval_s) + " s)");
  if (const auto* n = root.get("node")) {
    if (!n->is_array_of_tables())
      fail_input(path, line_of(*n), "'node' must be an array of tables ([[node]])");
    std::vector<bool> seen(job.cluster.nodes.size(), false);
    for (const auto& e : *n->as_array()) {
      const auto& t = *e.as_table();
      for (const auto& [key, v] : t)
        if (key != "name" && key != "host" && key != "port" && key != "certificate" && key != "key")
          fail_input(path, line_of(v), "unknown key '" + std::string(key.str()) + "' in [[node]]");
      const auto name = text_of(t, "name", path);
      const auto index = job.cluster.find_node(name);
      if (!index)
        fail_input(path, line_of(e),
                   "[[node]] '" + name + "' is not a node of cluster '" + job.cluster.name + "'");
      if (seen[static_cast<size_t>(*index)])
        fail_input(path, line_of(e), "[[node]] '" + name + "' given twice");
      seen[static_cast<size_t>(*index)] = true;
      auto& nd = job.cluster.nodes[static_cast<size_t>(*index)];
      if (t.contains("host"))
        nd.host = text_of(t, "host", path);
      if (const auto* p = t.get("port")) {
        const auto v = p->value<int64_t>();
        if (!v || *v < 1 || *v > 65535)
          fail_input(path, line_of(*p), "port of node '" + name + "' must be in 1..65535");
        nd.port = static_cast<int>(*v);
      }
      read_node_tls(t, path, name, job);
    }
  }
  if (auto c = text_of(root, "coordinator", path); !c.empty()) {
    const auto index = job.cluster.find_node(c);
    if (!index)
      fail_input(path, line_of(*root.get("coordinator")),
                 "coordinator '" + c + "' is not a node of cluster '" + job.cluster.name + "'");
    job.coordinator_node = *index;
  }
  if (job.cluster.nodes.empty())
    fail_input(path, 0, "cluster '" + job.cluster.name + "' has no nodes");
}

/// `[inject] script = "..."`, relative to the job file.
void read_inject(const toml::table& root, const fs::path& path, job_config& job) {
  const auto* n = root.get("inject");
  if (!n)
    return;
  if (!n->is_table())
    fail_input(path, line_of(*n), "'inject' must be a table ([inject] script = \"...\")");
  for (const auto& [key, v] : *n->as_table())
    if (key != "script")
      fail_input(path, line_of(v), "unknown key '" + std::string(key.str()) + "' in [inject]");
  const auto script = text_of(*n->as_table(), "script", path);
  if (script.empty())
    fail_input(path, line_of(*n), "[inject] needs script = \"a script file\"");
  job.script_path = fs::path(script).is_absolute() ? fs::path(script) : path.parent_path() / script;
  job.script = load_link_timeline(*job.script_path, job.cluster);
}

/// [security] token_file: the file holding the job's token (runtime/io/job_token.hpp),
/// relative to the job file. Its content is read by `deepcee node`, not here.
/// first_bytes_timeout: seconds, as the job's other durations.
void read_security(const toml::table& root, const fs::path& path, job_config& job) {
  const auto* n = root.get("security");
  if (!n)
    return;
  if (!n->is_table())
    fail_input(path, line_of(*n), "'security' must be a table");
  const auto& t = *n->as_table();
  for (const auto& [key, value] : t)
    if (key.str() != "token_file" && key.str() != "certificate" && key.str() != "key" &&
        key.str() != "ca" && key.str() != "first_bytes_timeout")
      fail_input(path, line_of(value),
                 "unknown key '" + std::string(key.str()) +
                     "' in [security] (token_file, certificate, key, ca, first_bytes_timeout)");
  if (const auto file = text_of(t, "token_file", path); !file.empty())
    job.token_file = beside(path, file);
  if (const auto* n = t.get("first_bytes_timeout")) {
    const auto v = n->value<double>();
    if (!v || !(*v >= 1e-3) || *v > 1e6)
      fail_input(path, line_of(*n),
                 "first_bytes_timeout must be a number of seconds from 0.001 to 1e6");
    job.first_bytes_timeout_s = *v;
  }
  const auto ca = text_of(t, "ca", path);
  const auto cert = text_of(t, "certificate", path);
  const auto key = text_of(t, "key", path);
  if (ca.empty() && cert.empty() && key.empty())
    return;
  if (ca.empty())
    fail_input(path, line_of(*t.get(cert.empty() ? "key" : "certificate")),
               "[security] certificate and key need ca = \"the job's CA certificate\"");
  if (cert.empty() != key.empty())
    fail_input(path, line_of(*t.get(cert.empty() ? "key" : "certificate")),
               "[security] needs both certificate = \"...\" and key = \"...\"");
  job.tls = tls_config{};
  job.tls->ca = beside(path, ca);
  if (!cert.empty()) {
    job.tls->certificate = beside(path, cert);
    job.tls->key = beside(path, key);
  }
}

/// With [security] ca, every node has a certificate and key: [security]'s or its own.
void check_tls(const toml::table& root, const fs::path& path, const job_config& job) {
  if (!job.tls || !job.tls->certificate.empty())
    return;
  for (const auto& nd : job.cluster.nodes)
    if (!job.tls->per_node.count(nd.name))
      fail_input(path, line_of(*root.get("security")),
                 "[security] ca is set, but node '" + nd.name +
                     "' has no certificate: give certificate and key in [security] or in its "
                     "[[node]] table");
}

/// [inspect] hosts = ["NAME", ...]: host names, each without port or spaces.
std::vector<std::string> read_inspect_hosts(const toml::node& v, const fs::path& path) {
  const auto bad = [&] {
    fail_input(path, line_of(v), "[inspect] hosts must be a list of host names (\"gpu-box\")");
  };
  std::vector<std::string> names;
  if (!v.is_array())
    bad();
  for (const auto& e : *v.as_array()) {
    const auto name = e.value<std::string>();
    if (!name || name->empty() || name->find_first_of(": /\t[]") != std::string::npos)
      bad();
    names.push_back(*name);
  }
  return names;
}

/// [inspect] addr = "HOST:PORT" | "off" (the tools parse its value), hosts = [...].
void read_inspect(const toml::table& root, const fs::path& path, job_config& job) {
  const auto* n = root.get("inspect");
  if (!n)
    return;
  if (!n->is_table())
    fail_input(path, line_of(*n), "'inspect' must be a table ([inspect])");
  for (const auto& [key, v] : *n->as_table()) {
    if (key.str() == "hosts") {
      job.inspect_hosts = read_inspect_hosts(v, path);
      continue;
    }
    if (key.str() != "addr")
      fail_input(path, line_of(v), "unknown key '" + std::string(key.str()) + "' in [inspect]");
    if (!v.is_string())
      fail_input(path, line_of(v), "[inspect] addr must be a string (\"HOST:PORT\" or \"off\")");
    job.inspect_addr = *v.value<std::string>();
    job.inspect_line = line_of(v);
  }
}

/// [recovery] snapshot_every = N (steps; 0: never) or "auto".
void read_recovery(const toml::table& root, const fs::path& path, job_config& job) {
  const auto* n = root.get("recovery");
  if (!n)
    return;
  if (!n->is_table())
    fail_input(path, line_of(*n), "'recovery' must be a table ([recovery] snapshot_every = N)");
  for (const auto& [key, v] : *n->as_table()) {
    if (key.str() != "snapshot_every")
      fail_input(path, line_of(v), "unknown key '" + std::string(key.str()) + "' in [recovery]");
    if (v.value<std::string>() == "auto") {
      job.snapshot_every = -1;
      continue;
    }
    const auto every = v.value<int64_t>();
    if (!v.is_integer() || !every || *every < 0 || *every > 1000000)
      fail_input(path, line_of(v),
                 "[recovery] snapshot_every must be \"auto\" or a number of steps from 0 "
                 "(never) to 1000000");
    job.snapshot_every = static_cast<int>(*every);
  }
}

toml::table parse_job_file(const fs::path& path) {
  try {
    return toml::parse(read_bounded_file(path, max_config_bytes, "job file"), path.string());
  } catch (const toml::parse_error& e) {
    fail_input(path, static_cast<int64_t>(e.source().begin.line), std::string(e.description()));
  }
}

void check_top_level_keys(const toml::table& root, const fs::path& path) {
  static const std::string_view known[] = {"name",
                                           "time",
                                           "shape_links",
                                           "adapt",
                                           "cluster",
                                           "plan",
                                           "model",
                                           "coordinator",
                                           "connect_timeout",
                                           "train",
                                           "node",
                                           "heartbeat_interval",
                                           "heartbeat_timeout",
                                           "inject",
                                           "security",
                                           "inspect",
                                           "profile",
                                           "recovery"};
  for (const auto& [key, node] : root)
    if (std::find(std::begin(known), std::end(known), key.str()) == std::end(known))
      fail_input(path, line_of(node), "unknown key '" + std::string(key.str()) + "'");
}

/// `time`, and the switches that depend on it: `shape_links` and `adapt`.
void read_time(const toml::table& root, const fs::path& path, job_config& job) {
  const auto time = text_of(root, "time", path);
  if (time == "wall")
    job.time = time_mode::wall;
  else if (time == "dry")
    job.time = time_mode::dry;
  else if (time.empty() || time == "virtual")
    job.time = time_mode::virtual_time;
  else
    fail_input(path, line_of(*root.get("time")),
               "time must be virtual, wall or dry, got '" + time + "'");

  if (const auto* n = root.get("shape_links")) {
    if (!n->is_boolean())
      fail_input(path, line_of(*n), "shape_links must be true or false");
    job.shape_links = *n->value<bool>();
    if (job.shape_links && job.time != time_mode::wall)
      fail_input(path, line_of(*n),
                 "shape_links applies to time = \"wall\" only (virtual and dry time model the "
                 "links already)");
  }

  if (const auto* n = root.get("adapt")) {
    if (!n->is_boolean())
      fail_input(path, line_of(*n), "adapt must be true or false");
    job.adapt = *n->value<bool>();
  }
}

/// `cluster` (required), `plan` and `profile`: files named relative to the job file.
void read_cluster_plan_profile(const toml::table& root, const fs::path& path, job_config& job) {
  const auto cluster = text_of(root, "cluster", path);
  if (cluster.empty())
    fail_input(path, 0, "'cluster' (a cluster file) is required");
  job.cluster_path = beside(path, cluster);
  job.cluster = load_cluster(job.cluster_path);

  const auto plan = text_of(root, "plan", path);
  if (!plan.empty() && plan != "auto")
    job.plan_path = beside(path, plan);

  if (const auto profile = text_of(root, "profile", path); profile == "auto")
    job.profile_auto = true;
  else if (!profile.empty()) {
    job.profile_path = beside(path, profile);
    // Its links are the cluster's on every node of the job alike.
    apply_measured_links(job.cluster, load_measured_profile(*job.profile_path));
  }
}

/// The [train] table, read where it stands so that its keys keep their lines, and the
/// `model` preset, which stands in for [train.model].
void read_train_and_model(const toml::table& root, const fs::path& path, job_config& job) {
  bool has_model_table = false;
  toml::table no_train;
  const toml::table* train = &no_train;
  if (const auto* t = root.get("train")) {
    if (!t->is_table())
      fail_input(path, line_of(*t), "'train' must be a table");
    train = t->as_table();
    has_model_table = train->contains("model");
  }
  job.train = read_train_table(*train, path);
  if (auto m = text_of(root, "model", path); !m.empty()) {
    if (has_model_table)
      fail_input(path, line_of(*root.get("model")),
                 "give either model = \"preset\" or [train.model]");
    auto preset = model_preset(m);
    if (!preset)
      fail_input(path, line_of(*root.get("model")), "unknown model preset '" + m + "'");
    job.train.model = *preset;
    job.train.origin.lines["model"] = line_of(*root.get("model"));
    job.model_name = m;
  }
}

} // namespace

job_config load_job_config(const fs::path& path) {
  job_config job;
  job.source = path;
  const toml::table root = parse_job_file(path);
  check_top_level_keys(root, path);
  if (auto n = text_of(root, "name", path); !n.empty())
    job.name = n;
  read_time(root, path, job);
  read_security(root, path, job);
  read_cluster_plan_profile(root, path, job);
  read_train_and_model(root, path, job);
  validate_job_train(job, path);
  read_nodes(root, path, job);
  check_tls(root, path, job);
  read_inject(root, path, job);
  read_inspect(root, path, job);
  read_recovery(root, path, job);
  return job;
}

void validate_job_train(const job_config& job, const fs::path& source) {
  // Dry time computes no token, so the byte vocabulary binds only the other modes: a dry
  // job emulates a model of any vocabulary (GPT-2 124M's 50257) for its op and transfer
  // times.
  auto checked = job.train;
  if (job.time == time_mode::dry)
    checked.model.vocab = 256;
  validate(checked, source);
}

} // namespace deepcee::runtime

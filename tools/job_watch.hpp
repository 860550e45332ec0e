#pragma once

#include "actors/protocol/protocol.hpp"
#include "runtime/cluster/link_timeline.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/plan/job_config.hpp"
#include "runtime/planner/planner.hpp"
#include "runtime/watch/snapshot_builder.hpp"
#include "tools/inspect_server.hpp"
#include "tools/snapshot_board.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

/// The job's side of `deepcee inspect`: after every step the job builds a snapshot and puts
/// it on the board, which the inspection endpoint serves from threads of its own. Building
/// reads only what the step returned and the adapter's link totals, so a job runs the same
/// whether or not anyone watches.
namespace deepcee::tools {

/// The builder of a job's snapshots: its name, plan, groups (when the planner ran) and the
/// simulator's memory estimate of each device.
runtime::snapshot_builder
make_snapshot_builder(const runtime::job_config& job, const runtime::profile_table& profile,
                      const runtime::plan& plan,
                      const std::optional<runtime::planner_report>& report);

/// `--inspect` (when given) over the job file's `[inspect] addr`; "off" disables.
std::optional<inspect_address> inspect_address_of(const std::optional<std::string>& flag,
                                                  const runtime::job_config& job);

class job_watch {
public:
  /// Serves at `at` (none: builds nothing, serves nothing) and prints
  /// "inspect: http://HOST:PORT". A port that cannot be bound throws std::runtime_error.
  /// Watchers send the watch credential of `job_token` (watch_credential.hpp). Without a
  /// token the endpoint asks for none on loopback; elsewhere it makes a random credential
  /// and prints it in the page's address. `host_names`: what else the node is called.
  /// `https`: the node's certificate for HTTPS ("inspect: https://..."), or none.
  job_watch(runtime::snapshot_builder builder, const std::optional<inspect_address>& at,
            const std::string& job_token, std::vector<std::string> host_names = {},
            std::shared_ptr<const transport::tls_context> https = {});

  bool on() const { return server_ != nullptr; }
  /// Before the first step (`step`: the step the job resumes after, 0 when new).
  void started(int step);
  /// Step `r` ran on `ran` (the plan in force: the snapshot shows its stages and devices).
  void stepped(const actors::step_result& r, double real_s, const runtime::plan& ran,
               const std::vector<runtime::link_report>& links);
  /// Publishes the last step's snapshot again with the validation loss.
  void validated(int step, double loss);
  /// An injected event and an adapter's decision, shown from the next snapshot on.
  void injected(int step, const runtime::described_event& e);
  void decided(runtime::adapter_decision d);

private:
  runtime::snapshot_builder builder_;
  snapshot_board board_;
  std::unique_ptr<inspect_server> server_;
};

} // namespace deepcee::tools

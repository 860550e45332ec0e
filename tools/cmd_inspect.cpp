// deepcee inspect ADDR: attaches to a running job's inspection endpoint and shows it live in
// the terminal, as htop does. `deepcee run` and the coordinator's node of `deepcee node`
// print the endpoint as `inspect: http://HOST:PORT` (https:// on jobs with certificates:
// --ca then names the job's CA). --once prints one snapshot, --json
// streams JSON lines.
#include "runtime/base/errors.hpp"
#include "runtime/io/job_token.hpp"
#include "runtime/watch/inspect_view.hpp"
#include "tools/commands.hpp"
#include "tools/inspect_client.hpp"
#include "tools/terminal_screen.hpp"
#include "tools/watch_credential.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

namespace deepcee::tools {
namespace {

struct inspect_options {
  std::string address;
  bool once = false;
  bool json = false;
  double interval_s = 1.0;
  std::optional<std::string> token_file;
  std::optional<std::string> ca;
  bool print_credential = false;
};

/// The secret given: --token-file, else the environment's; empty when none is set. A job's
/// token or a watch credential.
std::string secret_of(const std::optional<std::string>& file,
                      const runtime::token_environment& token_env) {
  std::optional<std::filesystem::path> flag;
  if (file)
    flag = *file;
  return runtime::find_job_token(flag, std::nullopt, token_env).value_or("");
}

void print_lines(const std::vector<std::string>& lines) {
  for (const auto& l : lines)
    std::printf("%s\n", l.c_str());
  std::fflush(stdout);
}

/// The latest snapshot the stream brought, shared with the drawing thread.
struct latest_snapshot {
  std::mutex mutex;
  std::optional<runtime::job_snapshot> snapshot;
  std::string ended; ///< why the stream ended ("" while it runs)
  bool fresh = false;
};

/// The stream in a thread of its own, the screen in this one: keys switch pages, q leaves.
int live_view(inspect_client& client, runtime::job_snapshot first, const inspect_options& o) {
  latest_snapshot latest;
  latest.snapshot = std::move(first);
  std::atomic<bool> leaving{false};
  std::thread follower([&] {
    std::string why = "the job's endpoint closed the stream (the job ended)";
    try {
      client.stream([&](const std::string&, runtime::job_snapshot s) {
        std::lock_guard lock(latest.mutex);
        latest.snapshot = std::move(s);
        latest.fresh = true;
        return !leaving.load();
      });
    } catch (const std::exception& e) {
      why = e.what();
    }
    std::lock_guard lock(latest.mutex);
    latest.ended = why;
    latest.fresh = true;
  });
  // Whatever ends the view, the stream thread is stopped and joined.
  struct join_follower {
    std::thread& t;
    std::atomic<bool>& leaving;
    inspect_client& client;
    ~join_follower() {
      leaving = true;
      client.stop();
      if (t.joinable())
        t.join();
    }
  } joiner{follower, leaving, client};

  terminal_screen screen;
  auto page = runtime::inspect_page::overview;
  const int wait_ms = std::max(20, static_cast<int>(o.interval_s * 1000));
  auto last_draw = std::chrono::steady_clock::time_point{};
  bool redraw = true;
  while (!screen.quit()) {
    const int k = screen.key(50);
    if (k == 'q' || k == 'Q')
      break;
    if (k >= '1' && k < '1' + runtime::inspect_page_count) {
      page = static_cast<runtime::inspect_page>(k - '1');
      redraw = true;
    } else if (k == '\t') {
      page = runtime::next_page(page);
      redraw = true;
    }
    if (screen.resized())
      redraw = true;
    const auto now = std::chrono::steady_clock::now();
    runtime::job_snapshot shown;
    runtime::inspect_frame frame;
    {
      std::lock_guard lock(latest.mutex);
      if (latest.fresh && now - last_draw >= std::chrono::milliseconds(wait_ms))
        redraw = true;
      if (!redraw)
        continue;
      latest.fresh = false;
      shown = *latest.snapshot;
      frame.status = latest.ended.empty() ? "" : latest.ended + "; q quits";
    }
    const auto [width, height] = screen.size();
    frame.width = width;
    frame.height = height;
    frame.address = client.url();
    screen.draw(runtime::render_page(shown, page, frame));
    last_draw = now;
    redraw = false;
  }
  screen.restore();
  return 0;
}

/// stdout not a terminal: one plain line per snapshot until the job ends.
int plain_lines(inspect_client& client, bool json) {
  client.stream([&](const std::string& line, runtime::job_snapshot s) {
    if (json)
      std::printf("%s\n", line.c_str());
    else
      std::printf("%s\n", runtime::summary_line(s).c_str());
    std::fflush(stdout);
    return true;
  });
  return 0;
}

int inspect(const inspect_options& o, const runtime::token_environment& token_env) {
  // Only the watch credential leaves this process: the job's token never crosses the wire.
  const auto credential = credential_to_send(secret_of(o.token_file, token_env));
  if (o.print_credential) {
    if (credential.empty())
      throw runtime::input_error("inspect --watch-credential: no token given (--token-file, "
                                 "DEEPCEE_TOKEN_FILE or DEEPCEE_TOKEN)");
    std::printf("%s\n", credential.c_str());
    return 0;
  }
  if (o.address.empty())
    throw runtime::input_error("inspect: ADDR is required (HOST:PORT of the job's endpoint)");
  std::optional<std::filesystem::path> ca;
  if (o.ca)
    ca = *o.ca;
  inspect_client client(o.address, credential, ca);
  try {
    if (o.json)
      return plain_lines(client, true);
    auto first = client.snapshot();
    if (o.once) {
      print_lines(runtime::render_all(first, {0, 0, client.url(), ""}));
      return 0;
    }
    if (!stdout_is_terminal())
      return plain_lines(client, false);
    return live_view(client, std::move(first), o);
  } catch (const inspect_failed& e) {
    std::fprintf(stderr, "deepcee inspect: %s\n", e.what());
    return 1;
  }
}

} // namespace

command_action add_inspect_command(CLI::App& app, const process_environment& env) {
  auto o = std::make_shared<inspect_options>();
  CLI::App* cmd = app.add_subcommand("inspect", "Watch a running job live (read-only)");
  cmd->add_option(
      "addr", o->address,
      "HOST:PORT of the job's inspection endpoint (`inspect: http://...` at its start)");
  cmd->add_flag("--once", o->once, "Print one snapshot as plain text and exit");
  cmd->add_flag("--json", o->json, "Stream each snapshot as a JSON line (for scripts)");
  cmd->add_option("--interval", o->interval_s, "Seconds between redraws of the live view")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  cmd->add_option("--token-file", o->token_file,
                  "File holding the job's token or its watch credential (else "
                  "DEEPCEE_TOKEN_FILE or DEEPCEE_TOKEN); only the watch credential is sent");
  cmd->add_option("--ca", o->ca,
                  "The job's CA certificate ([security] ca): connect over HTTPS and accept only "
                  "a node certificate of that CA (for jobs with certificates: `inspect: "
                  "https://...`)");
  cmd->add_flag("--watch-credential", o->print_credential,
                "Print the watch credential of the job's token and exit (for Prometheus or the "
                "web page: it can read the job, never steer it)");
  return [o, token_env = env.token] { return inspect(*o, token_env); };
}

} // namespace deepcee::tools

#pragma once

#include "runtime/watch/job_snapshot.hpp"

#include <string>
#include <string_view>
#include <vector>

/// What `deepcee inspect` draws: a snapshot as lines of text for one page (view) and one
/// terminal size. Pure: the terminal handling lives in tools/cmd_inspect.cpp.
namespace deepcee::runtime {

enum class inspect_page { overview, stages, devices, links, adapter };
inline constexpr int inspect_page_count = 5;

std::string_view page_name(inspect_page p);
/// The page after `p`, wrapping (Tab).
inspect_page next_page(inspect_page p);

struct inspect_frame {
  int width = 100;     ///< characters per line; longer lines are cut
  int height = 0;      ///< lines at most (0: no limit); the last one says what was left out
  std::string address; ///< where the inspector is attached, for the title
  std::string status;  ///< a line under the title ("" for none), e.g. the endpoint closed
};

/// The title, the page tabs and the page.
std::vector<std::string> render_page(const job_snapshot& s, inspect_page page,
                                     const inspect_frame& frame);

/// Every page one after the other, without the tabs (`deepcee inspect --once`).
std::vector<std::string> render_all(const job_snapshot& s, const inspect_frame& frame);

/// One plain line per snapshot (stdout not a terminal).
std::string summary_line(const job_snapshot& s);

/// `values` in `width` characters of ASCII levels (" .:-=+*#"), the newest rightmost; NaN
/// shows as a space.
std::string sparkline(const std::vector<double>& values, int width);

/// A stage's ops over [from_s, to_s] in `width` cells: each cell shows the op (F, B, W) that
/// covers most of it, '.' where none runs.
std::string op_timeline(const std::vector<timeline_op>& ops, double from_s, double to_s, int width);

} // namespace deepcee::runtime

#pragma once

#include <string_view>

/// The inspection endpoint's web page, embedded at build time (cmake/embed_files.cmake): the
/// page and its script from tools/web/, and Chart.js from Debian's libjs-chart.js, so the
/// node serves everything the page needs and the page fetches nothing from elsewhere.
namespace deepcee::tools::web_assets {

extern const std::string_view page_html; ///< tools/web/inspect_page.html, served at /
extern const std::string_view page_js;   ///< tools/web/inspect_page.js
extern const std::string_view chart_js;  ///< chart.min.js (Chart.js 3)

} // namespace deepcee::tools::web_assets

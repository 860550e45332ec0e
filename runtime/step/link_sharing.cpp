#include "runtime/step/link_sharing.hpp"

#include <algorithm>
#include <map>

namespace deepcee::runtime {

std::vector<shared_link> shared_links(const virtual_cluster& vc, const plan& p) {
  std::map<int, std::vector<int>> senders;
  int flat = 0;
  for (size_t pi = 0; pi < p.pipelines.size(); ++pi)
    for (size_t si = 0; si < p.pipelines[pi].stages.size(); ++si, ++flat) {
      const auto& st = vc.stage(static_cast<int>(pi), static_cast<int>(si));
      for (const auto* parts : {&st.act_parts, &st.grad_parts})
        for (const auto& part : *parts) {
          auto& s = senders[part.link];
          if (s.empty() || s.back() != flat)
            s.push_back(flat);
        }
    }
  std::vector<shared_link> out;
  for (auto& [link, s] : senders)
    if (s.size() > 1)
      out.push_back({link, std::move(s)});
  return out;
}

} // namespace deepcee::runtime

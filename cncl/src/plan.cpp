#include "plan.h"

#include <cassert>

namespace mlusim::cncl {

Plan::Plan(int ranks, std::size_t elem_bytes)
    : ranks_(ranks), elem_(elem_bytes), entry_(static_cast<std::size_t>(ranks)), last_(static_cast<std::size_t>(ranks)),
      last_send_(static_cast<std::size_t>(ranks)), incoming_(static_cast<std::size_t>(ranks)) {
  for (int r = 0; r < ranks; ++r) {
    Step m;
    m.rank = m.dst_rank = r;
    const std::size_t i = add(std::move(m));
    entry_[static_cast<std::size_t>(r)] = last_send_[static_cast<std::size_t>(r)] = i;
  }
}

std::size_t Plan::add(Step s) {
  for ([[maybe_unused]] std::size_t d : s.deps) assert(d < steps_.size() && "dependencies point backwards");
  const std::size_t i = steps_.size();
  const auto r = static_cast<std::size_t>(s.rank);
  if (s.lane == 1) {
    if (last_send_[r] == entry_[r]) s.deps.push_back(entry_[r]);  // first send: after the entry mark
    last_send_[r] = i;
  } else {
    last_[r] = i;
  }
  steps_.push_back(std::move(s));
  return i;
}

std::size_t Plan::copy(int rank, int dst_rank, std::uint64_t dst, std::uint64_t src, std::size_t elems,
                       std::vector<std::size_t> deps) {
  Step s;
  s.kind = Step::Kind::kCopy;
  s.rank = rank;
  s.dst_rank = dst_rank;
  s.dst = dst;
  s.src = src;
  s.bytes = elems * elem_;
  s.deps = std::move(deps);
  s.lane = dst_rank != rank ? 1 : 0;
  if (dst_rank != rank) s.deps.push_back(entry_[static_cast<std::size_t>(dst_rank)]);
  const std::size_t i = add(std::move(s));
  if (dst_rank != rank) incoming_[static_cast<std::size_t>(dst_rank)].push_back(i);
  return i;
}

std::size_t Plan::reduce(int rank, std::uint64_t dst, std::uint64_t src, std::size_t elems,
                         std::vector<std::size_t> deps) {
  Step s;
  s.kind = Step::Kind::kReduce;
  s.rank = s.dst_rank = rank;
  s.dst = dst;
  s.src = src;
  s.bytes = elems * elem_;
  s.deps = std::move(deps);
  return add(std::move(s));
}

void Plan::finish() {
  for (int r = 0; r < ranks_; ++r) {
    Step m;
    m.rank = m.dst_rank = r;
    m.deps = incoming_[static_cast<std::size_t>(r)];
    if (last_send_[static_cast<std::size_t>(r)] != entry_[static_cast<std::size_t>(r)])
      m.deps.push_back(last_send_[static_cast<std::size_t>(r)]);
    add(std::move(m));
  }
}

}  // namespace mlusim::cncl

#include "softmax/reduction_tiling.h"

#include <algorithm>

namespace mlusim::mlu::nn {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::int64_t ReductionTiling::reduced() const {
  std::int64_t n = 1;
  for (int i = r_begin; i < i_begin; ++i) n *= dims[i];
  return n;
}

std::int64_t ReductionTiling::slices() const {
  std::int64_t n = 1;
  for (int i = 0; i < ndim; ++i)
    if (i < r_begin || i >= i_begin) n *= dims[i];
  return n;
}

std::int64_t ReductionTiling::groups() const {
  std::int64_t n = 1;
  for (int i = 0; i < r_begin - 1; ++i) n *= dims[i];
  for (int i = i_begin; i < ndim - 1; ++i) n *= dims[i];
  return n * ceil_div(dims[r_begin - 1], ob) * ceil_div(dims[ndim - 1], ic);
}

std::int64_t ReductionTiling::chunks() const {
  if (!multipass()) return 1;
  std::int64_t n = 1;
  for (int i = r_begin; i < i_begin - 1; ++i) n *= dims[i];
  return n * ceil_div(dims[i_begin - 1], rc);
}

std::size_t ReductionTiling::max_rows() const {
  return static_cast<std::size_t>(multipass() ? std::min(rc, dims[i_begin - 1]) : reduced());
}

TileBox ReductionTiling::box(std::int64_t group, std::int64_t chunk) const {
  TileBox t;
  Box& b = t.box;
  // Group index, innermost digit first: inner block, inner prefix dims, outer block, outer prefix.
  const std::int64_t ic_blocks = ceil_div(dims[ndim - 1], ic);
  b.start[ndim - 1] = group % ic_blocks * ic;
  group /= ic_blocks;
  for (int i = ndim - 2; i >= i_begin; --i) b.start[i] = group % dims[i], group /= dims[i];
  const std::int64_t ob_blocks = ceil_div(dims[r_begin - 1], ob);
  b.start[r_begin - 1] = group % ob_blocks * ob;
  group /= ob_blocks;
  for (int i = r_begin - 2; i >= 0; --i) b.start[i] = group % dims[i], group /= dims[i];
  for (int i = 0; i < r_begin; ++i) b.extent[i] = 1;
  for (int i = i_begin; i < ndim; ++i) b.extent[i] = 1;
  b.extent[r_begin - 1] = std::min(ob, dims[r_begin - 1] - b.start[r_begin - 1]);
  b.extent[ndim - 1] = std::min(ic, dims[ndim - 1] - b.start[ndim - 1]);
  if (!multipass()) {
    for (int i = r_begin; i < i_begin; ++i) b.start[i] = 0, b.extent[i] = dims[i];
  } else {
    const std::int64_t rc_blocks = ceil_div(dims[i_begin - 1], rc);
    b.start[i_begin - 1] = chunk % rc_blocks * rc;
    b.extent[i_begin - 1] = std::min(rc, dims[i_begin - 1] - b.start[i_begin - 1]);
    chunk /= rc_blocks;
    for (int i = i_begin - 2; i >= r_begin; --i) b.start[i] = chunk % dims[i], b.extent[i] = 1, chunk /= dims[i];
  }
  std::int64_t nr = 1;
  for (int i = r_begin; i < i_begin; ++i) nr *= b.extent[i];
  t.shape = {static_cast<std::size_t>(b.extent[r_begin - 1]), static_cast<std::size_t>(nr),
             static_cast<std::size_t>(b.extent[ndim - 1])};
  return t;
}

Box ReductionTiling::stats_box(std::int64_t group) const { return stats_box_of(box(group, 0).box); }

Box ReductionTiling::stats_box_of(const Box& tile_box) const {
  Box b = tile_box;
  for (int i = r_begin; i < i_begin; ++i) b.start[i] = 0, b.extent[i] = 1;
  return b;
}

std::vector<TileBox> ReductionTiling::pass_tiles(std::size_t task, std::size_t tasks) const {
  std::vector<TileBox> tiles;
  const std::size_t groups_n = static_cast<std::size_t>(groups());
  const bool rows_only = r_begin == 1 && dims[ndim - 1] == 1 && i_begin == ndim - 1 && !multipass();
  if (!rows_only || ob < 4) {
    for (std::size_t g = groups_n * task / tasks; g < groups_n * (task + 1) / tasks; ++g)
      tiles.push_back(box(static_cast<std::int64_t>(g), 0));
    return tiles;
  }
  // This task's rows: the rows of its groups, as the uniform split would give it.
  const std::int64_t rows = dims[0];
  const std::int64_t r0 = std::min(rows, static_cast<std::int64_t>(groups_n * task / tasks) * ob);
  const std::int64_t r1 = std::min(rows, static_cast<std::int64_t>(groups_n * (task + 1) / tasks) * ob);
  // One half-size tile at each end of the task's rows.
  const std::int64_t half = std::max<std::int64_t>(1, ob / 2);
  std::vector<std::int64_t> sizes;
  const std::int64_t share = r1 - r0;
  if (share >= 2 * half + ob) {
    const std::int64_t middle = share - 2 * half, n_mid = (middle + ob - 1) / ob;
    sizes.push_back(half);
    for (std::int64_t i = 0; i < n_mid; ++i) sizes.push_back(middle * (i + 1) / n_mid - middle * i / n_mid);
    sizes.push_back(half);
  } else {
    for (std::int64_t r = 0; r < share; r += ob) sizes.push_back(std::min(ob, share - r));
  }
  TileBox t = box(0, 0);
  std::int64_t at = r0;
  for (std::int64_t n : sizes) {
    t.box.start[0] = at, t.box.extent[0] = n;
    t.shape.ob = static_cast<std::size_t>(n);
    tiles.push_back(t);
    at += n;
  }
  return tiles;
}

std::optional<ReductionTiling> plan_reduction(const TensorView& shape, int r_begin, int i_begin, std::size_t nram_bytes,
                                              std::uint32_t cores, std::int64_t target_elements,
                                              const NramFootprint& footprint) {
  ReductionTiling t;
  t.ndim = shape.ndim;
  t.r_begin = r_begin;
  t.i_begin = i_begin;
  t.dims = shape.dims;
  const std::int64_t n = t.reduced();
  const std::int64_t outer_last = t.dims[r_begin - 1], inner_last = t.dims[t.ndim - 1];
  const std::int64_t last_reduced = t.dims[i_begin - 1];
  auto fits = [&](std::int64_t ob, std::int64_t nr, std::int64_t ic) {
    return footprint({static_cast<std::size_t>(ob), static_cast<std::size_t>(nr), static_cast<std::size_t>(ic)}) <=
           nram_bytes;
  };
  // Largest v in [1, hi] with ok(v) (ok is monotone: true up to some point); 0 if none.
  auto largest = [](std::int64_t hi, const std::function<bool(std::int64_t)>& ok) {
    std::int64_t lo = 0;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo + 1) / 2;
      if (ok(mid))
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  };
  if (fits(1, n, 1)) {
    // Columns: as many as fit; split further only while there are fewer groups than cores, keeping
    // at least 32 contiguous columns per tile (long DMA segments, full VFU vectors).
    t.ic = fits(1, n, inner_last) ? inner_last : largest(inner_last, [&](std::int64_t ic) { return fits(1, n, ic); });
    const std::int64_t whole_groups = t.groups() / ((inner_last + t.ic - 1) / t.ic);
    if (whole_groups < static_cast<std::int64_t>(cores) && inner_last > 32) {
      const std::int64_t blocks = (static_cast<std::int64_t>(cores) + whole_groups - 1) / whole_groups;
      t.ic = std::min(t.ic, std::max<std::int64_t>(32, (inner_last + blocks - 1) / blocks));
    }
    if (t.ic == inner_last) {
      const std::int64_t want = std::max<std::int64_t>(1, target_elements / std::max<std::int64_t>(1, n * t.ic));
      const std::int64_t most = largest(std::min(outer_last, want), [&](std::int64_t ob) { return fits(ob, n, t.ic); });
      // Among [most/2, most], the row count whose busiest task has the fewest rows (tasks take
      // whole tiles), preferring larger tiles on ties.
      const std::int64_t other = t.groups();  // groups with ob = 1, divided below
      std::int64_t best_load = -1;
      for (std::int64_t ob = most; ob >= std::max<std::int64_t>(1, most / 2); --ob) {
        const std::int64_t groups = other / outer_last * ((outer_last + ob - 1) / ob);
        const std::int64_t load = (groups + cores - 1) / std::max<std::uint32_t>(cores, 1) * ob;
        if (best_load < 0 || load < best_load) best_load = load, t.ob = ob;
      }
    }
    return t;
  }
  // Multi-pass: a few columns at a time (row mode: one), chunks of the last reduced dim.
  t.ic = std::min<std::int64_t>(inner_last, 64);
  while (t.ic > 1 && !fits(1, 1, t.ic)) t.ic /= 2;
  t.rc = largest(last_reduced, [&](std::int64_t rc) { return fits(1, rc, t.ic); });
  if (t.rc == 0) return std::nullopt;
  return t;
}

std::int64_t target_tile_elements(std::int64_t total_elements, std::uint32_t cores) {
  return std::max<std::int64_t>(4096, total_elements / (std::int64_t{4} * std::max<std::uint32_t>(cores, 1)));
}

PassSchedule::PassSchedule(const ReductionTiling& t, std::pair<std::size_t, std::size_t> groups, std::size_t passes,
                           std::size_t task, std::size_t tasks)
    : t_(t),
      first_group_(groups.first),
      chunks_(static_cast<std::size_t>(t.chunks())),
      per_group_(passes * static_cast<std::size_t>(t.chunks())) {
  if (t.multipass()) {
    steps_ = (groups.second - groups.first) * per_group_;
  } else {
    single_ = t.pass_tiles(task, tasks);
    steps_ = single_.size();
  }
}

PassStep PassSchedule::at(std::size_t s) const {
  if (!t_.multipass()) return PassStep{-1, single_[s], 0, 0};
  const std::size_t k = s % per_group_;
  const auto group = static_cast<std::int64_t>(first_group_ + s / per_group_);
  return PassStep{group, t_.box(group, static_cast<std::int64_t>(k % chunks_)), k / chunks_, k % chunks_};
}

}  // namespace mlusim::mlu::nn

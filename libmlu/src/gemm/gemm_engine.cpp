#include "gemm/gemm_engine.h"

#include <algorithm>

#include "common/error.h"
#include "common/int_math.h"
#include "common/launch.h"
#include "gemm/epilogue.h"
#include "gemm/splitk_reduce.h"

namespace mlusim::mlu::gemm {

using namespace mlusim::dev;
using sim::DType;

std::int64_t BatchIndexer::offset(std::size_t b) const {
  std::int64_t off = 0;
  for (std::size_t i = dims.size(); i-- > 0;) {
    const auto d = static_cast<std::size_t>(dims[i]);
    off += static_cast<std::int64_t>(b % d) * strides[i];
    b /= d;
  }
  return off;
}

Span split_units(std::size_t total, std::size_t parts, std::size_t unit, std::size_t index) {
  const std::size_t units = (total + unit - 1) / unit;
  const std::size_t base = units / parts, extra = units % parts;
  const std::size_t first = index * base + std::min(index, extra);
  const std::size_t count = base + (index < extra ? 1 : 0);
  const std::size_t begin = std::min(total, first * unit), end = std::min(total, (first + count) * unit);
  return {begin, end - begin};
}

namespace {

// The part of a cluster tile one core computes.
struct CoreTile {
  std::size_t r0 = 0, nr = 0, c0 = 0, nc = 0;
  bool empty() const { return nr == 0 || nc == 0; }
};

// One depth step of one tile.
struct Step {
  const TileTask* tile = nullptr;
  DepthStep depth;
  bool first = false, last = false;  // first / last depth step of its tile
  std::size_t strips = 0;            // strip iterations (the tallest core of the cluster)
  std::size_t first_iteration = 0;   // global index of its first strip iteration
};

class EngineRun {
 public:
  explicit EngineRun(const EngineJob& job)
      : job_(job), p_(job.problem), plan_(job.plan), out_(job.out), es_(sim::dtype_size(p_.in)) {
    const std::size_t cluster = task_id() / core_dim();
    std::size_t iterations = 0;
    if (cluster < plan_.schedule.size())
      for (const TileTask& t : plan_.schedule[cluster]) {
        const std::size_t rows0 = split_units(t.nr, plan_.pr, plan_.row_unit, 0).size;
        const std::size_t strips = std::max<std::size_t>(1, (rows0 + plan_.ms - 1) / plan_.ms);
        const bool first_tile = &t == &plan_.schedule[cluster].front();
        const std::vector<DepthStep> ds = depth_steps(p_, plan_.kc, t.k_begin, t.k_end, first_tile);
        for (std::size_t i = 0; i < ds.size(); ++i) {
          steps_.push_back({&t, ds[i], i == 0, i + 1 == ds.size(), strips, iterations});
          iterations += strips;
        }
      }
    iterations_ = iterations;
    buf_ = engine_buffers(p_, plan_, *job_.y, out_.partial, core_dim());
    // SRAM in the same order on every participant of the cluster (so offsets agree).
    for (std::size_t i = 0; i < buf_.x_ring; ++i) ring_.push_back(alloc(Space::kSram, buf_.x_ring_slot));
    for (std::size_t i = 0; i < buf_.y_panels; ++i) y_panel_.push_back(alloc(Space::kSram, buf_.y_panel));
    for (std::size_t i = 0; i < buf_.homes; ++i) home_.push_back(alloc(Space::kSram, buf_.home));
  }

  void run() {
    if (is_memory_core()) {
      if (plan_.x_staged || plan_.y_staged) run_memory_core();
      return;
    }
    run_compute_core();
  }

 private:
  // Iteration g of this cluster: its step and strip.
  struct Iteration {
    std::size_t step = 0, strip = 0;
  };
  Iteration iteration(std::size_t g) const {
    std::size_t lo = 0, hi = steps_.size();
    while (hi - lo > 1) {
      const std::size_t mid = (lo + hi) / 2;
      (steps_[mid].first_iteration <= g ? lo : hi) = mid;
    }
    return {lo, g - steps_[lo].first_iteration};
  }

  CoreTile core_tile(const TileTask& t, std::size_t core) const {
    const Span r = split_units(t.nr, plan_.pr, plan_.row_unit, core / plan_.pc);
    const Span c = split_units(t.nc, plan_.pc, plan_.col_unit, core % plan_.pc);
    return {t.r0 + r.begin, r.size, t.c0 + c.begin, c.size};
  }
  // Rows of strip i of a core tile (0 when the core tile is shorter).
  std::size_t strip_rows(const CoreTile& ct, std::size_t i) const {
    return i * plan_.ms < ct.nr ? std::min(plan_.ms, ct.nr - i * plan_.ms) : 0;
  }

  // ---- memory core ----
  // X: iteration g's strips (one per core row) go to ring slot g % ring; the cores copy them out
  // during iteration g - 1 (their prefetch). The memory core waits for its copies only every
  // second iteration and then stages the next two slots, so a staging copy has two iterations to
  // land (ring >= 5), and never overwrites a slot before the barrier after its readers.
  // Y: step s's panel is read during step s - 1 (the cores' WRAM copies), so it is staged in parts
  // over step s - 2, into slot s % 2; the last iteration of a step waits for the whole panel.
  // Step 0's panel is read right after the first barrier, before iteration 0: Y(2) therefore
  // starts at iteration 1 of step 0. Y(1) is staged during iteration 0 (the cores then copy it
  // from iteration 1 on) unless step 0 has a single iteration: then it is in the prologue.
  static constexpr std::size_t kStagePeriod = 2;
  void stage_ring(std::size_t g) {
    if (!plan_.x_staged || g >= iterations_) return;
    const Iteration it = iteration(g);
    const Step& st = steps_[it.step];
    for (unsigned q = 0; q < plan_.pr; ++q) {
      const CoreTile ct = core_tile(*st.tile, q * plan_.pc);
      const std::size_t rows = strip_rows(ct, it.strip);
      if (rows == 0) continue;
      const Addr dst = ring_[g % ring_.size()].offset(i64(q * plan_.ms * st.depth.kc * es_));
      job_.x->load(dst, st.tile->batch, ct.r0 + it.strip * plan_.ms, rows, st.depth.k0, st.depth.kc);
    }
  }
  void stage_panel(std::size_t s, std::size_t piece, std::size_t pieces) {
    if (!plan_.y_staged || s >= steps_.size()) return;
    const Step& st = steps_[s];
    job_.y->stage(y_panel_[s % 2], st.tile->batch, st.tile->c0, st.tile->nc, st.depth.k0, st.depth.kc, piece, pieces);
  }
  void run_memory_core() {
    const std::size_t ring = ring_.size();
    // Before the first barrier: X for the first ring - 1 iterations and the first Y panel(s).
    std::size_t staged = 0;  // ring slots issued so far (iterations 0 .. staged - 1)
    if (plan_.x_staged)
      while (staged + 1 < ring) stage_ring(staged++);
    stage_panel(0, 0, 1);
    if (!y1_deferred()) stage_panel(1, 0, 1);
    sync_io();
    sync_cluster();
    for (std::size_t g = 0; g < iterations_; ++g) {
      const Iteration it = iteration(g);
      const std::size_t strips = steps_[it.step].strips;
      if (plan_.x_staged && g % kStagePeriod == 0) {
        sync_io();
        while (staged <= g + ring - 2 + kStagePeriod) stage_ring(staged++);
      }
      if (g == 0 && y1_deferred()) {
        stage_panel(1, 0, 1);
        sync_io();  // in before the cores copy from it (iteration 1 on)
      }
      // Y(s + 2) in parts over iterations [first, strips - 1), or whole at the step's last.
      const std::size_t first = it.step == 0 ? 1 : 0;
      const std::size_t spread = strips > first + 1 ? strips - 1 - first : 0;
      if (spread > 0 && it.strip >= first && it.strip < first + spread)
        stage_panel(it.step + 2, it.strip - first, spread);
      if (spread == 0 && it.strip + 1 == strips) stage_panel(it.step + 2, 0, 1);
      if (it.strip + 1 == strips) sync_io();  // the whole panel is in before the next step starts
      sync_cluster();
    }
  }
  bool y1_deferred() const { return plan_.y_staged && !steps_.empty() && steps_[0].strips > 1; }

  // ---- compute cores ----
  void allocate_core_buffers() {
    acc_ = alloc(Space::kNram, buf_.acc);
    for (std::size_t i = 0; i < buf_.b_slots; ++i) b_slot_.push_back(alloc(Space::kNram, buf_.b_slot));
    xbuf_[0] = alloc(Space::kNram, buf_.xbuf);
    xbuf_[1] = alloc(Space::kNram, buf_.xbuf);
    const Space ys = buf_.ybuf_in_nram ? Space::kNram : Space::kWram;
    ybuf_[0] = alloc(ys, buf_.ybuf);
    ybuf_[1] = alloc(ys, buf_.ybuf);
    if (buf_.out_stage) epi_.out_stage = alloc(Space::kNram, buf_.out_stage);
    if (buf_.c_old) epi_.c_old = alloc(Space::kNram, buf_.c_old);
    if (buf_.c_old32) epi_.c_old32 = alloc(Space::kNram, buf_.c_old32);
    if (buf_.bias_raw) epi_.bias_raw = alloc(Space::kNram, buf_.bias_raw);
    if (buf_.bias32) epi_.bias32 = alloc(Space::kNram, buf_.bias32);
    if (buf_.affine) epi_.affine = alloc_affine_buffers(plan_.ms, plan_.nt);
    if (buf_.act_tmp) epi_.act_tmp = alloc(Space::kNram, buf_.act_tmp);
    if (buf_.zeros) {
      scratch_.zeros = alloc(Space::kNram, buf_.zeros);
      scratch_.zero_bytes = buf_.zeros;
      vec_fill(DType::kInt8, scratch_.zeros, 0.0, buf_.zeros);
    }
  }

  // Where strip i's accumulator lives during an iteration: NRAM for the first a_strips strips,
  // else one of the streaming slots (the SRAM home holds it between depth steps).
  bool streamed(std::size_t i) const { return i >= plan_.a_strips; }
  Addr acc_of(std::size_t i, std::size_t nc, std::size_t g) const {
    return streamed(i) ? b_slot_[g % b_slot_.size()] : acc_.offset(i64(i * plan_.ms * nc) * 4);
  }
  Addr home_of(std::size_t i) const {
    return home_[core_id()].offset(i64((i - plan_.a_strips) * plan_.ms * plan_.nt) * 4);
  }

  // Issues the copies iteration g needs before its intrinsic: its X strip into xbuf[g % 2] and
  // (streamed strip, not the first step) its accumulator into its slot.
  void prefetch(std::size_t g) {
    if (g >= iterations_) return;
    const Iteration it = iteration(g);
    const Step& st = steps_[it.step];
    const CoreTile ct = core_tile(*st.tile, core_id());
    const std::size_t rows = strip_rows(ct, it.strip);
    if (rows == 0 || ct.nc == 0) return;
    const Addr dst = xbuf_[g % 2];
    if (plan_.x_staged) {
      const Addr src = ring_[g % ring_.size()].offset(i64((core_id() / plan_.pc) * plan_.ms * st.depth.kc * es_));
      memcpy_async(dst, src, rows * st.depth.kc * es_, Dir::kSram2Nram);
    } else {
      job_.x->load(dst, st.tile->batch, ct.r0 + it.strip * plan_.ms, rows, st.depth.k0, st.depth.kc);
    }
    if (streamed(it.strip) && !st.first)
      memcpy_async(acc_of(it.strip, ct.nc, g), home_of(it.strip), rows * ct.nc * 4, Dir::kSram2Nram);
  }

  // Part `piece` of `pieces` of step s's Y block into ybuf[s % 2].
  void load_y_piece(std::size_t s, std::size_t piece, std::size_t pieces) {
    const Step& st = steps_[s];
    const CoreTile ct = core_tile(*st.tile, core_id());
    if (ct.empty()) return;
    const StagedPanel panel{plan_.y_staged ? y_panel_[s % 2] : Addr{}, st.tile->c0, st.tile->nc};
    job_.y->load(ybuf_[s % 2], st.tile->batch, ct.c0, ct.nc, st.depth.k0, st.depth.kc, piece, pieces,
                 plan_.y_staged ? &panel : nullptr, scratch_);
  }

  void partial_store(const TileTask& t, Addr acc, std::size_t r0, std::size_t nr, std::size_t c0, std::size_t nc) {
    const std::uint64_t row = (t.part * out_.batches + t.batch) * out_.rows + r0;
    const Addr dst{Space::kGdram, out_.partial_base + (row * out_.cols + c0) * 4};
    const CopyShape shape =
        nc == out_.cols ? CopyShape{nr * nc * 4} : CopyShape{nc * 4, nr, i64(out_.cols) * 4, i64(nc) * 4};
    memcpy_strided_async(dst, acc, shape, Dir::kNram2Gdram);
  }

  void run_compute_core() {
    allocate_core_buffers();
    const bool barriers = plan_.x_staged || plan_.y_staged;
    // What the first iteration reads straight from GDRAM loads while the memory core stages.
    if (iterations_ > 0 && !plan_.y_staged) load_y_piece(0, 0, 1);
    if (iterations_ > 0 && !plan_.x_staged) prefetch(0);
    if (barriers) sync_cluster();  // the first ring slots and Y panels are staged
    if (iterations_ > 0) {
      if (plan_.y_staged) load_y_piece(0, 0, 1);
      if (plan_.x_staged) prefetch(0);
      sync_io();
    }
    // NRAM accumulator bytes an outstanding store may still read (fp32 results leave from there).
    std::uint64_t store_lo = 0, store_hi = 0;
    for (std::size_t g = 0; g < iterations_; ++g) {
      const Iteration it = iteration(g);
      const Step& st = steps_[it.step];
      const CoreTile ct = core_tile(*st.tile, core_id());
      const std::size_t rows = strip_rows(ct, it.strip);
      const bool work = rows > 0 && ct.nc > 0;
      // Copies for the next iteration and this step's share of the next step's Y block.
      prefetch(g + 1);
      // The next step's Y block in parts (step 0 copies Y(1) from iteration 1 on when its panel
      // is staged during iteration 0).
      if (it.step + 1 < steps_.size()) {
        if (it.step == 0 && y1_deferred()) {
          if (it.strip > 0) load_y_piece(1, it.strip - 1, st.strips - 1);
        } else {
          load_y_piece(it.step + 1, it.strip, st.strips);
        }
      }
      const bool epilogue = st.last && !out_.partial && work;
      const std::size_t r0 = ct.r0 + it.strip * plan_.ms;
      if (epilogue && it.strip == 0 && out_.bias && !out_.bias_per_row)
        prepare_col_bias(out_, st.tile->batch, ct.c0, ct.nc, plan_.ms, epi_);
      if (epilogue && out_.beta != 0.0f) load_c_old(out_, st.tile->batch, r0, rows, ct.c0, ct.nc, epi_);
      if (epilogue && out_.bias && out_.bias_per_row) load_row_bias(out_, st.tile->batch, r0, rows, epi_);
      if (epilogue && out_.affine.enabled) load_row_affine(out_, st.tile->batch, r0, rows, epi_);
      const Addr acc = work ? acc_of(it.strip, ct.nc, g) : Addr{};
      const std::uint64_t acc_bytes = rows * ct.nc * 4;
      if (work && acc.value < store_hi && store_lo < acc.value + acc_bytes) sync_io();  // e.g. one-strip tiles
      if (work) {
        if (plan_.on_tfu)
          matmul(p_.in, DType::kFloat32, acc, xbuf_[g % 2], ybuf_[it.step % 2], rows, st.depth.kc, ct.nc,
                 job_.y->n_major(), !st.first);
        else
          vec_matmul(p_.in, DType::kFloat32, acc, xbuf_[g % 2], ybuf_[it.step % 2], rows, st.depth.kc, ct.nc,
                     job_.y->n_major(), !st.first);
      }
      sync_io();
      store_lo = store_hi = 0;
      if (work && st.last) {
        if (out_.partial)
          partial_store(*st.tile, acc, r0, rows, ct.c0, ct.nc);
        else
          finish_block(out_, acc, st.tile->batch, r0, rows, ct.c0, ct.nc, epi_);
        store_lo = acc.value, store_hi = acc.value + acc_bytes;
      } else if (work && streamed(it.strip)) {
        memcpy_async(home_of(it.strip), acc, rows * ct.nc * 4, Dir::kNram2Sram);
      }
      if (barriers) sync_cluster();
    }
    sync_io();
  }

  const EngineJob& job_;
  const GemmProblem& p_;
  const GemmPlan& plan_;
  const OutputSpec& out_;
  const std::size_t es_;
  std::vector<Step> steps_;
  std::size_t iterations_ = 0;
  EngineBuffers buf_;
  std::vector<Addr> ring_, y_panel_, home_;
  Addr acc_, xbuf_[2], ybuf_[2];
  std::vector<Addr> b_slot_;
  EpilogueBuffers epi_;
  LoadScratch scratch_;
};

}  // namespace

void engine_kernel(const EngineJob& job) { EngineRun(job).run(); }

std::size_t splitk_workspace_bytes(const GemmProblem& p, const GemmPlan& plan) {
  if (plan.ksplit <= 1) return 0;
  return plan.ksplit * p.batch * p.rows * p.cols * 4;
}

Status run_engine(Handle& h, const std::string& name, std::shared_ptr<EngineJob> job, void* workspace,
                  std::size_t workspace_bytes, std::uint32_t* kernels) {
  const std::size_t need = splitk_workspace_bytes(job->problem, job->plan);
  MLU_CHECK(workspace_bytes >= need && (need == 0 || workspace != nullptr), Status::kBadParam,
            name + ": workspace of " + std::to_string(workspace_bytes) + " bytes is too small (needs " +
                std::to_string(need) + ")");
  OutputSpec final_out = job->out;
  if (job->plan.ksplit > 1) {
    job->out.partial = true;
    job->out.partial_base = reinterpret_cast<std::uintptr_t>(workspace);
    job->out.batches = job->problem.batch;
    job->out.rows = job->problem.rows;
    job->out.cols = job->problem.cols;
  }
  // Tiles go to clusters 0, 1, ... first (plan_gemm's schedule), so the busy ones are a prefix.
  std::size_t busy = 0;
  for (const auto& s : job->plan.schedule) busy += s.empty() ? 0 : 1;
  *kernels = 0;
  if (busy == 0) return Status::kSuccess;
  const unsigned cpc = h.cores_per_cluster();
  MLU_RETURN_IF_ERROR(launch(
      h, name, [job] { engine_kernel(*job); }, cnrtDim3_t{static_cast<unsigned>(busy) * cpc, 1, 1},
      cnrtFuncTypeUnion1));
  *kernels = 1;
  if (job->plan.ksplit > 1) {
    MLU_RETURN_IF_ERROR(launch_splitk_reduce(h, name + "_reduce", final_out, job->out.partial_base, job->plan.ksplit,
                                             job->problem.batch, job->problem.rows, job->problem.cols));
    *kernels = 2;
  }
  return Status::kSuccess;
}

}  // namespace mlusim::mlu::gemm

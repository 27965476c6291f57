// The device random generators (CUDA twin: aten/src/ATen/cuda/CUDAGeneratorImpl.cpp): one default
// generator per device plus any number made by torch.Generator(device="mlu"). Each is a
// Philox-style (seed, offset) pair: a random kernel reserves `count` numbers by taking the
// current offset and advancing it, and libmlu's counter-based generator derives number i of the
// stream from (seed, offset + i), so results do not depend on how the kernel is tiled.
//
// State tensors (torch.mlu.get_rng_state) are 16 bytes as CUDA's: seed then offset, both uint64
// in host byte order.
#include <cstring>
#include <deque>
#include <mutex>
#include <random>

#include <ATen/Utils.h>
#include <ATen/core/Generator.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/ops/empty.h>
#include <c10/core/GeneratorImpl.h>
#include <c10/core/TensorImpl.h>

#include "backend/internal.h"
#include "mlusim/torch/api.h"
#include "mlusim/torch/device.h"

namespace mlusim::bridge {
namespace {

constexpr std::size_t kStateBytes = 2 * sizeof(std::uint64_t);

// Guarded by GeneratorImpl::mutex_ (as CUDA's generator: callers lock it).
class MluGeneratorImpl final : public c10::GeneratorImpl {
 public:
  explicit MluGeneratorImpl(c10::DeviceIndex device, std::uint64_t seed = kDefaultSeed)
      : c10::GeneratorImpl(c10::Device(kDeviceType, device), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        seed_(seed) {}

  static c10::DeviceType device_type() { return kDeviceType; }

  void set_current_seed(std::uint64_t seed) override {
    seed_ = seed;
    offset_ = 0;
  }
  std::uint64_t current_seed() const override { return seed_; }
  void set_offset(std::uint64_t offset) override { offset_ = offset; }
  std::uint64_t get_offset() const override { return offset_; }
  // A non-deterministic seed (torch.Generator.seed()).
  std::uint64_t seed() override {
    std::random_device rd;
    const std::uint64_t s = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    set_current_seed(s);
    return s;
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    at::Tensor state = at::empty({static_cast<std::int64_t>(kStateBytes)}, at::TensorOptions().dtype(at::kByte));
    const std::uint64_t words[2] = {seed_, offset_};
    std::memcpy(state.data_ptr(), words, kStateBytes);
    return state.getIntrusivePtr();
  }
  void set_state(const c10::TensorImpl& new_state) override {
    at::detail::check_rng_state(new_state);
    TORCH_CHECK(new_state.numel() == static_cast<std::int64_t>(kStateBytes), "RNG state of an MLU generator must be ",
                kStateBytes, " bytes (seed and offset), got ", new_state.numel());
    std::uint64_t words[2];
    std::memcpy(words, new_state.data(), kStateBytes);
    seed_ = words[0];
    offset_ = words[1];
  }
  // Takes `count` numbers of the stream: (seed, first offset).
  std::pair<std::uint64_t, std::uint64_t> reserve(std::uint64_t count) {
    const std::uint64_t first = offset_;
    offset_ += count;
    return {seed_, first};
  }

 private:
  MluGeneratorImpl* clone_impl() const override {
    auto* g = new MluGeneratorImpl(device_.index(), seed_);
    g->offset_ = offset_;
    return g;
  }

  std::uint64_t seed_;
  std::uint64_t offset_ = 0;
};

// The default generators, one per device, made on first use and never destroyed (torch keeps
// references to them: a deque, so adding one never moves the others). A config reload with more
// devices adds generators; existing ones keep their state.
std::mutex g_defaults_mu;
std::deque<at::Generator> g_defaults;
std::uint64_t g_global_seed = kDefaultSeed;  // the last manual_seed for all devices

MluGeneratorImpl& impl_of(const at::Generator& g) { return *at::check_generator<MluGeneratorImpl>(g); }

}  // namespace

// ---- device.h ----------------------------------------------------------------------------------

const at::Generator& default_generator(int device) {
  device = device < 0 ? current_device() : device;
  TORCH_CHECK(device >= 0 && device < device_count(), "MLU device ", device, " does not exist (the config has ",
              device_count(), " device(s))");
  std::lock_guard<std::mutex> lock(g_defaults_mu);
  while (g_defaults.size() <= static_cast<std::size_t>(device)) {
    g_defaults.push_back(at::make_generator<MluGeneratorImpl>(static_cast<c10::DeviceIndex>(g_defaults.size()),
                                                              g_global_seed));
  }
  return g_defaults[static_cast<std::size_t>(device)];
}

at::Generator new_generator(int device) {
  device = device < 0 ? current_device() : device;
  return at::make_generator<MluGeneratorImpl>(static_cast<c10::DeviceIndex>(device));
}

std::pair<std::uint64_t, std::uint64_t> reserve_random(const std::optional<at::Generator>& gen, int device,
                                                       std::uint64_t count) {
  const at::Generator& g = gen.has_value() && gen->defined() ? *gen : default_generator(device);
  TORCH_CHECK(g.device().type() == kDeviceType, "expected a generator of device mlu, got one of ", g.device());
  std::lock_guard<std::mutex> lock(impl_of(g).mutex_);
  return impl_of(g).reserve(count);
}

// ---- api.h: random -------------------------------------------------------------------------------

void manual_seed(std::uint64_t seed) {
  const int n = device_count();
  {
    std::lock_guard<std::mutex> lock(g_defaults_mu);
    g_global_seed = seed;
  }
  for (int d = 0; d < n; ++d) manual_seed_device(d, seed);
}

void manual_seed_device(int device, std::uint64_t seed) {
  const at::Generator& g = default_generator(device);
  std::lock_guard<std::mutex> lock(impl_of(g).mutex_);
  impl_of(g).set_current_seed(seed);
}

std::uint64_t initial_seed(int device) {
  const at::Generator& g = default_generator(device);
  std::lock_guard<std::mutex> lock(impl_of(g).mutex_);
  return impl_of(g).current_seed();
}

std::pair<std::uint64_t, std::uint64_t> reserve_random(int device, std::uint64_t count) {
  return reserve_random(std::nullopt, device, count);
}

std::pair<std::uint64_t, std::uint64_t> rng_state(int device) {
  const at::Generator& g = default_generator(device);
  std::lock_guard<std::mutex> lock(impl_of(g).mutex_);
  return {impl_of(g).current_seed(), impl_of(g).get_offset()};
}

void set_rng_state(int device, std::uint64_t seed, std::uint64_t offset) {
  const at::Generator& g = default_generator(device);
  std::lock_guard<std::mutex> lock(impl_of(g).mutex_);
  impl_of(g).set_current_seed(seed);
  impl_of(g).set_offset(offset);
}

}  // namespace mlusim::bridge

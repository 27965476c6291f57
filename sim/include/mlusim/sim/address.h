// Typed device addresses as kernels hold them. A kernel never sees a host pointer: GDRAM
// addresses are device virtual addresses (host-inaccessible), on-chip ones are offsets into the
// issuing core's NRAM/WRAM or its cluster's SRAM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mlusim::sim {

enum class Space : std::uint8_t { kGdram, kSram, kNram, kWram };

std::string_view space_name(Space s);  // "GDRAM", "SRAM", "NRAM", "WRAM"

// An untyped address in one memory space.
struct Addr {
  Space space = Space::kGdram;
  std::uint64_t value = 0;  // device address (GDRAM) or byte offset (on-chip)
  Addr offset(std::int64_t bytes) const { return {space, value + static_cast<std::uint64_t>(bytes)}; }
  std::string str() const;  // "NRAM+0x100", "GDRAM 0x7f12...": for fault messages
};

// A typed pointer into one space; arithmetic is in elements, like a C pointer.
template <Space S, class T>
struct Ptr {
  std::uint64_t value = 0;
  constexpr Ptr() = default;
  constexpr explicit Ptr(std::uint64_t v) : value(v) {}
  // GDRAM pointers arrive as kernel arguments (void* from cnrtMalloc): wrap them here.
  explicit Ptr(const void* device_pointer) : value(reinterpret_cast<std::uintptr_t>(device_pointer)) {}
  Ptr operator+(std::int64_t n) const { return Ptr(value + static_cast<std::uint64_t>(n) * sizeof(T)); }
  Ptr operator-(std::int64_t n) const { return *this + (-n); }
  Ptr& operator+=(std::int64_t n) { return *this = *this + n; }
  operator Addr() const { return {S, value}; }  // NOLINT: untyped view for the copy/compute API
  template <class U> Ptr<S, U> as() const { return Ptr<S, U>(value); }
};

template <class T> using Gdram = Ptr<Space::kGdram, T>;
template <class T> using Sram = Ptr<Space::kSram, T>;
template <class T> using Nram = Ptr<Space::kNram, T>;
template <class T> using Wram = Ptr<Space::kWram, T>;

}  // namespace mlusim::sim

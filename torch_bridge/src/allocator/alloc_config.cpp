// MLU_ALLOC_CONF parsing (PYTORCH_CUDA_ALLOC_CONF's syntax and checks, 1.13) and size rounding.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "mlusim/torch/caching_allocator.h"

namespace mlusim::bridge {
namespace {

constexpr std::size_t kMiB = 1024 * 1024;

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\n\r");
  return s.substr(b, e - b + 1);
}

[[noreturn]] void fail(const std::string& key, const std::string& value, const std::string& reason) {
  throw std::invalid_argument("MLU_ALLOC_CONF: option " + key + ":" + value + ": " + reason);
}

unsigned long long parse_unsigned(const std::string& key, const std::string& value) {
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
    fail(key, value, "expected a non-negative integer");
  errno = 0;
  const unsigned long long v = std::strtoull(value.c_str(), nullptr, 10);
  if (errno == ERANGE) fail(key, value, "value out of range");
  return v;
}

double parse_double(const std::string& key, const std::string& value) {
  if (value.empty()) fail(key, value, "expected a number");
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(value.c_str(), &end);
  if (end != value.c_str() + value.size() || errno == ERANGE || !std::isfinite(v))
    fail(key, value, "expected a number");
  return v;
}

bool parse_bool(const std::string& key, const std::string& value) {
  if (value == "True" || value == "true" || value == "1") return true;
  if (value == "False" || value == "false" || value == "0") return false;
  fail(key, value, "expected True or False");
}

bool is_power_of_two(unsigned long long v) { return v && !(v & (v - 1)); }

std::size_t floor_power_of_two(std::size_t v) {
  std::size_t p = 1;
  while (p <= v / 2) p <<= 1;
  return p;
}

}  // namespace

AllocatorConfig AllocatorConfig::parse(const std::string& text) {
  AllocatorConfig c;
  std::stringstream options(text);
  std::string option;
  while (std::getline(options, option, ',')) {
    option = trim(option);
    if (option.empty()) continue;
    const auto colon = option.find(':');
    const std::string key = trim(option.substr(0, colon));
    if (colon == std::string::npos) fail(key, "", "expected key:value");
    const std::string value = trim(option.substr(colon + 1));
    if (key == "max_split_size_mb") {
      const unsigned long long mb = parse_unsigned(key, value);
      if (mb <= kLargeBuffer / kMiB)
        fail(key, value, "too small, must be > " + std::to_string(kLargeBuffer / kMiB));
      c.max_split_size = mb >= SIZE_MAX / kMiB ? SIZE_MAX : static_cast<std::size_t>(mb) * kMiB;
    } else if (key == "garbage_collection_threshold") {
      const double v = parse_double(key, value);
      if (v <= 0.0) fail(key, value, "too small, set it within (0.0, 1.0)");
      if (v >= 1.0) fail(key, value, "too big, set it within (0.0, 1.0)");
      c.garbage_collection_threshold = v;
    } else if (key == "roundup_power2_divisions") {
      const unsigned long long v = parse_unsigned(key, value);
      if (!is_power_of_two(v)) fail(key, value, "the number of divisions must be a power of 2");
      c.roundup_power2_divisions = static_cast<std::size_t>(v);
    } else if (key == "caching") {
      c.caching = parse_bool(key, value);
    } else {
      fail(key, value,
           "unrecognized option (known: max_split_size_mb, garbage_collection_threshold, "
           "roundup_power2_divisions, caching)");
    }
  }
  return c;
}

AllocatorConfig AllocatorConfig::from_environment() {
  AllocatorConfig c;
  if (const char* conf = std::getenv("MLU_ALLOC_CONF")) c = parse(conf);
  if (const char* off = std::getenv("MLU_NO_MEMORY_CACHING")) {
    const std::string v = trim(off);
    if (v == "1") {
      c.caching = false;
    } else if (!v.empty() && v != "0") {
      throw std::invalid_argument("MLU_NO_MEMORY_CACHING=" + std::string(off) + ": expected 1 (caching off) or 0");
    }
  }
  return c;
}

std::string AllocatorConfig::str() const {
  std::ostringstream o;
  const char* sep = "";
  if (max_split_size != SIZE_MAX) o << sep << "max_split_size_mb:" << max_split_size / kMiB, sep = ",";
  if (garbage_collection_threshold > 0) o << sep << "garbage_collection_threshold:" << garbage_collection_threshold, sep = ",";
  if (roundup_power2_divisions) o << sep << "roundup_power2_divisions:" << roundup_power2_divisions, sep = ",";
  if (!caching) o << sep << "caching:False";
  return o.str();
}

std::size_t round_size(std::size_t size, const AllocatorConfig& config) {
  if (size < kMinBlockSize) return kMinBlockSize;
  const std::size_t divisions = config.roundup_power2_divisions;
  if (divisions > 1 && size > kMinBlockSize * divisions) {
    // CUDA's roundup_power2_next_division: split [2^k, 2^(k+1)) into `divisions` equal steps.
    const std::size_t floor2 = floor_power_of_two(size);
    if (floor2 == size) return size;
    const std::size_t step = floor2 / divisions;
    if (step == 0) return floor2 << 1;
    const std::size_t down = size & ~(step - 1);
    return down == size ? size : down + step;
  }
  return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

std::size_t segment_size_for(std::size_t rounded_size) {
  if (rounded_size <= kSmallSize) return kSmallBuffer;
  if (rounded_size < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded_size + kRoundLarge - 1) / kRoundLarge);
}

void Stat::update(std::int64_t amount) {
  current += amount;
  if (current > peak) peak = current;
  if (amount > 0) allocated += amount;
  if (amount < 0) freed -= amount;
}

std::vector<std::pair<std::string, std::int64_t>> DeviceStats::flatten() const {
  std::vector<std::pair<std::string, std::int64_t>> out;
  auto add = [&out](const std::string& prefix, const Stat& s) {
    out.emplace_back(prefix + ".current", s.current);
    out.emplace_back(prefix + ".peak", s.peak);
    out.emplace_back(prefix + ".allocated", s.allocated);
    out.emplace_back(prefix + ".freed", s.freed);
  };
  const std::pair<const char*, const StatArray*> arrays[] = {
      {"allocation", &allocation},           {"segment", &segment},
      {"active", &active},                   {"inactive_split", &inactive_split},
      {"allocated_bytes", &allocated_bytes}, {"reserved_bytes", &reserved_bytes},
      {"active_bytes", &active_bytes},       {"inactive_split_bytes", &inactive_split_bytes},
      {"requested_bytes", &requested_bytes}};
  const char* pools[kStatTypeCount] = {"all", "small_pool", "large_pool"};
  for (const auto& [name, array] : arrays)
    for (std::size_t t = 0; t < kStatTypeCount; ++t) add(std::string(name) + "." + pools[t], (*array)[t]);
  add("oversize_allocations", oversize_allocations);
  add("oversize_segments", oversize_segments);
  out.emplace_back("num_alloc_retries", num_alloc_retries);
  out.emplace_back("num_ooms", num_ooms);
  out.emplace_back("num_device_alloc", num_device_alloc);
  out.emplace_back("num_device_free", num_device_free);
  out.emplace_back("max_split_size", max_split_size);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mlusim::bridge

#include "config/values.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

namespace mlusim::sim::config_internal {
namespace {

constexpr std::array<std::pair<std::string_view, std::uint64_t>, 5> kBinaryUnits = {{
    {"B", 1ull},
    {"KiB", 1ull << 10},
    {"MiB", 1ull << 20},
    {"GiB", 1ull << 30},
    {"TiB", 1ull << 40},
}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::optional<std::uint64_t> parse_unsigned(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty() || !is_digit(text.front())) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> parse_real(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> parse_byte_size(std::string_view text, std::string* why) {
  const std::string_view all = trim(text);
  if (all.empty()) {
    *why = "expected a byte size (e.g. 65536 or \"64KiB\"), got an empty value";
    return std::nullopt;
  }
  if (all.front() == '-') {
    *why = "expected a non-negative byte size, got \"" + std::string(all) + "\"";
    return std::nullopt;
  }
  // Split into the numeric part and the unit suffix.
  std::size_t split = 0;
  while (split < all.size() && (is_digit(all[split]) || all[split] == '.' || all[split] == '+')) ++split;
  const std::string_view number = all.substr(0, split);
  const std::string_view unit = trim(all.substr(split));

  std::uint64_t scale = 0;
  if (unit.empty()) {
    scale = 1;
  } else {
    for (const auto& [name, factor] : kBinaryUnits)
      if (unit == name) scale = factor;
  }
  if (scale == 0) {
    *why = "expected a byte size: an integer or a number with a unit B, KiB, MiB, GiB or TiB (binary); got \"" +
           std::string(all) + "\"";
    return std::nullopt;
  }
  if (const auto whole = parse_unsigned(number)) {
    if (*whole > std::numeric_limits<std::uint64_t>::max() / scale) {
      *why = "byte size \"" + std::string(all) + "\" does not fit 64 bits";
      return std::nullopt;
    }
    return *whole * scale;
  }
  // A fractional count of units ("1.5MiB", "3.875MiB") must still name a whole number of bytes.
  const auto real = parse_real(number);
  if (!real || number.find('.') == std::string_view::npos) {
    *why = "expected a byte size (e.g. 65536 or \"64KiB\"), got \"" + std::string(all) + "\"";
    return std::nullopt;
  }
  const double bytes = *real * static_cast<double>(scale);
  if (bytes >= 18446744073709551616.0) {  // 2^64
    *why = "byte size \"" + std::string(all) + "\" does not fit 64 bits";
    return std::nullopt;
  }
  if (bytes != std::floor(bytes)) {
    *why = "byte size \"" + std::string(all) + "\" is not a whole number of bytes";
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(bytes);
}

std::string format_bytes(std::uint64_t bytes) {
  for (auto it = kBinaryUnits.rbegin(); it != kBinaryUnits.rend(); ++it) {
    const auto& [name, factor] = *it;
    if (bytes != 0 && bytes % factor == 0) return std::to_string(bytes / factor) + " " + std::string(name);
  }
  return std::to_string(bytes) + " B";
}

std::string format_real(double value) {
  std::ostringstream out;
  out.precision(12);
  out << value;
  return out.str();
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

}  // namespace mlusim::sim::config_internal

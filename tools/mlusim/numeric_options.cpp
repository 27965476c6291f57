#include "numeric_options.h"

#include <charconv>
#include <cmath>
#include <sstream>
#include <string>

namespace mlusim::cli {
namespace {

std::string bounds_text(const std::string& kind, const std::string& low, const std::string& high, bool has_high,
                        bool min_exclusive) {
  if (!has_high) return "must be " + kind + (min_exclusive ? " > " : " >= ") + low;
  return "must be " + kind + " between " + low + (min_exclusive ? " (exclusive)" : "") + " and " + high;
}

std::string real_text(double x) {
  std::ostringstream out;
  out.precision(10);
  out << x;
  return out.str();
}

}  // namespace

CLI::Validator integer_in(std::int64_t min, std::int64_t max) {
  const bool has_high = max != std::numeric_limits<std::int64_t>::max();
  const std::string rule =
      bounds_text("an integer", std::to_string(min), std::to_string(max), has_high, /*min_exclusive=*/false);
  CLI::Validator v(
      [=](std::string& text) -> std::string {
        std::string_view digits = text;
        if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
        std::int64_t value = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        const bool parsed = !digits.empty() && ec == std::errc() && end == digits.data() + digits.size();
        if (!parsed || value < min || value > max) return rule + ", got " + (text.empty() ? "nothing" : text);
        return {};
      },
      has_high ? "INT in [" + std::to_string(min) + " - " + std::to_string(max) + "]" : "INT >= " + std::to_string(min));
  return v;
}

CLI::Validator real_in(double min, double max, bool min_exclusive) {
  const bool has_high = std::isfinite(max);
  const std::string rule = bounds_text("a number", real_text(min), real_text(max), has_high, min_exclusive);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        std::string_view digits = text;
        if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
        double value = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        const bool parsed = !digits.empty() && ec == std::errc() && end == digits.data() + digits.size() &&
                            std::isfinite(value);
        const bool low = min_exclusive ? value <= min : value < min;
        if (!parsed || low || value > max) return rule + ", got " + (text.empty() ? "nothing" : text);
        return {};
      },
      has_high ? "NUMBER in [" + real_text(min) + " - " + real_text(max) + "]" : "NUMBER > " + real_text(min));
}

}  // namespace mlusim::cli

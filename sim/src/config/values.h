// Text-level helpers of the config loader: strict scalar parsing, byte-size units, formatting and
// the edit distance behind "did you mean" suggestions. Private to the config block (and its tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mlusim::sim::config_internal {

// An unsigned decimal integer: digits with an optional leading '+'. Rejects signs, fractions,
// exponents, hex and anything that does not fit 64 bits.
std::optional<std::uint64_t> parse_unsigned(std::string_view text);

// A finite real number ("307.2", "1e3", "+5"). Rejects inf/nan and trailing text.
std::optional<double> parse_real(std::string_view text);

// A byte size: a plain integer of bytes ("655360") or a number with a binary unit
// ("640KiB", "1.5 MiB", "24GiB", "64B"). Units: B, KiB, MiB, GiB, TiB (powers of 1024). Decimal
// units (KB, MB, GB) are rejected because hardware documents use them for both meanings.
// On failure returns nullopt and sets *why to a reason suitable for an error message.
std::optional<std::uint64_t> parse_byte_size(std::string_view text, std::string* why);

// "640 KiB", "24 GiB", "1536 B": the largest binary unit that divides the value exactly.
std::string format_bytes(std::uint64_t bytes);

// A real without trailing zeros ("307.2", "0", "1e+20" only when huge).
std::string format_real(double value);

// Levenshtein distance (insertions, deletions, substitutions all cost 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace mlusim::sim::config_internal

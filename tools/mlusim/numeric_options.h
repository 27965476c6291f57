// Validators for the CLI's numeric options, with messages a person can read: CLI11 prefixes the
// option's name, so `--batch 0` reads "--batch: must be an integer >= 1, got 0" (CLI11's own
// Range/PositiveNumber print the type's whole range, e.g. 0 to 1.79e308).
#pragma once

#include <cstdint>
#include <limits>

#include <CLI/CLI.hpp>

namespace mlusim::cli {

// Largest matrix dimension of `demo` and `tfu` (-m/-k/-n): a 65536 x 65536 fp32 matrix is 16 GiB,
// more than any preset's device memory holds beside two others.
constexpr std::int64_t kMaxDemoDim = 65536;

// A whole number in [min, max] (decimal digits, optional sign; no fraction or exponent). With
// max = the int64 maximum the message says ">= min" only.
CLI::Validator integer_in(std::int64_t min, std::int64_t max = std::numeric_limits<std::int64_t>::max());

// A finite real number; `min_exclusive` makes the lower bound strict ("> 0").
CLI::Validator real_in(double min, double max, bool min_exclusive = false);

}  // namespace mlusim::cli

// Scalar parsing helpers of the config loader.
#include <gtest/gtest.h>

#include <string>

#include "config/values.h"

namespace mlusim::sim::config_internal {
namespace {

std::optional<std::uint64_t> size(const std::string& text) {
  std::string why;
  return parse_byte_size(text, &why);
}

std::string size_error(const std::string& text) {
  std::string why;
  EXPECT_FALSE(parse_byte_size(text, &why).has_value()) << text;
  return why;
}

TEST(ConfigValues, ByteSizes) {
  EXPECT_EQ(size("655360"), 655360u);
  EXPECT_EQ(size("640KiB"), 640u * 1024);
  EXPECT_EQ(size("64 KiB"), 64u * 1024);
  EXPECT_EQ(size("1MiB"), 1u << 20);
  EXPECT_EQ(size("24GiB"), 24ull << 30);
  EXPECT_EQ(size("2TiB"), 2ull << 40);
  EXPECT_EQ(size("64B"), 64u);
  EXPECT_EQ(size("3.875MiB"), 3968u * 1024);
  EXPECT_EQ(size("0"), 0u);
  EXPECT_NE(size_error("64KB").find("binary"), std::string::npos);
  EXPECT_NE(size_error("64kib").find("binary"), std::string::npos);
  EXPECT_NE(size_error("-1").find("non-negative"), std::string::npos);
  EXPECT_NE(size_error("0.1KiB").find("whole number of bytes"), std::string::npos);
  EXPECT_NE(size_error("16777216TiB").find("64 bits"), std::string::npos);
  EXPECT_NE(size_error("1.5").find("whole number of bytes"), std::string::npos);
  EXPECT_NE(size_error("").find("empty"), std::string::npos);
  EXPECT_NE(size_error("KiB").find("expected a byte size"), std::string::npos);
}

TEST(ConfigValues, Numbers) {
  EXPECT_EQ(parse_unsigned("42"), 42u);
  EXPECT_EQ(parse_unsigned("+42"), 42u);
  EXPECT_EQ(parse_unsigned("18446744073709551615"), ~0ull);
  EXPECT_FALSE(parse_unsigned("18446744073709551616"));
  EXPECT_FALSE(parse_unsigned("-1"));
  EXPECT_FALSE(parse_unsigned("1.0"));
  EXPECT_FALSE(parse_unsigned("0x10"));
  EXPECT_FALSE(parse_unsigned(""));
  EXPECT_EQ(parse_real("307.2"), 307.2);
  EXPECT_EQ(parse_real("1e3"), 1000.0);
  EXPECT_EQ(parse_real("-5"), -5.0);
  EXPECT_FALSE(parse_real(".inf"));
  EXPECT_FALSE(parse_real("inf"));
  EXPECT_FALSE(parse_real("nan"));
  EXPECT_FALSE(parse_real("12 GB/s"));
}

TEST(ConfigValues, Formatting) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1536), "1536 B");
  EXPECT_EQ(format_bytes(640 * 1024), "640 KiB");
  EXPECT_EQ(format_bytes(24ull << 30), "24 GiB");
  EXPECT_EQ(format_real(307.2), "307.2");
  EXPECT_EQ(format_real(16), "16");
}

TEST(ConfigValues, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("bandwith", "bandwidth"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

}  // namespace
}  // namespace mlusim::sim::config_internal

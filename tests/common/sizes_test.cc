#include "common/sizes.h"

#include <gtest/gtest.h>

namespace gpubench {
namespace {

TEST(ParseElementCount, PlainAndSuffixed) {
  EXPECT_EQ(*ParseElementCount("1"), 1);
  EXPECT_EQ(*ParseElementCount("1000000"), 1000000);
  EXPECT_EQ(*ParseElementCount("3k"), 3000);
  EXPECT_EQ(*ParseElementCount("16M"), 16000000);
  EXPECT_EQ(*ParseElementCount("2G"), 2000000000);
  EXPECT_EQ(*ParseElementCount("4Ki"), 4096);
  EXPECT_EQ(*ParseElementCount("256Mi"), int64_t{256} << 20);
  EXPECT_EQ(*ParseElementCount("1Gi"), int64_t{1} << 30);
  EXPECT_EQ(*ParseElementCount(" 7 "), 7);
}

TEST(ParseElementCount, RejectsBadText) {
  for (const char* bad : {"", "-1", "+5", "0", "1.5M", "M", "12X", "1Mib", "0x10", "1 M"}) {
    EXPECT_FALSE(ParseElementCount(bad).ok()) << bad;
  }
  EXPECT_FALSE(ParseElementCount("99999999999999999999").ok());
  EXPECT_FALSE(ParseElementCount("9000000000Gi").ok());
  EXPECT_EQ(ParseElementCount("12X").status().code(), absl::StatusCode::kInvalidArgument);
}

// 'm' is milli in SI; only the documented spellings are accepted, case included.
TEST(ParseElementCount, SuffixCaseMatters) {
  for (const char* bad : {"256m", "1g", "1gi", "4ki", "256mi", "16MI", "1KI", "2GI"}) {
    const absl::StatusOr<int64_t> n = ParseElementCount(bad);
    EXPECT_FALSE(n.ok()) << bad << " parsed as " << n.value_or(0);
    EXPECT_NE(n.status().message().find("case matters"), absl::string_view::npos) << bad;
  }
}

TEST(FormatElementCount, RoundTrips) {
  EXPECT_EQ(FormatElementCount(int64_t{256} << 20), "256Mi");
  EXPECT_EQ(FormatElementCount(16000000), "16M");
  EXPECT_EQ(FormatElementCount(1001), "1001");
  for (int64_t n : {int64_t{1}, int64_t{1023}, int64_t{1} << 20, int64_t{3000}, int64_t{1048579}}) {
    EXPECT_EQ(*ParseElementCount(FormatElementCount(n)), n);
  }
}

TEST(Format, RatesAndSeconds) {
  EXPECT_EQ(FormatBytesPerSecond(4.2e12), "4.20 TB/s");
  EXPECT_EQ(FormatBytesPerSecond(512), "512.00 B/s");
  EXPECT_EQ(FormatSeconds(1.5e-6), "1.500 us");
  EXPECT_EQ(FormatSeconds(2.5e-3), "2.500 ms");
}

}  // namespace
}  // namespace gpubench

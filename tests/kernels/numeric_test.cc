#include "kernels/numeric.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace gpubench {
namespace {

TEST(Half, KnownEncodings) {
  EXPECT_EQ(DoubleToHalf(0.0).bits, 0x0000);
  EXPECT_EQ(DoubleToHalf(-0.0).bits, 0x8000);
  EXPECT_EQ(DoubleToHalf(1.0).bits, 0x3c00);
  EXPECT_EQ(DoubleToHalf(-2.0).bits, 0xc000);
  EXPECT_EQ(DoubleToHalf(65504.0).bits, 0x7bff);            // max finite
  EXPECT_EQ(DoubleToHalf(65520.0).bits, 0x7c00);            // rounds to infinity
  EXPECT_EQ(DoubleToHalf(std::ldexp(1.0, -24)).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(DoubleToHalf(std::ldexp(1.0, -14)).bits, 0x0400);  // smallest normal
  EXPECT_EQ(DoubleToHalf(std::ldexp(1.0, -26)).bits, 0x0000);  // underflows
  EXPECT_EQ(DoubleToHalf(std::numeric_limits<double>::infinity()).bits, 0x7c00);
  EXPECT_TRUE(std::isnan(HalfToFloat(DoubleToHalf(std::nan("")))));
}

TEST(Half, RoundsToNearestEven) {
  // Between 1 and 1 + 2^-10 the tie 1 + 2^-11 goes to the even 1.0; 1 + 3*2^-11 to 1 + 2^-9.
  EXPECT_EQ(DoubleToHalf(1.0 + std::ldexp(1.0, -11)).bits, 0x3c00);
  EXPECT_EQ(DoubleToHalf(1.0 + 3 * std::ldexp(1.0, -11)).bits, 0x3c02);
  EXPECT_EQ(DoubleToHalf(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30)).bits, 0x3c01);
  // Subnormal tie: 1.5 * 2^-24 goes to 2 * 2^-24.
  EXPECT_EQ(DoubleToHalf(1.5 * std::ldexp(1.0, -24)).bits, 0x0002);
  EXPECT_EQ(DoubleToHalf(0.5 * std::ldexp(1.0, -24)).bits, 0x0000);
}

TEST(Half, EveryFiniteHalfRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const Half h{static_cast<uint16_t>(bits)};
    const float f = HalfToFloat(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(DoubleToHalf(f).bits, bits) << std::hex << bits;
  }
}

TEST(BFloat16, RoundTripsAndRounds) {
  for (uint32_t bits = 0; bits < 0x10000; bits += 7) {
    const BFloat16 b{static_cast<uint16_t>(bits)};
    const float f = BFloat16ToFloat(b);
    if (std::isnan(f)) continue;
    ASSERT_EQ(DoubleToBFloat16(f).bits, bits) << std::hex << bits;
  }
  EXPECT_EQ(DoubleToBFloat16(1.0).bits, 0x3f80);
  EXPECT_EQ(DoubleToBFloat16(1.0 + std::ldexp(1.0, -8)).bits, 0x3f80);      // tie to even
  EXPECT_EQ(DoubleToBFloat16(1.0 + 3 * std::ldexp(1.0, -8)).bits, 0x3f82);  // tie to even
}

TEST(Half, AddIsCorrectlyRounded) {
  // 2048 + 1 is a tie in fp16 (spacing 2 there): rounds to even 2048.
  EXPECT_EQ(HalfToFloat(AddHalf(DoubleToHalf(2048), DoubleToHalf(1))), 2048.0f);
  EXPECT_EQ(HalfToFloat(AddHalf(DoubleToHalf(2050), DoubleToHalf(1))), 2052.0f);
  EXPECT_EQ(AddHalf(DoubleToHalf(65504), DoubleToHalf(65504)).bits, 0x7c00);
}

}  // namespace
}  // namespace gpubench

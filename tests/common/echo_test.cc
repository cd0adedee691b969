#include "common/echo.h"

#include <gtest/gtest.h>

#include "common/tokens.h"

namespace gpubench {
namespace {

TEST(EchoForMessage, BoundsAndSanitizes) {
  EXPECT_EQ(EchoForMessage("add_f32"), "add_f32");
  const std::string huge(100000, 'x');
  const std::string echoed = EchoForMessage(huge);
  EXPECT_LT(echoed.size(), kMaxEchoBytes + 32);
  EXPECT_NE(echoed.find("(100000 bytes)"), std::string::npos);
  EXPECT_EQ(EchoForMessage("a\nb\rc"), "a?b?c");
  // A cut never splits a UTF-8 character: "é" is two bytes.
  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "\xc3\xa9";
  const std::string cut = EchoForMessage(accents);
  EXPECT_EQ(cut.substr(0, cut.find("...")).size() % 2, 0u);
}

TEST(BoundStatusMessage, CutsLongMessages) {
  EXPECT_EQ(BoundStatusMessage("short"), "short");
  const std::string bounded = BoundStatusMessage(std::string(1 << 20, 'y'));
  EXPECT_LE(bounded.size(), kMaxStatusMessageBytes + 16);
  EXPECT_NE(bounded.find("[truncated]"), std::string::npos);
}

TEST(ClosestNames, SuggestsNearestKernels) {
  const std::vector<std::string> names = {"add_f32", "add_f16", "copy_d2d", "saxpy_f32"};
  const std::vector<std::string> got = ClosestNames("add_f33", names, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], "add_f32");
  EXPECT_TRUE(ClosestNames("zzzzzzzzzzzzzz", names, 3).empty());
  EXPECT_TRUE(ClosestNames(std::string(100000, 'a'), names, 3).empty());
}

// Hostile input: token files are read alike by server and CLI; unusable tokens refused.
TEST(Tokens, TrimsCommentsAndCrlf) {
  EXPECT_EQ(ParseTokenLines("# comment\r\n\r\n  abc123\r\n"), std::vector<std::string>{"abc123"});
  EXPECT_EQ(ParseTokenLines("tok\n"), std::vector<std::string>{"tok"});
  EXPECT_TRUE(CheckTokenUsable("abc-123_XYZ.~+/=").ok());
  EXPECT_FALSE(CheckTokenUsable("").ok());
  EXPECT_FALSE(CheckTokenUsable("abc\ndef").ok());
  EXPECT_FALSE(CheckTokenUsable("abc def").ok());
  EXPECT_FALSE(CheckTokenUsable("caf\xc3\xa9").ok());
  EXPECT_FALSE(CheckTokenUsable(std::string(5000, 'a')).ok());
  // The message never echoes the token.
  EXPECT_EQ(CheckTokenUsable("secret\x01").message().find("secret"), absl::string_view::npos);
}

}  // namespace
}  // namespace gpubench

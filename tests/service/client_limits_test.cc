// Per-client limits on user-kernel submissions (server/service/client_limits.h), on a fake clock.
#include "server/service/client_limits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpubench {
namespace {

using ::testing::HasSubstr;

class ClientLimiterTest : public ::testing::Test {
 protected:
  absl::Time now_ = absl::FromUnixSeconds(1000);
};

TEST_F(ClientLimiterTest, RunsInFlightPerClient) {
  ClientLimiter limiter({.runs_in_flight = 2, .submissions_per_minute = 0},
                        [this] { return now_; });
  absl::StatusOr<ClientSlot> a = limiter.Admit("alice");
  absl::StatusOr<ClientSlot> b = limiter.Admit("alice");
  ASSERT_TRUE(a.ok() && b.ok());
  absl::StatusOr<ClientSlot> c = limiter.Admit("alice");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(c.status().message(), HasSubstr("client alice has 2 user-kernel runs queued or "
                                              "running"));
  EXPECT_THAT(c.status().message(), HasSubstr("--user_kernel_runs_per_client=2"));
  EXPECT_TRUE(limiter.Admit("bob").ok());  // another client is not held back
  a->Release();
  EXPECT_EQ(limiter.InFlight("alice"), 1);
  EXPECT_TRUE(limiter.Admit("alice").ok());  // a temporary: its slot is given back at once
  EXPECT_EQ(limiter.InFlight("alice"), 1);
}

TEST_F(ClientLimiterTest, SubmissionsPerMinuteSlideWithTheClock) {
  ClientLimiter limiter({.runs_in_flight = 0, .submissions_per_minute = 3},
                        [this] { return now_; });
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(limiter.Admit("10.0.0.1").ok());
    now_ += absl::Seconds(10);
  }
  absl::StatusOr<ClientSlot> over = limiter.Admit("10.0.0.1");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(over.status().message(), HasSubstr("submitted 3 user kernels in the last minute"));
  EXPECT_THAT(over.status().message(), HasSubstr("--user_kernel_submissions_per_minute=3"));
  EXPECT_THAT(over.status().message(), HasSubstr("retry in 30 s"));
  now_ += absl::Seconds(30);  // the first admission is a minute old
  EXPECT_TRUE(limiter.Admit("10.0.0.1").ok());
  EXPECT_FALSE(limiter.Admit("10.0.0.1").ok());
}

TEST_F(ClientLimiterTest, ZeroMeansNoLimit) {
  ClientLimiter limiter({.runs_in_flight = 0, .submissions_per_minute = 0},
                        [this] { return now_; });
  std::vector<ClientSlot> held;
  for (int i = 0; i < 100; ++i) {
    absl::StatusOr<ClientSlot> s = limiter.Admit("x");
    ASSERT_TRUE(s.ok());
    held.push_back(*std::move(s));
  }
  EXPECT_EQ(limiter.InFlight("x"), 100);
  held.clear();
  EXPECT_EQ(limiter.InFlight("x"), 0);
}

TEST(PeerWithoutPort, DropsOnlyThePort) {
  EXPECT_EQ(PeerWithoutPort("ipv4:127.0.0.1:50051"), "ipv4:127.0.0.1");
  EXPECT_EQ(PeerWithoutPort("ipv6:[::1]:50051"), "ipv6:[::1]");
  EXPECT_EQ(PeerWithoutPort("ipv6:%5B::1%5D:50051"), "ipv6:%5B::1%5D");
  EXPECT_EQ(PeerWithoutPort("unix:/tmp/s"), "unix:/tmp/s");
}

TEST(TokenIndex, NamesTheTokenByItsPosition) {
  TokenAuthenticator auth({"first", "second"});
  EXPECT_EQ(auth.TokenIndex("Bearer second"), 1);
  EXPECT_EQ(auth.TokenIndex("Bearer first"), 0);
  EXPECT_EQ(auth.TokenIndex("Bearer third"), std::nullopt);
  EXPECT_EQ(auth.TokenIndex("second"), std::nullopt);
}

}  // namespace
}  // namespace gpubench

#include "server/base/fd_limit.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>

namespace deadbolt::server {
namespace {

// A fake RLIMIT_NOFILE: the soft limit may be raised up to the hard one (unless refused).
struct FakeLimit {
  uint64_t soft;
  uint64_t hard;
  bool refuse = false;
  int sets = 0;
  FdLimitOps Ops() {
    FdLimitOps ops;
    ops.get = [this](uint64_t* s, uint64_t* h) {
      *s = soft;
      *h = hard;
    };
    ops.set_soft = [this](uint64_t s) {
      sets++;
      if (refuse || s > hard) return false;
      soft = s;
      return true;
    };
    return ops;
  }
};

TEST(FitMaxClientsTest, EnoughAlreadyChangesNothing) {
  FakeLimit lim{1 << 20, 1 << 20};
  FdFit fit = FitMaxClients(10000, 2, lim.Ops());
  EXPECT_EQ(fit.maxclients, 10000);
  EXPECT_FALSE(fit.fatal);
  EXPECT_TRUE(fit.log.empty());
  EXPECT_EQ(lim.sets, 0);
}

TEST(FitMaxClientsTest, RaisesTheSoftLimitWhenTheHardOneAllows) {
  FakeLimit lim{1024, 1 << 20};
  FdFit fit = FitMaxClients(10000, 2, lim.Ops());
  EXPECT_EQ(fit.maxclients, 10000);
  EXPECT_EQ(lim.soft, static_cast<uint64_t>(10000 + ReservedFds(2)));
  EXPECT_EQ(fit.limit, lim.soft);
  EXPECT_FALSE(fit.fatal);
  ASSERT_EQ(fit.log.size(), 1u);
  EXPECT_NE(fit.log[0].find("Increased maximum number of open files"), std::string::npos);
}

TEST(FitMaxClientsTest, LowersMaxclientsToTheHardLimit) {
  FakeLimit lim{256, 256};
  FdFit fit = FitMaxClients(10000, 2, lim.Ops());
  EXPECT_EQ(fit.maxclients, 256 - ReservedFds(2));
  EXPECT_FALSE(fit.fatal);
  ASSERT_FALSE(fit.log.empty());
  EXPECT_NE(
      fit.log.back().find("maxclients has been reduced to " + std::to_string(256 - ReservedFds(2))),
      std::string::npos);
}

TEST(FitMaxClientsTest, RaisesAsFarAsTheHardLimitThenLowers) {
  FakeLimit lim{256, 1000};
  FdFit fit = FitMaxClients(10000, 1, lim.Ops());
  EXPECT_EQ(lim.soft, 1000u);
  EXPECT_EQ(fit.maxclients, 1000 - ReservedFds(1));
}

TEST(FitMaxClientsTest, ARefusedRaiseLowersToTheSoftLimit) {
  FakeLimit lim{300, 100000, /*refuse=*/true};
  FdFit fit = FitMaxClients(10000, 1, lim.Ops());
  EXPECT_EQ(fit.maxclients, 300 - ReservedFds(1));
  EXPECT_EQ(lim.soft, 300u);
}

TEST(FitMaxClientsTest, NotOneClientFitsIsFatal) {
  FakeLimit lim{20, 20};
  FdFit fit = FitMaxClients(10000, 2, lim.Ops());
  EXPECT_TRUE(fit.fatal);
  ASSERT_FALSE(fit.log.empty());
  EXPECT_NE(fit.log.back().find("ulimit -n"), std::string::npos);
}

TEST(AcceptBackoffTest, PausesAndLogsOncePerInterval) {
  AcceptBackoff b;
  EXPECT_FALSE(b.paused());
  const int64_t t0 = 1'700'000'000'000;
  std::string first = b.OnExhausted(t0, EMFILE);
  EXPECT_TRUE(b.paused());
  EXPECT_EQ(b.resume_at_ms(), t0 + AcceptBackoff::kPauseMs);
  EXPECT_NE(first.find("Too many open files"), std::string::npos);
  // A flood of failures within the interval says nothing more.
  for (int i = 1; i <= 1000; i++) {
    b.Resume();
    EXPECT_TRUE(b.OnExhausted(t0 + i, EMFILE).empty());
    EXPECT_TRUE(b.paused());
  }
  b.Resume();
  EXPECT_FALSE(b.paused());
  // The next line, an interval later, counts what was left unsaid.
  std::string next = b.OnExhausted(t0 + AcceptBackoff::kLogEveryMs, ENFILE);
  EXPECT_NE(next.find("1000 more"), std::string::npos);
  EXPECT_TRUE(b.OnExhausted(t0 + AcceptBackoff::kLogEveryMs + 1, EMFILE).empty());
}

}  // namespace
}  // namespace deadbolt::server

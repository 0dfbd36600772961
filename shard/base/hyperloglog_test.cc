#include "shard/base/hyperloglog.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace deadbolt::shard::hll {
namespace {

std::string Elem(int i) { return "element:" + std::to_string(i); }

TEST(HyperLogLog, EmptyIsRedisCreateHllObject) {
  const std::string v = Empty();
  EXPECT_EQ(v, std::string("HYLL\x01\0\0\0\0\0\0\0\0\0\0\0\x7f\xff", 18));
  EXPECT_EQ(Check(v), Status::kOk);
  EXPECT_FALSE(IsDense(v));
  EXPECT_EQ(Cached(v), 0u);
  EXPECT_EQ(Count(v), 0u);
  EXPECT_EQ(DecodeSparse(v), "Z:16384");
}

TEST(HyperLogLog, CheckTellsNotAnHllFromADamagedOne) {
  EXPECT_EQ(Check(""), Status::kNotHll);
  EXPECT_EQ(Check("HYLL"), Status::kNotHll);
  std::string v = Empty();
  v[0] = 'h';
  EXPECT_EQ(Check(v), Status::kNotHll);
  v = Empty();
  v[4] = 2;  // an unknown encoding
  EXPECT_EQ(Check(v), Status::kNotHll);
  v = Empty();
  ToDense(&v);
  EXPECT_EQ(Check(v), Status::kOk);
  EXPECT_EQ(Check(v + "x"), Status::kNotHll);  // dense of the wrong size
  EXPECT_EQ(Check(v.substr(0, v.size() - 1)), Status::kNotHll);
  // Sparse runs that cover too few or too many registers, or an XZERO cut in half.
  v = Empty();
  EXPECT_EQ(Check(v.substr(0, kHeader)), Status::kCorrupt);
  EXPECT_EQ(Check(v + '\x00'), Status::kCorrupt);
  EXPECT_EQ(Check(v.substr(0, kHeader) + '\x7f'), Status::kCorrupt);
  EXPECT_EQ(Check(v.substr(0, kHeader) + std::string(300, '\x3f')), Status::kCorrupt);
  EXPECT_EQ(Check(v.substr(0, kHeader) + std::string(256, '\x3f')), Status::kOk);  // 256 x 64
}

TEST(HyperLogLog, SparseAndDenseHoldTheSameRegistersAndCount) {
  std::string sparse = Empty(), dense = Empty();
  ToDense(&dense);
  for (int i = 0; i < 1500; i++) {
    const bool a = Add(&sparse, Elem(i), SIZE_MAX), b = Add(&dense, Elem(i));
    ASSERT_EQ(a, b) << i;
    ASSERT_EQ(Check(sparse), Status::kOk) << i;
  }
  EXPECT_FALSE(IsDense(sparse));
  for (int r = 0; r < kRegisters; r++) ASSERT_EQ(Register(sparse, r), Register(dense, r)) << r;
  EXPECT_EQ(Count(sparse), Count(dense));
  std::string converted = sparse;
  ToDense(&converted);
  EXPECT_EQ(converted, dense);
  // Adding the same elements again changes nothing.
  for (int i = 0; i < 1500; i++) ASSERT_FALSE(Add(&sparse, Elem(i), SIZE_MAX));
}

TEST(HyperLogLog, SparseBecomesDenseAtTheLimitOrForAValueAbove32) {
  std::string v = Empty();
  int i = 0;
  while (!IsDense(v)) {
    ASSERT_LE(v.size(), kSparseMaxBytes);
    Add(&v, Elem(i++));
  }
  EXPECT_EQ(v.size(), kDenseSize);
  EXPECT_GT(i, 500);
  std::string w = Empty();
  EXPECT_TRUE(Set(&w, 7, 33));
  EXPECT_TRUE(IsDense(w));
  EXPECT_EQ(Register(w, 7), 33);
  EXPECT_FALSE(Set(&w, 7, 20));
}

TEST(HyperLogLog, SplitsAndMergesRunsAsRedisDoes) {
  std::string v = Empty();
  EXPECT_TRUE(Set(&v, 100, 3));
  EXPECT_EQ(DecodeSparse(v), "Z:100 v:3,1 Z:16283");
  EXPECT_TRUE(Set(&v, 101, 3));  // joins the run before it
  EXPECT_EQ(DecodeSparse(v), "Z:100 v:3,2 Z:16282");
  EXPECT_TRUE(Set(&v, 0, 1));
  EXPECT_EQ(DecodeSparse(v), "v:1,1 Z:99 v:3,2 Z:16282");
  EXPECT_TRUE(Set(&v, 100, 5));  // splits the VAL run
  EXPECT_EQ(DecodeSparse(v), "v:1,1 Z:99 v:5,1 v:3,1 Z:16282");
  EXPECT_FALSE(Set(&v, 101, 2));
  EXPECT_EQ(Register(v, 100), 5);
  EXPECT_EQ(Register(v, 101), 3);
  EXPECT_EQ(Register(v, 102), 0);
}

TEST(HyperLogLog, EstimatesWithinTheStandardError) {
  std::string v = Empty();
  std::vector<uint8_t> regs(kRegisters, 0);
  for (int n = 1; n <= 200000; n++) {
    Add(&v, Elem(n));
    if (n == 10 || n == 1000 || n == 50000 || n == 200000) {
      const double err = std::abs(static_cast<double>(Count(v)) - n) / n;
      EXPECT_LT(err, 5 * 1.04 / 128) << n;  // five standard errors
    }
  }
  MaxInto(v, regs.data());
  EXPECT_EQ(CountRegisters(regs.data()), Count(v));
}

TEST(HyperLogLog, TheCacheReadsBackAndGoesStale) {
  std::string v = Empty();
  SetCached(v.data(), 0x0123456789abcdULL);
  EXPECT_EQ(Cached(v), 0x0123456789abcdULL);
  Invalidate(v.data());
  EXPECT_FALSE(Cached(v).has_value());
}

// Values a client may SET: random and mutated bytes behind the header. Whatever Check() accepts,
// every operation handles within the value's bytes (the sanitizer build runs this too).
TEST(HyperLogLog, AnyValueCheckAcceptsIsSafeToUse) {
  std::mt19937 rng(42);
  std::string good = Empty();
  for (int i = 0; i < 200; i++) Add(&good, Elem(i));
  int accepted = 0;
  for (int round = 0; round < 20000; round++) {
    std::string v;
    if (round % 2 == 0) {
      v = good;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; f++) {
        const size_t at = kHeader + rng() % (v.size() - kHeader);
        v[at] = static_cast<char>(rng());
      }
      if (rng() % 4 == 0) v.resize(kHeader + rng() % (v.size() - kHeader + 1));
    } else {
      v = Empty().substr(0, kHeader);
      const size_t n = rng() % 300;
      for (size_t i = 0; i < n; i++) v += static_cast<char>(rng());
    }
    if (Check(v) != Status::kOk) continue;
    accepted++;
    std::vector<uint8_t> regs(kRegisters, 0);
    MaxInto(v, regs.data());
    EXPECT_EQ(CountRegisters(regs.data()), Count(v));
    DecodeSparse(v);
    std::string w = v;
    for (int i = 0; i < 50; i++) Add(&w, Elem(static_cast<int>(rng() % 100000)));
    ASSERT_EQ(Check(w), Status::kOk);
    std::string d = v;
    ToDense(&d);
    for (int r = 0; r < kRegisters; r += 97) ASSERT_EQ(Register(d, r), Register(v, r));
  }
  EXPECT_GT(accepted, 100);
}

}  // namespace
}  // namespace deadbolt::shard::hll

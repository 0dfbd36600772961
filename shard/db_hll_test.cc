// Db's HyperLogLog operations (PFADD PFCOUNT PFMERGE's halves).

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "shard/base/hyperloglog.h"
#include "shard/db.h"

namespace deadbolt::shard {
namespace {

class DbHllTest : public ::testing::Test {
 protected:
  OpResult<int> Add(std::string_view key, std::vector<std::string_view> elems) {
    return db.PfAdd(key, elems.data(), elems.size(), now);
  }
  std::string Raw(std::string_view key) { return std::string(*db.Get(key, now)); }
  Db db;
  int64_t now = 1'700'000'000'000;
};

TEST_F(DbHllTest, AddCreatesThenSaysWhetherARegisterGrew) {
  EXPECT_EQ(*Add("h", {}), 1);  // created
  EXPECT_EQ(*db.PfCount("h", now), 0);
  EXPECT_EQ(*Add("h", {}), 0);
  EXPECT_EQ(*Add("h", {"a", "b", "c"}), 1);
  EXPECT_EQ(*Add("h", {"a", "b"}), 0);
  EXPECT_EQ(*db.PfCount("h", now), 3);
  EXPECT_EQ(*db.PfCount("missing", now), 0);
}

TEST_F(DbHllTest, CountIsCachedInTheValueUntilTheNextGrowth) {
  ASSERT_EQ(*Add("h", {"a", "b", "c"}), 1);
  EXPECT_FALSE(hll::Cached(Raw("h")).has_value());
  EXPECT_EQ(*db.PfCount("h", now), 3);
  EXPECT_EQ(hll::Cached(Raw("h")), 3u);
  ASSERT_EQ(*Add("h", {"d"}), 1);
  EXPECT_FALSE(hll::Cached(Raw("h")).has_value());
  EXPECT_EQ(*db.PfCount("h", now), 4);
}

TEST_F(DbHllTest, OtherValuesAreRefused) {
  db.Set("s", "not an hll", SetOptions{}, now);
  EXPECT_EQ(Add("s", {"a"}).status(), OpStatus::kNotHll);
  EXPECT_EQ(db.PfCount("s", now).status(), OpStatus::kNotHll);
  std::string damaged = hll::Empty();
  damaged.pop_back();
  db.Set("d", damaged, SetOptions{}, now);
  EXPECT_EQ(Add("d", {"a"}).status(), OpStatus::kCorruptHll);
  EXPECT_EQ(Raw("d"), damaged);  // unchanged
  const std::vector<std::string_view> members = {"x"};
  ASSERT_EQ(*db.SetAdd("set", members, now), 1);
  EXPECT_EQ(Add("set", {"a"}).status(), OpStatus::kWrongType);
}

TEST_F(DbHllTest, DenseValuesGrowInPlaceAndKeepTheirTtl) {
  std::vector<std::string> elems;
  for (int i = 0; i < 3000; i++) elems.push_back("e" + std::to_string(i));
  std::vector<std::string_view> views(elems.begin(), elems.end());
  ASSERT_EQ(*db.PfAdd("h", views.data(), views.size(), now), 1);
  ASSERT_TRUE(hll::IsDense(Raw("h")));
  ASSERT_EQ(db.ExpireAt("h", now + 10'000, ExpireCond::kNone, now), 1);
  EXPECT_EQ(*Add("h", {"new one"}), 1);
  EXPECT_EQ(db.Pttl("h", now), 10'000);
  const int64_t n = *db.PfCount("h", now);
  EXPECT_NEAR(static_cast<double>(n), 3001, 3001 * 0.05);
}

TEST_F(DbHllTest, MergeTakesEachRegistersMaximum) {
  ASSERT_EQ(*Add("a", {"1", "2", "3"}), 1);
  ASSERT_EQ(*Add("b", {"3", "4"}), 1);
  std::vector<uint8_t> regs(hll::kRegisters, 0);
  bool dense = false;
  EXPECT_EQ(db.PfMaxInto("a", now, regs.data(), &dense), OpStatus::kOk);
  EXPECT_EQ(db.PfMaxInto("b", now, regs.data(), &dense), OpStatus::kOk);
  EXPECT_EQ(db.PfMaxInto("none", now, regs.data(), &dense), OpStatus::kOk);
  EXPECT_FALSE(dense);
  EXPECT_EQ(db.PfStore("dst", regs.data(), dense, now), OpStatus::kOk);
  EXPECT_EQ(*db.PfCount("dst", now), 4);
  EXPECT_FALSE(hll::IsDense(Raw("dst")));
  EXPECT_EQ(db.PfStore("dst2", regs.data(), true, now), OpStatus::kOk);
  EXPECT_TRUE(hll::IsDense(Raw("dst2")));
  EXPECT_EQ(*db.PfCount("dst2", now), 4);
}

}  // namespace
}  // namespace deadbolt::shard

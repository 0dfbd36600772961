// Hashes: HashValue's two forms and the hash commands of Db, against Redis 7's t_hash.c
// behaviour. Time is a plain int64 that the tests advance.

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "shard/base/test_util.h"
#include "shard/db.h"
#include "shard/types/hash_value.h"

namespace deadbolt::shard {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

// --- HashValue ---

// Owns a HashValue and applies mutations the way Db does (keeping the returned block).
class HashHolder {
 public:
  HashHolder() : h_(HashValue::Create()) {}
  HashValue* get() const { return h_.get(); }
  HashValue* operator->() const { return h_.get(); }
  bool Set(std::string_view f, std::string_view v) {
    bool added;
    Keep(HashValue::Set(h_.get(), f, v, &added));
    return added;
  }
  bool Del(std::string_view f) {
    bool removed;
    Keep(HashValue::Del(h_.get(), f, &removed));
    return removed;
  }
  Pairs All() const {
    Pairs out;
    h_->ForEach([&](std::string_view f, std::string_view v) { out.emplace_back(f, v); });
    return out;
  }
  std::map<std::string, std::string> AsMap() const {
    std::map<std::string, std::string> m;
    for (auto& [f, v] : All()) EXPECT_TRUE(m.emplace(f, v).second) << "field twice: " << f;
    return m;
  }

 private:
  void Keep(HashValue* next) {
    if (next != h_.get()) h_.reset(next);
  }
  std::unique_ptr<HashValue> h_;
};

TEST(HashValueTest, PackedKeepsInsertionOrderAndUpdatesInPlace) {
  HashHolder h;
  EXPECT_TRUE(h->packed());
  EXPECT_EQ(h->size(), 0u);
  EXPECT_TRUE(h.Set("b", "1"));
  EXPECT_TRUE(h.Set("a", "2"));
  EXPECT_TRUE(h.Set("c", "3"));
  EXPECT_FALSE(h.Set("a", "22"));  // longer: the pairs after it move
  EXPECT_FALSE(h.Set("b", ""));    // shorter
  EXPECT_EQ(h.All(), (Pairs{{"b", ""}, {"a", "22"}, {"c", "3"}}));
  EXPECT_TRUE(h.Del("a"));
  EXPECT_FALSE(h.Del("a"));
  EXPECT_EQ(h.All(), (Pairs{{"b", ""}, {"c", "3"}}));
  EXPECT_TRUE(h.Set("", ""));  // empty field and value are fine
  EXPECT_EQ(h->Get(""), "");
  EXPECT_EQ(h->Get("b"), "");
  EXPECT_EQ(h->Get("zz"), std::nullopt);
  EXPECT_EQ(h->size(), 3u);
  EXPECT_TRUE(h->packed());
}

TEST(HashValueTest, FieldsAreBinarySafe) {
  HashHolder h;
  const std::string f1("a\0b", 3), f2("a\0c", 3), v(std::string("\0\xff\r\n", 4));
  EXPECT_TRUE(h.Set(f1, v));
  EXPECT_TRUE(h.Set(f2, "x"));
  EXPECT_TRUE(h.Set("a", "y"));
  EXPECT_EQ(h->Get(f1), v);
  EXPECT_EQ(h->Get(f2), "x");
  EXPECT_EQ(h->Get("a"), "y");
  EXPECT_EQ(h->size(), 3u);
}

TEST(HashValueTest, LongFieldOrValueMakesATable) {
  for (bool long_field : {true, false}) {
    HashHolder h;
    h.Set("small", "1");
    const std::string s64(HashValue::kMaxPackedLen, 'x');
    const std::string s65(HashValue::kMaxPackedLen + 1, 'y');
    h.Set(s64, s64);  // exactly at the limit: still packed
    EXPECT_TRUE(h->packed());
    if (long_field) {
      h.Set(s65, "v");
    } else {
      h.Set("f", s65);
    }
    EXPECT_FALSE(h->packed());
    EXPECT_EQ(h->size(), 3u);
    EXPECT_EQ(h->Get("small"), "1");
    EXPECT_EQ(h->Get(s64), s64);
    EXPECT_EQ(h->Get(long_field ? s65 : "f"), long_field ? "v" : s65);
  }
  // A long value given to an existing packed field converts too.
  HashHolder h;
  h.Set("f", "short");
  h.Set("f", std::string(1000, 'z'));
  EXPECT_FALSE(h->packed());
  EXPECT_EQ(h->Get("f"), std::string(1000, 'z'));
  EXPECT_EQ(h->size(), 1u);
}

TEST(HashValueTest, TooManyFieldsMakeATableAndFewFitBack) {
  HashHolder h;
  for (size_t i = 0; i < HashValue::kMaxPackedEntries; ++i) h.Set(Cat("f", i), Cat("v", i));
  EXPECT_TRUE(h->packed());
  h.Set("f0", "updated");  // an update does not grow the count
  EXPECT_TRUE(h->packed());
  h.Set("one-more", "x");
  EXPECT_FALSE(h->packed());
  EXPECT_EQ(h->size(), HashValue::kMaxPackedEntries + 1);
  EXPECT_EQ(h->Get("f0"), "updated");
  EXPECT_EQ(h->Get("one-more"), "x");
  // Deleting down to 65 keeps the table (hysteresis); at 64 it packs again.
  h.Del("one-more");
  for (size_t i = 127; i >= 65; --i) h.Del(Cat("f", i));
  EXPECT_EQ(h->size(), 65u);
  EXPECT_FALSE(h->packed());
  h.Del("f64");
  EXPECT_EQ(h->size(), 64u);
  EXPECT_TRUE(h->packed());
  for (size_t i = 1; i < 64; ++i) EXPECT_EQ(h->Get(Cat("f", i)), Cat("v", i));
  EXPECT_EQ(h->Get("f0"), "updated");
}

TEST(HashValueTest, TableWithALongPairStaysATable) {
  HashHolder h;
  h.Set("long", std::string(100, 'l'));
  for (int i = 0; i < 10; ++i) h.Set(Cat("f", i), "v");
  for (int i = 0; i < 10; ++i) h.Del(Cat("f", i));
  EXPECT_FALSE(h->packed());  // passed 8, 4, 2, 1 with the long value in it
  h.Del("long");
  EXPECT_EQ(h->size(), 0u);
  h.Set("long", std::string(100, 'l'));
  h.Set("short", "s");
  h.Del("long");
  EXPECT_TRUE(h->packed());  // 1 pair that fits
  EXPECT_EQ(h.All(), (Pairs{{"short", "s"}}));
}

TEST(HashValueTest, ALockHashIsOneSmallBlock) {
  // Redisson's reentrant lock: one field "<uuid>:<thread id>" holding a hold count.
  HashHolder h;
  h.Set("8743c9c0-0795-4907-87fd-6c719a6b4586:1", "1");
  EXPECT_TRUE(h->packed());
  EXPECT_LE(h->AllocatedBytes(), 64u);
  HashValue* before = h.get();
  h.Set("8743c9c0-0795-4907-87fd-6c719a6b4586:1", "2");  // re-entered: same length, in place
  EXPECT_EQ(h.get(), before);
}

TEST(HashValueTest, PackedBlocksShrinkAfterDeletes) {
  HashHolder h;
  for (int i = 0; i < 100; ++i) h.Set(Cat("field-", i), std::string(40, 'v'));
  const size_t full = h->AllocatedBytes();
  for (int i = 1; i < 100; ++i) h.Del(Cat("field-", i));
  EXPECT_TRUE(h->packed());
  EXPECT_LT(h->AllocatedBytes(), full / 8);
  EXPECT_EQ(h.All(), (Pairs{{"field-0", std::string(40, 'v')}}));
}

// Random operations against a std::map model, through growth, conversion both ways and shrink.
TEST(HashValueTest, RandomOperationsMatchAModel) {
  std::mt19937_64 rng(42);
  HashHolder h;
  std::map<std::string, std::string> model;
  auto random_text = [&](size_t max_len) {
    std::string s(rng() % (max_len + 1), '\0');
    for (char& c : s) c = static_cast<char>('a' + rng() % 4);
    return s;
  };
  for (int step = 0; step < 30000; ++step) {
    const int phase = (step / 5000) % 3;  // grow, churn, shrink
    const std::string f = Cat("f", static_cast<int64_t>(rng() % 300));
    const uint64_t op = rng() % 10;
    if (op < (phase == 0 ? 7u : phase == 1 ? 5u : 2u)) {
      // Mostly short values; now and then one past the packed limit.
      const std::string v = random_text(rng() % 50 == 0 ? 80 : 8);
      const bool added = h.Set(f, v);
      EXPECT_EQ(added, model.find(f) == model.end());
      model[f] = v;
    } else {
      EXPECT_EQ(h.Del(f), model.erase(f) == 1);
    }
    ASSERT_EQ(h->size(), model.size());
    if (step % 997 == 0) {
      ASSERT_EQ(h.AsMap(), model) << "step " << step;
    }
    auto got = h->Get(f);
    auto it = model.find(f);
    ASSERT_EQ(got.has_value(), it != model.end());
    if (got) {
      ASSERT_EQ(*got, it->second);
    }
  }
  EXPECT_EQ(h.AsMap(), model);
}

// --- Db: the hash commands ---

class DbHashTest : public ::testing::Test {
 protected:
  OpResult<int64_t> HSet(std::string_view key, std::vector<std::string_view> fv) {
    return db.HSet(key, std::span<const std::string_view>(fv), now);
  }
  OpResult<int64_t> HDel(std::string_view key, std::vector<std::string_view> fields) {
    return db.HDel(key, std::span<const std::string_view>(fields), now);
  }
  Pairs All(std::string_view key) {
    Pairs out;
    auto r = db.HGetAll(key, now);
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return out;
    for (auto& [f, v] : *r) out.emplace_back(f, v);
    return out;
  }
  void PutString(std::string_view key) {
    ASSERT_TRUE(db.Set(key, "s", SetOptions{}, now)->written);
  }

  Db db;
  int64_t now = 1'700'000'000'000;
};

TEST_F(DbHashTest, HSetManyPairs) {
  EXPECT_EQ(*HSet("h", {"a", "1", "b", "2"}), 2);
  EXPECT_EQ(*HSet("h", {"a", "3", "c", "4"}), 1);
  EXPECT_EQ(*HSet("h", {"d", "5", "d", "6"}), 1);  // twice in one call: added once, last wins
  EXPECT_EQ(All("h"), (Pairs{{"a", "3"}, {"b", "2"}, {"c", "4"}, {"d", "6"}}));
  EXPECT_EQ(*HSet("h2", {"x", "1", "x", "2"}), 1);  // the same on a new key
  EXPECT_EQ(All("h2"), (Pairs{{"x", "2"}}));
  EXPECT_EQ(db.Type("h", now), ValueType::kHash);
  // Many pairs at once on a new key, past the packed limits.
  std::vector<std::string> strings;
  for (int i = 0; i < 200; ++i) {
    strings.push_back(Cat("f", i));
    strings.push_back(Cat("v", i));
  }
  std::vector<std::string_view> fv(strings.begin(), strings.end());
  EXPECT_EQ(*HSet("big", fv), 200);
  EXPECT_EQ(*db.HLen("big", now), 200);
  EXPECT_EQ(*db.HGet("big", "f199", now), "v199");
}

// HRANDFIELD: distinct pairs up to the count, repeats for a negative one, each pair a real
// one, in both forms (a packed hash and a table); every field turns up over many single picks.
TEST_F(DbHashTest, HRandField) {
  for (int n : {5, 300}) {
    const std::string key = Cat("h", n);
    std::vector<std::string> strings;
    for (int i = 0; i < n; ++i) {
      strings.push_back(Cat("f", i));
      strings.push_back(Cat("v", i));
    }
    std::vector<std::string_view> fv(strings.begin(), strings.end());
    ASSERT_EQ(*HSet(key, fv), n);
    auto valid = [&](std::string_view f, std::string_view v) {
      return f.substr(1) == v.substr(1) && f[0] == 'f' && v[0] == 'v';
    };
    for (int64_t count : {int64_t{1}, int64_t{n / 2}, int64_t{n}, int64_t{n + 10}}) {
      auto r = db.HRandField(key, count, now);
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(r->size(), static_cast<size_t>(std::min<int64_t>(count, n)));
      std::set<std::string_view> seen;
      for (auto& [f, v] : *r) {
        EXPECT_TRUE(valid(f, v)) << f << " " << v;
        EXPECT_TRUE(seen.insert(f).second) << "repeated " << f;
      }
    }
    std::set<std::string_view> picked;
    for (int i = 0; i < 20 * n; ++i) {
      auto r = db.HRandField(key, -1, now);
      ASSERT_EQ(r->size(), 1u);
      EXPECT_TRUE(valid(r->front().first, r->front().second));
      picked.insert(r->front().first);
    }
    EXPECT_EQ(picked.size(), static_cast<size_t>(n));
    EXPECT_EQ(db.HRandField(key, -3 * n, now)->size(), static_cast<size_t>(3 * n));
    EXPECT_TRUE(db.HRandField(key, 0, now)->empty());
  }
  EXPECT_TRUE(db.HRandField("missing", 3, now)->empty());
  PutString("s");
  EXPECT_EQ(db.HRandField("s", 1, now).status(), OpStatus::kWrongType);
}

TEST_F(DbHashTest, ReadsOfMissingKeysAndFields) {
  EXPECT_EQ(db.HGet("none", "f", now).status(), OpStatus::kKeyNotFound);
  EXPECT_EQ(*db.HLen("none", now), 0);
  EXPECT_FALSE(*db.HExists("none", "f", now));
  EXPECT_EQ(*db.HStrLen("none", "f", now), 0);
  EXPECT_TRUE(db.HGetAll("none", now)->empty());
  EXPECT_EQ(*HDel("none", {"f"}), 0);
  std::vector<std::string_view> fields = {"a", "b"};
  auto mget = db.HMGet("none", fields, now);
  ASSERT_EQ(mget->size(), 2u);
  EXPECT_EQ((*mget)[0], std::nullopt);
  auto scan = db.HScan("none", 0, "*", 10, now);
  EXPECT_EQ(scan->cursor, 0u);
  EXPECT_TRUE(scan->pairs.empty());
  EXPECT_EQ(db.Size(), 0u);  // reads never create the key

  ASSERT_EQ(*HSet("h", {"f", "hello", "e", ""}), 2);
  EXPECT_EQ(*db.HStrLen("h", "f", now), 5);
  EXPECT_EQ(*db.HStrLen("h", "e", now), 0);
  EXPECT_EQ(*db.HStrLen("h", "nope", now), 0);
  EXPECT_TRUE(*db.HExists("h", "e", now));
  EXPECT_FALSE(*db.HExists("h", "nope", now));
  fields = {"f", "nope", "e", "f"};
  mget = db.HMGet("h", fields, now);
  ASSERT_EQ(mget->size(), 4u);
  EXPECT_EQ((*mget)[0], "hello");
  EXPECT_EQ((*mget)[1], std::nullopt);
  EXPECT_EQ((*mget)[2], "");
  EXPECT_EQ((*mget)[3], "hello");
}

TEST_F(DbHashTest, WrongTypeBothWays) {
  PutString("s");
  std::vector<std::string_view> f = {"f"};
  EXPECT_EQ(HSet("s", {"f", "v"}).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.HSetNx("s", "f", "v", now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.HGet("s", "f", now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.HMGet("s", f, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.HDel("s", f, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.HExists("s", "f", now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.HIncrBy("s", "f", 1, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.HIncrByFloat("s", "f", 1, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.HLen("s", now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.HStrLen("s", "f", now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.HGetAll("s", now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.HScan("s", 0, "*", 10, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(*db.Get("s", now), "s");  // untouched

  ASSERT_EQ(*HSet("h", {"f", "1"}), 1);
  EXPECT_EQ(db.Get("h", now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.IncrBy("h", 1, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.Append("h", "x", now, 1 << 20).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.StrLen("h", now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.GetDel("h", now).status(), OpStatus::kWrongType);
  EXPECT_EQ(*db.HGet("h", "f", now), "1");
  // A plain SET replaces a hash.
  EXPECT_TRUE(db.Set("h", "now a string", SetOptions{}, now)->written);
  EXPECT_EQ(db.Type("h", now), ValueType::kString);
}

TEST_F(DbHashTest, HSetNx) {
  EXPECT_TRUE(*db.HSetNx("h", "f", "1", now));  // creates the key
  EXPECT_FALSE(*db.HSetNx("h", "f", "2", now));
  EXPECT_TRUE(*db.HSetNx("h", "g", "3", now));
  EXPECT_EQ(All("h"), (Pairs{{"f", "1"}, {"g", "3"}}));
}

TEST_F(DbHashTest, DeletingTheLastFieldDeletesTheKey) {
  ASSERT_EQ(*HSet("h", {"a", "1", "b", "2", "c", "3"}), 3);
  ASSERT_EQ(db.ExpireAt("h", now + 10'000, ExpireCond::kNone, now), 1);
  EXPECT_EQ(db.ExpiresSize(), 1u);
  EXPECT_EQ(*HDel("h", {"a", "a", "nope"}), 1);  // a duplicate counts once
  EXPECT_EQ(*db.HLen("h", now), 2);
  EXPECT_EQ(*HDel("h", {"b", "c", "b"}), 2);
  EXPECT_FALSE(db.Exists("h", now));
  EXPECT_EQ(db.Size(), 0u);
  EXPECT_EQ(db.ExpiresSize(), 0u);
  // The same for a hash in table form.
  for (int i = 0; i < 300; ++i) ASSERT_EQ(*HSet("t", {Cat("f", i), "v"}), 1);
  for (int i = 0; i < 299; ++i) ASSERT_EQ(*HDel("t", {Cat("f", i)}), 1);
  EXPECT_TRUE(db.Exists("t", now));
  EXPECT_EQ(*HDel("t", {"f299"}), 1);
  EXPECT_FALSE(db.Exists("t", now));
}

TEST_F(DbHashTest, TtlCoversTheWholeHashAndSurvivesGrowthAndConversion) {
  ASSERT_EQ(*HSet("h", {"f", "v"}), 1);
  ASSERT_EQ(db.ExpireAt("h", now + 10'000, ExpireCond::kNone, now), 1);
  // Growth of the packed block, conversion to a table and back all rebuild the Entry.
  for (int i = 0; i < 200; ++i) ASSERT_EQ(*HSet("h", {Cat("f", i), std::string(20, 'x')}), 1);
  EXPECT_EQ(db.Pttl("h", now), 10'000);
  ASSERT_EQ(*HSet("h", {"long", std::string(500, 'l')}), 1);
  EXPECT_EQ(db.Pttl("h", now), 10'000);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(*HDel("h", {Cat("f", i)}), 1);
  ASSERT_EQ(*HDel("h", {"long"}), 1);
  EXPECT_EQ(db.Pttl("h", now), 10'000);
  EXPECT_EQ(db.ExpiresSize(), 1u);
  EXPECT_EQ(All("h"), (Pairs{{"f", "v"}}));
  EXPECT_EQ(*db.HIncrBy("h", "n", 5, now), 5);
  EXPECT_EQ(db.Pttl("h", now), 10'000);
  // Expired: gone for every operation.
  now += 10'001;
  EXPECT_EQ(db.HGet("h", "f", now).status(), OpStatus::kKeyNotFound);
  EXPECT_FALSE(db.Exists("h", now));
  EXPECT_EQ(db.ExpiresSize(), 0u);
  // A new hash at the same name has no TTL.
  EXPECT_EQ(*HSet("h", {"f", "new"}), 1);
  EXPECT_EQ(db.Pttl("h", now), -1);
  // Active expiry reclaims hashes as well.
  ASSERT_EQ(db.ExpireAt("h", now + 1, ExpireCond::kNone, now), 1);
  EXPECT_EQ(db.ActiveExpire(now + 2, 1000), 1u);
  EXPECT_EQ(db.Size(), 0u);
}

TEST_F(DbHashTest, ExpiredHashSeenByEveryOperation) {
  auto make = [&] {
    db.Flush();
    ASSERT_EQ(*HSet("h", {"f", "7"}), 1);
    ASSERT_EQ(db.ExpireAt("h", now + 5, ExpireCond::kNone, now), 1);
  };
  const int64_t later = now + 6;
  std::vector<std::string_view> f = {"f"};
  make();
  EXPECT_EQ(db.HLen("h", later).value(), 0);
  make();
  EXPECT_FALSE(*db.HExists("h", "f", later));
  make();
  EXPECT_EQ(db.HMGet("h", f, later)->at(0), std::nullopt);
  make();
  EXPECT_EQ(*db.HDel("h", f, later), 0);
  make();
  EXPECT_EQ(*db.HIncrBy("h", "f", 1, later), 1);  // starts from 0 on a fresh key
  make();
  EXPECT_EQ(*db.HIncrByFloat("h", "f", 1.5L, later), "1.5");
  make();
  EXPECT_TRUE(*db.HSetNx("h", "f", "x", later));
  make();
  EXPECT_TRUE(db.HScan("h", 0, "*", 10, later)->pairs.empty());
  make();
  EXPECT_TRUE(db.HGetAll("h", later)->empty());
  make();
  EXPECT_EQ(*db.HStrLen("h", "f", later), 0);
}

TEST_F(DbHashTest, HIncrBy) {
  EXPECT_EQ(*db.HIncrBy("h", "n", 5, now), 5);  // creates key and field
  EXPECT_EQ(*db.HIncrBy("h", "n", -7, now), -2);
  EXPECT_EQ(*db.HGet("h", "n", now), "-2");
  EXPECT_EQ(*db.HIncrBy("h", "n", 0, now), -2);
  for (const char* bad : {"abc", " 1", "1 ", "01", "+1", "-0", "1.5", "", "9223372036854775808"}) {
    ASSERT_EQ(*HSet("h", {"bad", bad}), bad == std::string("abc") ? 1 : 0);
    EXPECT_EQ(db.HIncrBy("h", "bad", 1, now).status(), OpStatus::kHashValueNotInteger) << bad;
    EXPECT_EQ(*db.HGet("h", "bad", now), bad);
  }
  ASSERT_EQ(*HSet("h", {"max", "9223372036854775807", "min", "-9223372036854775808"}), 2);
  EXPECT_EQ(db.HIncrBy("h", "max", 1, now).status(), OpStatus::kIncrOverflow);
  EXPECT_EQ(db.HIncrBy("h", "min", -1, now).status(), OpStatus::kIncrOverflow);
  EXPECT_EQ(*db.HIncrBy("h", "max", -1, now), INT64_MAX - 1);
  EXPECT_EQ(*db.HIncrBy("h", "min", INT64_MAX, now), -1);
  EXPECT_EQ(db.HIncrBy("h", "fresh", INT64_MAX, now).value(), INT64_MAX);
  EXPECT_EQ(db.HIncrBy("h", "fresh", 1, now).status(), OpStatus::kIncrOverflow);
  EXPECT_EQ(*db.HGet("h", "fresh", now), "9223372036854775807");
}

TEST_F(DbHashTest, HIncrByFloatFormatsLikeIncrByFloat) {
  struct Case {
    const char* start;  // nullptr: the field is missing
    long double delta;
    const char* expect;
  };
  const Case cases[] = {
      {nullptr, 1.5L, "1.5"},   {"10", 0.1L, "10.1"},   {"10.1", -0.1L, "10"},
      {"5.0e3", 200, "5200"},   {"0x10", 0, "16"},      {"3", -3, "0"},
      {"-0.5", 0.25L, "-0.25"}, {"1e-5", 0, "0.00001"}, {"1", 1e18L, "1000000000000000001"},
      {"0", -0.0L, "0"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string field = Cat("f", i), key = Cat("s", i++);
    if (c.start != nullptr) {
      ASSERT_EQ(*HSet("h", {field, c.start}), 1);
      ASSERT_TRUE(db.Set(key, c.start, SetOptions{}, now)->written);
    }
    auto hr = db.HIncrByFloat("h", field, c.delta, now);
    auto sr = db.IncrByFloat(key, c.delta, now);
    ASSERT_TRUE(hr.ok()) << c.expect;
    EXPECT_EQ(*hr, c.expect);
    EXPECT_EQ(*hr, *sr);  // the same text INCRBYFLOAT gives
    EXPECT_EQ(*db.HGet("h", field, now), c.expect);
  }
  // A huge result is long: the hash becomes a table, the value is intact.
  ASSERT_EQ(*HSet("big", {"f", "1e308"}), 1);
  auto big = db.HIncrByFloat("big", "f", 1e308L, now);
  ASSERT_TRUE(big.ok());
  EXPECT_GT(big->size(), 300u);
  EXPECT_EQ(big->substr(0, 5), "19999");
  EXPECT_EQ(*db.HGet("big", "f", now), *big);
  // Not floats.
  for (const char* bad : {"abc", " 1", "1 ", "", "nan", "1e5000"}) {
    ASSERT_TRUE(HSet("h", {"bad", bad}).ok());
    EXPECT_EQ(db.HIncrByFloat("h", "bad", 1, now).status(), OpStatus::kHashValueNotFloat) << bad;
  }
  // A result that is not finite.
  ASSERT_EQ(*HSet("h", {"inf", "inf"}), 1);
  EXPECT_EQ(db.HIncrByFloat("h", "inf", 1, now).status(), OpStatus::kNanOrInf);
  EXPECT_EQ(*db.HGet("h", "inf", now), "inf");
}

TEST_F(DbHashTest, SmallHashesKeepInsertionOrder) {
  ASSERT_EQ(*HSet("h", {"z", "1", "a", "2", "m", "3"}), 3);
  ASSERT_EQ(*HSet("h", {"a", "longer value"}), 0);  // an update keeps its place
  ASSERT_EQ(*HDel("h", {"z"}), 1);
  ASSERT_EQ(*HSet("h", {"z", "4"}), 1);  // re-added at the end
  EXPECT_EQ(All("h"), (Pairs{{"a", "longer value"}, {"m", "3"}, {"z", "4"}}));
}

// Fields present for a whole HSCAN are returned at least once, fields never present are never
// returned, even when the hash grows, shrinks or changes form between steps.
TEST_F(DbHashTest, HScanIsComplete) {
  for (int n : {5, 128, 129, 1000, 20000}) {
    SCOPED_TRACE(n);
    db.Flush();
    for (int i = 0; i < n; ++i) ASSERT_EQ(*HSet("h", {Cat("f", i), Cat("v", i)}), 1);
    std::set<std::string> seen;
    uint64_t cursor = 0;
    int calls = 0;
    do {
      auto r = db.HScan("h", cursor, "*", 10, now);
      ASSERT_TRUE(r.ok());
      for (auto& [f, v] : r->pairs) {
        EXPECT_EQ(std::string("v") + std::string(f.substr(1)), v);
        seen.emplace(f);
      }
      cursor = r->cursor;
      ++calls;
    } while (cursor != 0);
    EXPECT_EQ(seen.size(), static_cast<size_t>(n));
    if (n <= 128) {
      EXPECT_EQ(calls, 1);  // packed: everything in one call, as Redis does with a listpack
    } else {
      EXPECT_GT(calls, 1);
    }
  }
}

TEST_F(DbHashTest, HScanCompleteWhileTheHashChanges) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    db.Flush();
    const int stable = 50 + static_cast<int>(rng() % 400);
    for (int i = 0; i < stable; ++i) ASSERT_EQ(*HSet("h", {Cat("s", i), "v"}), 1);
    std::set<std::string> seen;
    uint64_t cursor = 0;
    int churn = 0;
    do {
      auto r = db.HScan("h", cursor, "*", 1 + rng() % 20, now);
      ASSERT_TRUE(r.ok());
      for (auto& [f, v] : r->pairs) {
        EXPECT_TRUE(f[0] == 's' || f[0] == 't') << f;
        seen.emplace(f);
      }
      cursor = r->cursor;
      // Grow or shrink the hash between steps with fields that come and go.
      const int k = static_cast<int>(rng() % 300);
      if (rng() % 2 == 0) {
        for (int i = 0; i < k; ++i) ASSERT_TRUE(HSet("h", {Cat("t", churn++), "x"}).ok());
      } else {
        for (int i = 0; i < k && churn > 0; ++i) ASSERT_TRUE(HDel("h", {Cat("t", --churn)}).ok());
      }
    } while (cursor != 0);
    for (int i = 0; i < stable; ++i) EXPECT_TRUE(seen.count(Cat("s", i))) << "round " << round;
  }
}

TEST_F(DbHashTest, HScanMatchAndCount) {
  ASSERT_EQ(*HSet("h", {"apple", "1", "banana", "2", "avocado", "3", "", "4"}), 4);
  auto r = db.HScan("h", 0, "a*", 1, now);
  EXPECT_EQ(r->cursor, 0u);
  ASSERT_EQ(r->pairs.size(), 2u);
  EXPECT_EQ(r->pairs[0].first, "apple");
  EXPECT_EQ(r->pairs[1].first, "avocado");
  r = db.HScan("h", 0, "", 10, now);  // an empty pattern matches only the empty field
  ASSERT_EQ(r->pairs.size(), 1u);
  EXPECT_EQ(r->pairs[0].second, "4");
  r = db.HScan("h", 12345, "*", 10, now);  // a packed hash ignores the cursor
  EXPECT_EQ(r->pairs.size(), 4u);
  EXPECT_EQ(r->cursor, 0u);
  // A table: COUNT is a hint counted in elements (a field and its value are two), as in Redis.
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(HSet("t", {Cat("f", i), "v"}).ok());
  r = db.HScan("t", 0, "*", 100, now);
  EXPECT_GE(r->pairs.size(), 50u);
  EXPECT_LT(r->pairs.size(), 100u);
  EXPECT_NE(r->cursor, 0u);
  r = db.HScan("t", 0, "f1??", 1000, now);
  std::set<std::string> got;
  uint64_t cursor = 0;
  do {
    r = db.HScan("t", cursor, "f1??", 50, now);
    for (auto& p : r->pairs) got.emplace(p.first);
    cursor = r->cursor;
  } while (cursor != 0);
  EXPECT_EQ(got.size(), 100u);  // f100..f199
}

// --- the change hook ---

class CountingObserver : public KeyObserver {
 public:
  void OnKeyChanged(std::string_view key) override { changed.emplace_back(key); }
  std::vector<std::string> changed;
};

TEST_F(DbHashTest, EveryHashMutationReportsOneChange) {
  CountingObserver obs;
  db.AddObserver(&obs);
  size_t expected = 0;
  auto changed = [&](const char* what) {
    ++expected;
    EXPECT_EQ(obs.changed.size(), expected) << what;
    if (!obs.changed.empty()) {
      EXPECT_EQ(obs.changed.back(), "h") << what;
    }
  };
  auto unchanged = [&](const char* what) { EXPECT_EQ(obs.changed.size(), expected) << what; };
  ASSERT_TRUE(HSet("h", {"a", "1"}).ok());
  changed("HSET new key");
  ASSERT_TRUE(HSet("h", {"a", "2"}).ok());
  changed("HSET in place");
  ASSERT_TRUE(HSet("h", {"b", std::string(40, 'b'), "c", "3"}).ok());
  changed("HSET growing the block");
  EXPECT_FALSE(*db.HSetNx("h", "a", "x", now));
  unchanged("HSETNX of an existing field");
  EXPECT_TRUE(*db.HSetNx("h", "n", "x", now));
  changed("HSETNX");
  ASSERT_TRUE(db.HIncrBy("h", "a", 1, now).ok());
  changed("HINCRBY");
  ASSERT_EQ(db.HIncrBy("h", "b", 1, now).status(), OpStatus::kHashValueNotInteger);
  unchanged("HINCRBY failing");
  ASSERT_TRUE(db.HIncrByFloat("h", "a", 0.5L, now).ok());
  changed("HINCRBYFLOAT");
  ASSERT_TRUE(HSet("h", {"long", std::string(100, 'l')}).ok());
  changed("HSET converting to a table");
  EXPECT_EQ(*HDel("h", {"nope"}), 0);
  unchanged("HDEL of a missing field");
  EXPECT_EQ(*HDel("h", {"long", "b"}), 2);
  changed("HDEL");
  std::vector<std::string_view> f = {"a"};
  ASSERT_TRUE(db.HMGet("h", f, now).ok());
  ASSERT_TRUE(db.HGetAll("h", now).ok());
  ASSERT_TRUE(db.HScan("h", 0, "*", 10, now).ok());
  unchanged("reads");
  EXPECT_EQ(*HDel("h", {"a", "c", "n"}), 3);
  changed("HDEL of the last fields (the key goes)");
  EXPECT_FALSE(db.Exists("h", now));
  db.RemoveObserver(&obs);
}

}  // namespace
}  // namespace deadbolt::shard

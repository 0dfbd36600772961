// String commands of Db, against Redis 7's t_string.c behaviour. Time is a plain int64 that the
// tests advance.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "shard/base/test_util.h"
#include "shard/db.h"

namespace deadbolt::shard {
namespace {

constexpr int64_t kMaxLen = 512LL << 20;

class DbStringTest : public ::testing::Test {
 protected:
  static SetOptions With(SetOptions::Cond cond, bool get, SetOptions::Expire expire,
                         int64_t at = 0) {
    SetOptions o;
    o.cond = cond;
    o.get = get;
    o.expire = expire;
    o.expire_at_ms = at;
    return o;
  }
  void Put(std::string_view key, std::string_view value) {
    ASSERT_TRUE(db.Set(key, value, SetOptions{}, now)->written);
  }
  void PutTtl(std::string_view key, std::string_view value, int64_t ttl_ms) {
    auto o = With(SetOptions::Cond::kNone, false, SetOptions::Expire::kAt, now + ttl_ms);
    ASSERT_TRUE(db.Set(key, value, o, now)->written);
  }
  void PutHash(std::string_view key) { ASSERT_TRUE(db.HSet(key, "f", "v", now).ok()); }
  std::optional<std::string> Value(std::string_view key) {
    auto r = db.Get(key, now);
    if (!r.ok()) return std::nullopt;
    return std::string(*r);
  }

  Db db;
  int64_t now = 1'700'000'000'000;
};

TEST_F(DbStringTest, GetMissingAndPresent) {
  EXPECT_EQ(db.Get("k", now).status(), OpStatus::kKeyNotFound);
  Put("k", "v");
  EXPECT_EQ(*db.Get("k", now), "v");
  PutHash("h");
  EXPECT_EQ(db.Get("h", now).status(), OpStatus::kWrongType);
}

TEST_F(DbStringTest, ValuesAreBinarySafe) {
  const std::string nul("a\0b\0", 4);
  Put(nul, nul);
  EXPECT_EQ(*db.Get(nul, now), nul);
  EXPECT_EQ(db.Get(std::string("a"), now).status(), OpStatus::kKeyNotFound);
  Put("empty", "");
  EXPECT_EQ(*db.Get("empty", now), "");
  EXPECT_TRUE(db.Exists("empty", now));
  Put("", "empty key");
  EXPECT_EQ(*db.Get("", now), "empty key");
  const std::string big(300'000, 'x');
  const std::string long_key(1000, 'k');
  Put(long_key, big);
  EXPECT_EQ(*db.Get(long_key, now), big);
  std::string all_bytes;
  for (int c = 0; c < 256; ++c) all_bytes.push_back(static_cast<char>(c));
  Put(all_bytes, all_bytes);
  EXPECT_EQ(*db.Get(all_bytes, now), all_bytes);
}

// Every combination of SET's options against every kind of existing key. The expected outcome
// follows t_string.c's setGenericCommand: GET is checked first (WRONGTYPE on a non-string,
// nothing written), then NX/XX, then the write with its expire rule.
TEST_F(DbStringTest, SetOptionMatrix) {
  enum class State { kMissing, kString, kStringTtl, kHash, kHashTtl };
  struct ExpireCase {
    const char* name;
    SetOptions::Expire expire;
    int64_t at_offset;  // from now; EX/PX/EXAT/PXAT all reach Db as an absolute time
  };
  const int64_t old_ttl = 60'000;
  const ExpireCase expires[] = {
      {"none", SetOptions::Expire::kClear, 0},    {"KEEPTTL", SetOptions::Expire::kKeep, 0},
      {"EX 10", SetOptions::Expire::kAt, 10'000}, {"PX 1500", SetOptions::Expire::kAt, 1500},
      {"EXAT", SetOptions::Expire::kAt, 100'000}, {"PXAT", SetOptions::Expire::kAt, 12'345},
      {"PXAT past", SetOptions::Expire::kAt, -1}, {"PXAT now", SetOptions::Expire::kAt, 0},
  };
  const SetOptions::Cond conds[] = {SetOptions::Cond::kNone, SetOptions::Cond::kNX,
                                    SetOptions::Cond::kXX};
  const State states[] = {State::kMissing, State::kString, State::kStringTtl, State::kHash,
                          State::kHashTtl};
  int cases = 0;
  for (State state : states) {
    for (SetOptions::Cond cond : conds) {
      for (bool get : {false, true}) {
        for (const ExpireCase& ex : expires) {
          db.Flush();
          const std::string trace = "state=" + std::to_string(static_cast<int>(state)) +
                                    " cond=" + std::to_string(static_cast<int>(cond)) +
                                    Cat(" get=", get) + " expire=" + ex.name;
          SCOPED_TRACE(trace);
          const bool exists = state != State::kMissing;
          const bool is_hash = state == State::kHash || state == State::kHashTtl;
          const bool had_ttl = state == State::kStringTtl || state == State::kHashTtl;
          if (is_hash) PutHash("k");
          if (state == State::kString || state == State::kStringTtl) Put("k", "old");
          if (had_ttl) {
            ASSERT_EQ(db.ExpireAt("k", now + old_ttl, ExpireCond::kNone, now), 1);
          }

          const auto r = db.Set("k", "new", With(cond, get, ex.expire, now + ex.at_offset), now);
          ++cases;
          if (get && is_hash) {
            EXPECT_EQ(r.status(), OpStatus::kWrongType);
            EXPECT_EQ(db.Type("k", now), ValueType::kHash);
            EXPECT_EQ(db.ExpireTime("k", now), had_ttl ? now + old_ttl : -1);
            continue;
          }
          ASSERT_TRUE(r.ok());
          const bool skipped = (cond == SetOptions::Cond::kNX && exists) ||
                               (cond == SetOptions::Cond::kXX && !exists);
          EXPECT_EQ(r->written, !skipped);
          if (get && exists) {
            EXPECT_EQ(r->old_value, std::optional<std::string>("old"));
          } else {
            EXPECT_FALSE(r->old_value.has_value());
          }
          if (skipped) {
            // Untouched.
            EXPECT_EQ(db.Exists("k", now), exists);
            if (exists) {
              EXPECT_EQ(db.Type("k", now), is_hash ? ValueType::kHash : ValueType::kString);
              EXPECT_EQ(db.ExpireTime("k", now), had_ttl ? now + old_ttl : -1);
            }
            if (exists && !is_hash) {
              EXPECT_EQ(Value("k"), "old");
            }
            continue;
          }
          if (ex.expire == SetOptions::Expire::kAt && ex.at_offset <= 0) {
            // An expire time at or before now: the SET succeeds and the key is gone.
            EXPECT_FALSE(db.Exists("k", now));
            EXPECT_EQ(db.Size(), 0u);
            EXPECT_EQ(db.ExpiresSize(), 0u);
            continue;
          }
          EXPECT_EQ(Value("k"), "new");
          int64_t want_expire = -1;
          if (ex.expire == SetOptions::Expire::kAt) want_expire = now + ex.at_offset;
          if (ex.expire == SetOptions::Expire::kKeep && had_ttl) want_expire = now + old_ttl;
          EXPECT_EQ(db.ExpireTime("k", now), want_expire);
          EXPECT_EQ(db.ExpiresSize(), want_expire == -1 ? 0u : 1u);
          EXPECT_EQ(db.Size(), 1u);
        }
      }
    }
  }
  EXPECT_EQ(cases, 5 * 3 * 2 * 8);
}

TEST_F(DbStringTest, PlainSetDropsTtlAndKeepTtlKeepsIt) {
  PutTtl("k", "v1", 5000);
  EXPECT_EQ(db.Pttl("k", now), 5000);
  Put("k", "v2");  // same length: rewritten in place
  EXPECT_EQ(db.Pttl("k", now), -1);
  EXPECT_EQ(db.ExpiresSize(), 0u);
  PutTtl("k", "v3", 5000);
  ASSERT_TRUE(db.Set("k", "longer value",
                     With(SetOptions::Cond::kNone, false, SetOptions::Expire::kKeep), now)
                  ->written);
  EXPECT_EQ(db.Pttl("k", now), 5000);
  EXPECT_EQ(*db.Get("k", now), "longer value");
  EXPECT_EQ(db.ExpiresSize(), 1u);
  // KEEPTTL on a key without TTL keeps "no TTL".
  Put("p", "x");
  db.Set("p", "y", With(SetOptions::Cond::kNone, false, SetOptions::Expire::kKeep), now);
  EXPECT_EQ(db.Pttl("p", now), -1);
}

TEST_F(DbStringTest, SetOverwritesAHashWithoutGet) {
  PutHash("h");
  ASSERT_TRUE(db.Set("h", "s", SetOptions{}, now)->written);
  EXPECT_EQ(db.Type("h", now), ValueType::kString);
  EXPECT_EQ(*db.Get("h", now), "s");
}

TEST_F(DbStringTest, SetNxOnAnExpiredKeySucceeds) {
  PutTtl("lock", "owner1", 100);
  const auto nx = With(SetOptions::Cond::kNX, false, SetOptions::Expire::kAt, now + 1000);
  EXPECT_FALSE(db.Set("lock", "owner2", nx, now)->written);
  now += 100;  // expires at now + 100: still there at exactly that millisecond
  EXPECT_FALSE(db.Set("lock", "owner2", nx, now)->written);
  now += 1;
  const auto nx2 = With(SetOptions::Cond::kNX, false, SetOptions::Expire::kAt, now + 1000);
  EXPECT_TRUE(db.Set("lock", "owner2", nx2, now)->written);
  EXPECT_EQ(*db.Get("lock", now), "owner2");
  EXPECT_EQ(db.Pttl("lock", now), 1000);
  EXPECT_EQ(db.Size(), 1u);
  EXPECT_EQ(db.ExpiresSize(), 1u);
}

TEST_F(DbStringTest, SetTtlWidths) {
  // Expire times that need the wide form, and switching between forms.
  const int64_t far = int64_t{1} << 60;
  db.Set("k", "v", With(SetOptions::Cond::kNone, false, SetOptions::Expire::kAt, far), now);
  EXPECT_EQ(db.ExpireTime("k", now), far);
  db.Set("k", "w", With(SetOptions::Cond::kNone, false, SetOptions::Expire::kAt, now + 5), now);
  EXPECT_EQ(db.ExpireTime("k", now), now + 5);
  db.Set("k", "x", With(SetOptions::Cond::kNone, false, SetOptions::Expire::kAt, INT64_MAX), now);
  EXPECT_EQ(db.ExpireTime("k", now), INT64_MAX);
  EXPECT_EQ(*db.Get("k", now), "x");
  EXPECT_EQ(db.ExpiresSize(), 1u);
}

TEST_F(DbStringTest, GetDel) {
  EXPECT_EQ(db.GetDel("k", now).status(), OpStatus::kKeyNotFound);
  PutTtl("k", "v", 1000);
  EXPECT_EQ(*db.GetDel("k", now), "v");
  EXPECT_FALSE(db.Exists("k", now));
  EXPECT_EQ(db.ExpiresSize(), 0u);
  PutHash("h");
  EXPECT_EQ(db.GetDel("h", now).status(), OpStatus::kWrongType);
  EXPECT_TRUE(db.Exists("h", now));
}

TEST_F(DbStringTest, GetEx) {
  EXPECT_EQ(db.GetEx("k", {}, now).status(), OpStatus::kKeyNotFound);
  PutHash("h");
  EXPECT_EQ(db.GetEx("h", {}, now).status(), OpStatus::kWrongType);

  Put("k", "v");
  EXPECT_EQ(*db.GetEx("k", {}, now), "v");
  EXPECT_EQ(db.Pttl("k", now), -1);
  EXPECT_EQ(*db.GetEx("k", {ExpireChange::Kind::kAt, now + 3000}, now), "v");
  EXPECT_EQ(db.Pttl("k", now), 3000);
  EXPECT_EQ(db.ExpiresSize(), 1u);
  EXPECT_EQ(*db.GetEx("k", {ExpireChange::Kind::kAt, now + 7000}, now), "v");
  EXPECT_EQ(db.Pttl("k", now), 7000);
  EXPECT_EQ(*db.GetEx("k", {ExpireChange::Kind::kPersist, 0}, now), "v");
  EXPECT_EQ(db.Pttl("k", now), -1);
  EXPECT_EQ(db.ExpiresSize(), 0u);
  EXPECT_EQ(*db.GetEx("k", {ExpireChange::Kind::kPersist, 0}, now), "v");  // no TTL: no-op
  EXPECT_EQ(db.Pttl("k", now), -1);

  // A time at or before now: the value is returned and the key deleted.
  Put("gone", "value of gone");
  auto r = db.GetEx("gone", {ExpireChange::Kind::kAt, now}, now);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "value of gone");
  EXPECT_FALSE(db.Exists("gone", now));
  Put("gone2", "x");
  EXPECT_EQ(*db.GetEx("gone2", {ExpireChange::Kind::kAt, 1}, now), "x");
  EXPECT_FALSE(db.Exists("gone2", now));
}

TEST_F(DbStringTest, Append) {
  EXPECT_EQ(*db.Append("k", "Hello", now, kMaxLen), 5);
  EXPECT_EQ(*db.Append("k", " World", now, kMaxLen), 11);
  EXPECT_EQ(*db.Get("k", now), "Hello World");
  // Appending nothing to a missing key creates an empty string.
  EXPECT_EQ(*db.Append("e", "", now, kMaxLen), 0);
  EXPECT_TRUE(db.Exists("e", now));
  EXPECT_EQ(*db.Get("e", now), "");
  EXPECT_EQ(*db.Append("k", "", now, kMaxLen), 11);
  PutHash("h");
  EXPECT_EQ(db.Append("h", "x", now, kMaxLen).status(), OpStatus::kWrongType);
}

TEST_F(DbStringTest, AppendKeepsTtlAndLimitsLength) {
  PutTtl("k", "12345", 9000);
  EXPECT_EQ(db.Append("k", "678901", now, 10).status(), OpStatus::kStringTooLong);
  EXPECT_EQ(*db.Get("k", now), "12345");
  EXPECT_EQ(*db.Append("k", "67890", now, 10), 10);
  EXPECT_EQ(db.Pttl("k", now), 9000);
  EXPECT_EQ(db.ExpiresSize(), 1u);
}

TEST_F(DbStringTest, ManyAppendsMatchAModel) {
  // Crosses from inline to a growing heap string; binary data included.
  PutTtl("k", "", 50'000);
  std::string model;
  for (int i = 0; i < 3000; ++i) {
    std::string piece = std::to_string(i);
    piece.push_back('\0');
    model += piece;
    ASSERT_EQ(*db.Append("k", piece, now, kMaxLen), static_cast<int64_t>(model.size()));
    if (i % 97 == 0) {
      ASSERT_EQ(*db.Get("k", now), model) << i;
    }
  }
  EXPECT_EQ(*db.Get("k", now), model);
  EXPECT_EQ(*db.StrLen("k", now), static_cast<int64_t>(model.size()));
  EXPECT_EQ(db.Pttl("k", now), 50'000);
  // A grown string can still be overwritten, expired, and counted.
  EXPECT_EQ(db.ExpiresSize(), 1u);
  now += 50'001;
  EXPECT_FALSE(db.Exists("k", now));
  EXPECT_EQ(db.ExpiresSize(), 0u);
}

TEST_F(DbStringTest, StrLen) {
  EXPECT_EQ(*db.StrLen("k", now), 0);
  Put("k", std::string("ab\0c", 4));
  EXPECT_EQ(*db.StrLen("k", now), 4);
  PutHash("h");
  EXPECT_EQ(db.StrLen("h", now).status(), OpStatus::kWrongType);
}

TEST_F(DbStringTest, GetRange) {
  Put("s", "This is a string");
  struct Case {
    int64_t start, end;
    const char* want;
  };
  const Case cases[] = {
      {0, 3, "This"},
      {-3, -1, "ing"},
      {0, -1, "This is a string"},
      {10, 100, "string"},
      {5, 3, ""},
      {-1, -5, ""},      // both negative and start > end
      {-100, -50, "T"},  // both clamp to 0: Redis 7 returns the first byte
      {-100, 2, "Thi"},
      {100, 200, ""},
      {16, 16, ""},
      {15, 15, "g"},
      {0, 0, "T"},
      {-1, -1, "g"},
      {INT64_MIN, INT64_MAX, "This is a string"},
      {INT64_MAX, INT64_MIN, ""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(*db.GetRange("s", c.start, c.end, now), c.want) << c.start << " " << c.end;
  }
  EXPECT_EQ(*db.GetRange("missing", 0, -1, now), "");
  Put("empty", "");
  EXPECT_EQ(*db.GetRange("empty", 0, -1, now), "");
  EXPECT_EQ(*db.GetRange("empty", -100, -50, now), "");
  PutHash("h");
  EXPECT_EQ(db.GetRange("h", 0, -1, now).status(), OpStatus::kWrongType);
}

TEST_F(DbStringTest, SetRange) {
  // Missing key with an empty value: not created, returns 0.
  EXPECT_EQ(*db.SetRange("k", 5, "", now, kMaxLen), 0);
  EXPECT_FALSE(db.Exists("k", now));
  // Missing key: zero padding up to the offset.
  EXPECT_EQ(*db.SetRange("k", 3, "abc", now, kMaxLen), 6);
  EXPECT_EQ(*db.Get("k", now), std::string("\0\0\0abc", 6));
  // Inside the string, and past its end.
  EXPECT_EQ(*db.SetRange("k", 0, "xy", now, kMaxLen), 6);
  EXPECT_EQ(*db.Get("k", now), std::string("xy\0abc", 6));
  EXPECT_EQ(*db.SetRange("k", 8, "Z", now, kMaxLen), 9);
  EXPECT_EQ(*db.Get("k", now), std::string("xy\0abc\0\0Z", 9));
  // Existing key with an empty value: unchanged, returns the length.
  EXPECT_EQ(*db.SetRange("k", 100, "", now, kMaxLen), 9);
  EXPECT_EQ(*db.StrLen("k", now), 9);
  // Too long: error, nothing created or changed.
  EXPECT_EQ(db.SetRange("k", 10, "abc", now, 12).status(), OpStatus::kStringTooLong);
  EXPECT_EQ(*db.StrLen("k", now), 9);
  EXPECT_EQ(*db.SetRange("k", 9, "abc", now, 12), 12);
  EXPECT_EQ(db.SetRange("new", 10, "abc", now, 12).status(), OpStatus::kStringTooLong);
  EXPECT_FALSE(db.Exists("new", now));
  EXPECT_EQ(db.SetRange("new", INT64_MAX, "abc", now, INT64_MAX).status(),
            OpStatus::kStringTooLong);
  EXPECT_EQ(db.SetRange("new", -1, "abc", now, kMaxLen).status(), OpStatus::kOutOfRange);
  // Wrong type wins over the empty-value shortcut.
  PutHash("h");
  EXPECT_EQ(db.SetRange("h", 0, "", now, kMaxLen).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.SetRange("h", 0, "x", now, kMaxLen).status(), OpStatus::kWrongType);
}

TEST_F(DbStringTest, SetRangeFarOffsetOnMissingKey) {
  EXPECT_EQ(*db.SetRange("far", 100, "xy", now, kMaxLen), 102);
  EXPECT_EQ(*db.Get("far", now), std::string(100, '\0') + "xy");
  EXPECT_EQ(*db.Append("far", "z", now, kMaxLen), 103);
  EXPECT_EQ(*db.GetRange("far", -3, -1, now), "xyz");
  EXPECT_EQ(*db.IncrBy("n", 1, now), 1);  // unrelated keys unaffected
  Put("far", "short");                    // SET replaces a grown string with an inline one
  EXPECT_EQ(*db.Get("far", now), "short");
}

TEST_F(DbStringTest, SetRangeKeepsTtlAndGrowsLarge) {
  PutTtl("k", "hello", 4000);
  EXPECT_EQ(*db.SetRange("k", 1000, "!", now, kMaxLen), 1001);
  EXPECT_EQ(db.Pttl("k", now), 4000);
  std::string want = "hello" + std::string(995, '\0') + "!";
  EXPECT_EQ(*db.Get("k", now), want);
  EXPECT_EQ(*db.SetRange("k", 0, "J", now, kMaxLen), 1001);
  want[0] = 'J';
  EXPECT_EQ(*db.Get("k", now), want);
  EXPECT_EQ(*db.SetRange("k", 2000, "?", now, kMaxLen), 2001);
  want += std::string(999, '\0') + "?";
  EXPECT_EQ(*db.Get("k", now), want);
  EXPECT_EQ(db.ExpiresSize(), 1u);
}

TEST_F(DbStringTest, IncrBy) {
  EXPECT_EQ(*db.IncrBy("n", 1, now), 1);
  EXPECT_EQ(*db.IncrBy("n", 41, now), 42);
  EXPECT_EQ(*db.Get("n", now), "42");
  EXPECT_EQ(*db.IncrBy("n", -100, now), -58);
  EXPECT_EQ(*db.Get("n", now), "-58");
  EXPECT_EQ(*db.IncrBy("n", 0, now), -58);
  for (const char* bad : {"", " 1", "1 ", "1.5", "abc", "01", "+1", "-0", "99999999999999999999"}) {
    Put("bad", bad);
    EXPECT_EQ(db.IncrBy("bad", 1, now).status(), OpStatus::kNotAnInteger) << bad;
    EXPECT_EQ(*db.Get("bad", now), bad);
  }
  PutHash("h");
  EXPECT_EQ(db.IncrBy("h", 1, now).status(), OpStatus::kWrongType);
}

TEST_F(DbStringTest, IncrByOverflow) {
  Put("max", "9223372036854775806");
  EXPECT_EQ(*db.IncrBy("max", 1, now), INT64_MAX);
  EXPECT_EQ(db.IncrBy("max", 1, now).status(), OpStatus::kIncrOverflow);
  EXPECT_EQ(*db.Get("max", now), "9223372036854775807");
  Put("min", "-9223372036854775807");
  EXPECT_EQ(*db.IncrBy("min", -1, now), INT64_MIN);
  EXPECT_EQ(db.IncrBy("min", -1, now).status(), OpStatus::kIncrOverflow);
  EXPECT_EQ(*db.IncrBy("min", INT64_MAX, now), -1);
  EXPECT_EQ(db.IncrBy("fresh", INT64_MIN, now).ok(), true);
  EXPECT_EQ(*db.Get("fresh", now), "-9223372036854775808");
}

TEST_F(DbStringTest, IncrByKeepsTtl) {
  PutTtl("n", "9", 3000);
  EXPECT_EQ(*db.IncrBy("n", 1, now), 10);  // length changes: entry rebuilt
  EXPECT_EQ(db.Pttl("n", now), 3000);
  EXPECT_EQ(*db.IncrBy("n", 5, now), 15);  // same length: in place
  EXPECT_EQ(db.Pttl("n", now), 3000);
  EXPECT_EQ(db.ExpiresSize(), 1u);
}

TEST_F(DbStringTest, IncrByFloat) {
  Put("f", "10.50");
  EXPECT_EQ(*db.IncrByFloat("f", 0.1L, now), "10.6");
  EXPECT_EQ(*db.Get("f", now), "10.6");
  EXPECT_EQ(*db.IncrByFloat("f", -5.0L, now), "5.6");
  Put("e", "5.0e3");
  EXPECT_EQ(*db.IncrByFloat("e", 2.0e2L, now), "5200");
  EXPECT_EQ(*db.IncrByFloat("missing", 3.5L, now), "3.5");
  Put("i", "3");
  EXPECT_EQ(*db.IncrByFloat("i", 1.5L, now), "4.5");
  Put("neg", "1");
  EXPECT_EQ(*db.IncrByFloat("neg", -1.0L, now), "0");
  EXPECT_EQ(*db.IncrByFloat("neg", -0.25L, now), "-0.25");
  Put("hex", "0x10");
  EXPECT_EQ(*db.IncrByFloat("hex", 1.0L, now), "17");
}

TEST_F(DbStringTest, IncrByFloatErrors) {
  for (const char* bad : {"", "abc", " 1", "1 ", "1.2.3", "nan"}) {
    Put("bad", bad);
    EXPECT_EQ(db.IncrByFloat("bad", 1.0L, now).status(), OpStatus::kNotAFloat) << bad;
    EXPECT_EQ(*db.Get("bad", now), bad);
  }
  Put("big", "1e4932");
  EXPECT_EQ(db.IncrByFloat("big", 1e4932L, now).status(), OpStatus::kNanOrInf);
  EXPECT_EQ(*db.Get("big", now), "1e4932");
  Put("inf", "inf");  // parses, but the result is infinite
  EXPECT_EQ(db.IncrByFloat("inf", 1.0L, now).status(), OpStatus::kNanOrInf);
  EXPECT_EQ(db.IncrByFloat("x", std::numeric_limits<long double>::infinity(), now).status(),
            OpStatus::kNanOrInf);
  EXPECT_FALSE(db.Exists("x", now));
  PutHash("h");
  EXPECT_EQ(db.IncrByFloat("h", 1.0L, now).status(), OpStatus::kWrongType);
}

TEST_F(DbStringTest, IncrByFloatKeepsTtl) {
  PutTtl("f", "1", 2500);
  EXPECT_EQ(*db.IncrByFloat("f", 0.5L, now), "1.5");
  EXPECT_EQ(db.Pttl("f", now), 2500);
  EXPECT_EQ(db.ExpiresSize(), 1u);
}

}  // namespace
TEST(DbLcsTest, SubsequenceLengthAndRangesLastFirst) {
  Db::LcsResult r = Db::Lcs("ohmytext", "mynewtext", true, 0);
  EXPECT_EQ(r.lcs, "mytext");
  EXPECT_EQ(r.len, 6u);
  ASSERT_EQ(r.matches.size(), 2u);
  EXPECT_EQ((std::vector<uint32_t>{r.matches[0].a_start, r.matches[0].a_end, r.matches[0].b_start,
                                   r.matches[0].b_end}),
            (std::vector<uint32_t>{4, 7, 5, 8}));
  EXPECT_EQ((std::vector<uint32_t>{r.matches[1].a_start, r.matches[1].a_end, r.matches[1].b_start,
                                   r.matches[1].b_end}),
            (std::vector<uint32_t>{2, 3, 0, 1}));
  EXPECT_EQ(Db::Lcs("ohmytext", "mynewtext", true, 3).matches.size(), 1u);  // "text" only
  Db::LcsResult len_only = Db::Lcs("ohmytext", "mynewtext", false, 0);
  EXPECT_EQ(len_only.len, 6u);
  EXPECT_TRUE(len_only.lcs.empty());
  EXPECT_EQ(Db::Lcs("", "abc", true, 0).len, 0u);
  EXPECT_EQ(Db::LcsTableBytes("ab", "abc"), 3u * 4u * 4u);
}

}  // namespace deadbolt::shard

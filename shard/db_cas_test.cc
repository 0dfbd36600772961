// Compare-and-set on strings: SET's IFEQ/IFNE/IFDEQ/IFDNE, DELEX, DELIFEQ and DIGEST, against
// Redis 8.4's semantics. Time is a plain int64 that the tests advance.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "shard/base/test_util.h"
#include "shard/db.h"

namespace deadbolt::shard {
namespace {

using Cond = SetOptions::Cond;

// DIGEST's text for a digest: 16 lower-case hex digits.
std::string Hex(uint64_t d) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(d));
  return buf;
}

std::string Upper(std::string s) {
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return s;
}

class DbCasTest : public ::testing::Test {
 protected:
  static SetOptions If(Cond cond, std::string_view value) {
    SetOptions o;
    o.cond = cond;
    o.cond_value = value;
    return o;
  }
  void Put(std::string_view key, std::string_view value) {
    ASSERT_TRUE(db.Set(key, value, SetOptions{}, now)->written);
  }
  void PutTtl(std::string_view key, std::string_view value, int64_t ttl_ms) {
    SetOptions o;
    o.expire = SetOptions::Expire::kAt;
    o.expire_at_ms = now + ttl_ms;
    ASSERT_TRUE(db.Set(key, value, o, now)->written);
  }
  void PutHash(std::string_view key) { ASSERT_EQ(*db.HSet(key, "f", "v", now), 1); }
  std::optional<std::string> Value(std::string_view key) {
    auto r = db.Get(key, now);
    if (!r.ok()) return std::nullopt;
    return std::string(*r);
  }
  // The outcome of a SET: "written", "skipped" or "wrongtype".
  std::string SetOutcome(std::string_view key, std::string_view value, const SetOptions& o) {
    auto r = db.Set(key, value, o, now);
    if (!r.ok()) return r.status() == OpStatus::kWrongType ? "wrongtype" : "error";
    return r->written ? "written" : "skipped";
  }

  Db db;
  int64_t now = 1'700'000'000'000;
};

// --- DIGEST ---

TEST_F(DbCasTest, StringDigestIsXxh3WithSeedZero) {
  // Published XXH3-64 vectors, and DIGEST replies documented for Redis 8.4.
  EXPECT_EQ(Hex(StringDigest("")), "2d06800538d394c2");
  EXPECT_EQ(Hex(StringDigest("a")), "e6c632b61e964e1f");
  EXPECT_EQ(Hex(StringDigest("abc")), "78af5f94892f3950");
  EXPECT_EQ(Hex(StringDigest("hello")), "9555e8555c62dcfd");
  EXPECT_EQ(Hex(StringDigest("Hello world")), "b6acb9d84a38ff74");
  EXPECT_EQ(Hex(StringDigest("v8")), "0cc76dbb41381419");  // a leading zero digit
  // Binary values: every byte counts, NULs included.
  EXPECT_EQ(Hex(StringDigest(std::string("\0", 1))), "c44bdff4074eecdb");
  EXPECT_EQ(Hex(StringDigest(std::string("\0\1\2", 3))), "5f4299fc161c9cbb");
  EXPECT_NE(StringDigest(std::string("a\0b", 3)), StringDigest("a"));
  EXPECT_NE(StringDigest(std::string("a\0b", 3)), StringDigest(std::string("a\0c", 3)));
}

TEST_F(DbCasTest, DigestOfKeys) {
  EXPECT_EQ(db.Digest("missing", now).status(), OpStatus::kKeyNotFound);
  Put("empty", "");
  EXPECT_EQ(Hex(*db.Digest("empty", now)), "2d06800538d394c2");
  Put("bin", std::string("\0\1\2", 3));
  EXPECT_EQ(Hex(*db.Digest("bin", now)), "5f4299fc161c9cbb");
  // A string that APPEND moved to a heap block digests the same as the same bytes inline.
  std::string big(300, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  ASSERT_EQ(*db.Append("grown", big.substr(0, 10), now, 1 << 20), 10);
  ASSERT_EQ(*db.Append("grown", big.substr(10), now, 1 << 20), 300);
  Put("inline", big);
  EXPECT_EQ(*db.Digest("grown", now), StringDigest(big));
  EXPECT_EQ(*db.Digest("inline", now), StringDigest(big));
  PutHash("h");
  EXPECT_EQ(db.Digest("h", now).status(), OpStatus::kWrongType);
  PutTtl("t", "hello", 100);
  EXPECT_EQ(Hex(*db.Digest("t", now + 100)), "9555e8555c62dcfd");
  EXPECT_EQ(db.Digest("t", now + 101).status(), OpStatus::kKeyNotFound);  // expired
  EXPECT_FALSE(db.Exists("t", now + 101));
}

// --- SET IF* ---

// Every condition against every kind of key, with the value or digest that matches and one that
// does not.
TEST_F(DbCasTest, SetConditionMatrix) {
  const std::string digest_v = Hex(StringDigest("v"));
  struct Case {
    Cond cond;
    std::string cmp;  // compared value or digest
    const char* missing;
    const char* string_v;  // the key holds "v"
    const char* hash;
  };
  const Case cases[] = {
      {Cond::kIfEq, "v", "skipped", "written", "wrongtype"},
      {Cond::kIfEq, "x", "skipped", "skipped", "wrongtype"},
      {Cond::kIfNe, "v", "written", "skipped", "wrongtype"},
      {Cond::kIfNe, "x", "written", "written", "wrongtype"},
      {Cond::kIfDeq, digest_v, "skipped", "written", "wrongtype"},
      {Cond::kIfDeq, Upper(digest_v), "skipped", "written", "wrongtype"},
      {Cond::kIfDeq, Hex(StringDigest("x")), "skipped", "skipped", "wrongtype"},
      {Cond::kIfDne, digest_v, "written", "skipped", "wrongtype"},
      {Cond::kIfDne, Upper(digest_v), "written", "skipped", "wrongtype"},
      {Cond::kIfDne, Hex(StringDigest("x")), "written", "written", "wrongtype"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "cond " << static_cast<int>(c.cond) << " cmp " << c.cmp);
    db.Flush();
    EXPECT_EQ(SetOutcome("k", "new", If(c.cond, c.cmp)), c.missing);
    EXPECT_EQ(Value("k"), std::string(c.missing) == "written" ? std::optional<std::string>("new")
                                                              : std::nullopt);
    db.Flush();
    Put("k", "v");
    EXPECT_EQ(SetOutcome("k", "new", If(c.cond, c.cmp)), c.string_v);
    EXPECT_EQ(Value("k"), std::string(c.string_v) == "written" ? "new" : "v");
    db.Flush();
    PutHash("k");
    EXPECT_EQ(SetOutcome("k", "new", If(c.cond, c.cmp)), c.hash);
    EXPECT_EQ(*db.HGet("k", "f", now), "v");  // untouched
  }
}

TEST_F(DbCasTest, SetConditionWithGetReturnsTheOldValueEitherWay) {
  Put("k", "old");
  SetOptions o = If(Cond::kIfEq, "nope");
  o.get = true;
  auto r = db.Set("k", "new", o, now);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->written);
  EXPECT_EQ(r->old_value, "old");
  o.cond_value = "old";
  r = db.Set("k", "new", o, now);
  EXPECT_TRUE(r->written);
  EXPECT_EQ(r->old_value, "old");
  EXPECT_EQ(Value("k"), "new");
  // Missing key: nothing to return, nothing written with IFEQ.
  r = db.Set("none", "x", o, now);
  EXPECT_FALSE(r->written);
  EXPECT_EQ(r->old_value, std::nullopt);
  // GET on a hash: WRONGTYPE, whatever the condition.
  PutHash("h");
  o.cond = Cond::kIfNe;
  EXPECT_EQ(db.Set("h", "x", o, now).status(), OpStatus::kWrongType);
}

TEST_F(DbCasTest, SetConditionWithExpireOptions) {
  // The lock pattern's extend: same value, new TTL, only for the owner.
  PutTtl("lock", "tok", 30'000);
  SetOptions o = If(Cond::kIfEq, "tok");
  o.expire = SetOptions::Expire::kAt;
  o.expire_at_ms = now + 60'000;
  EXPECT_EQ(SetOutcome("lock", "tok", o), "written");
  EXPECT_EQ(db.Pttl("lock", now), 60'000);
  EXPECT_EQ(Value("lock"), "tok");
  // Another owner's token neither extends nor replaces.
  o.cond_value = "other";
  o.expire_at_ms = now + 90'000;
  EXPECT_EQ(SetOutcome("lock", "other", o), "skipped");
  EXPECT_EQ(db.Pttl("lock", now), 60'000);
  // KEEPTTL keeps it while the value changes.
  SetOptions keep = If(Cond::kIfEq, "tok");
  keep.expire = SetOptions::Expire::kKeep;
  EXPECT_EQ(SetOutcome("lock", "tik", keep), "written");
  EXPECT_EQ(db.Pttl("lock", now), 60'000);
  // A plain IF* SET drops the TTL as a plain SET does.
  EXPECT_EQ(SetOutcome("lock", "tok", If(Cond::kIfNe, "zzz")), "written");
  EXPECT_EQ(db.Pttl("lock", now), -1);
  // A time already past: the condition holds, the SET succeeds and the key is gone.
  SetOptions past = If(Cond::kIfEq, "tok");
  past.expire = SetOptions::Expire::kAt;
  past.expire_at_ms = now - 1;
  EXPECT_EQ(SetOutcome("lock", "x", past), "written");
  EXPECT_FALSE(db.Exists("lock", now));
  // IFNE creates a missing key with its TTL.
  SetOptions create = If(Cond::kIfNe, "x");
  create.expire = SetOptions::Expire::kAt;
  create.expire_at_ms = now + 5'000;
  EXPECT_EQ(SetOutcome("fresh", "v", create), "written");
  EXPECT_EQ(db.Pttl("fresh", now), 5'000);
  EXPECT_EQ(db.ExpiresSize(), 1u);
}

TEST_F(DbCasTest, SetConditionOnExpiredKeySeesItMissing) {
  PutTtl("k", "v", 10);
  now += 11;
  EXPECT_EQ(SetOutcome("k", "new", If(Cond::kIfEq, "v")), "skipped");
  EXPECT_FALSE(db.Exists("k", now));
  PutTtl("k", "v", 10);
  now += 11;
  EXPECT_EQ(SetOutcome("k", "new", If(Cond::kIfNe, "v")), "written");  // v is gone
  EXPECT_EQ(Value("k"), "new");
  EXPECT_EQ(db.Pttl("k", now), -1);
  // Expired hash: missing too, so no WRONGTYPE.
  ASSERT_EQ(*db.HSet("h", "f", "v", now), 1);
  ASSERT_EQ(db.ExpireAt("h", now + 5, ExpireCond::kNone, now), 1);
  now += 6;
  EXPECT_EQ(SetOutcome("h", "s", If(Cond::kIfDne, "0000000000000000")), "written");
  EXPECT_EQ(Value("h"), "s");
}

TEST_F(DbCasTest, ValuesCompareAsBytes) {
  Put("n", "0123");
  EXPECT_EQ(SetOutcome("n", "x", If(Cond::kIfEq, "123")), "skipped");
  Put("b", std::string("a\0b", 3));
  EXPECT_EQ(SetOutcome("b", "x", If(Cond::kIfEq, "a")), "skipped");
  EXPECT_EQ(SetOutcome("b", "x", If(Cond::kIfEq, std::string("a\0b", 3))), "written");
  Put("e", "");
  EXPECT_EQ(SetOutcome("e", "x", If(Cond::kIfNe, "")), "skipped");
  EXPECT_EQ(SetOutcome("e", "x", If(Cond::kIfEq, "")), "written");
  Put("case", "Tok");
  EXPECT_EQ(SetOutcome("case", "x", If(Cond::kIfEq, "tok")), "skipped");  // values: exact case
}

TEST_F(DbCasTest, DigestTextRules) {
  Put("k", "hello");  // digest 9555e8555c62dcfd
  // Only a 16-character text equal to the digest ignoring ASCII case matches.
  for (const char* text : {"9555E8555C62DCFD", "9555e8555C62dcFD"}) {
    EXPECT_EQ(SetOutcome("k", "hello", If(Cond::kIfDeq, text)), "written") << text;
  }
  for (const char* text : {"9555e8555c62dcf", "9555e8555c62dcfd0", "", "zzzzzzzzzzzzzzzz",
                           "0x9555e8555c62dc", " 9555e8555c62dcf"}) {
    EXPECT_EQ(SetOutcome("k", "hello", If(Cond::kIfDeq, text)), "skipped") << text;
    EXPECT_EQ(SetOutcome("k", "hello", If(Cond::kIfDne, text)), "written") << text;
  }
  // A byte that only a sloppy case fold (c | 0x20) would take for the digit '5'.
  std::string folded = "9555e8555c62dcfd";
  folded[1] = '\x15';
  EXPECT_EQ(SetOutcome("k", "hello", If(Cond::kIfDeq, folded)), "skipped");
  EXPECT_EQ(SetOutcome("k", "hello", If(Cond::kIfDne, folded)), "written");
}

TEST_F(DbCasTest, SetIfEqReleaseExtendIsInPlace) {
  // The hot path: same-length value and same-width TTL leave the entry where it is.
  PutTtl("lock:1", "0123456789abcdef0123456789abcdef0123", 30'000);
  auto before = db.Get("lock:1", now);
  const char* data_before = before->data();
  SetOptions o = If(Cond::kIfEq, "0123456789abcdef0123456789abcdef0123");
  o.expire = SetOptions::Expire::kAt;
  o.expire_at_ms = now + 60'000;
  EXPECT_EQ(SetOutcome("lock:1", "0123456789abcdef0123456789abcdef0123", o), "written");
  EXPECT_EQ(db.Get("lock:1", now)->data(), data_before);
  EXPECT_EQ(db.Pttl("lock:1", now), 60'000);
}

// --- DELEX / DELIFEQ ---

TEST_F(DbCasTest, DelExWithoutConditionDeletesAnyType) {
  EXPECT_FALSE(*db.DelEx("none", Cond::kNone, "", now));
  Put("s", "v");
  PutHash("h");
  EXPECT_TRUE(*db.DelEx("s", Cond::kNone, "", now));
  EXPECT_TRUE(*db.DelEx("h", Cond::kNone, "", now));
  EXPECT_EQ(db.Size(), 0u);
  EXPECT_EQ(db.DelEx("s", Cond::kNX, "", now).status(), OpStatus::kSyntax);
  EXPECT_EQ(db.DelEx("s", Cond::kXX, "", now).status(), OpStatus::kSyntax);
}

TEST_F(DbCasTest, DelExConditionMatrix) {
  const std::string digest_v = Hex(StringDigest("v"));
  struct Case {
    Cond cond;
    std::string cmp;
    bool deletes_v;  // when the key holds "v"
  };
  const Case cases[] = {
      {Cond::kIfEq, "v", true},
      {Cond::kIfEq, "x", false},
      {Cond::kIfNe, "v", false},
      {Cond::kIfNe, "x", true},
      {Cond::kIfDeq, digest_v, true},
      {Cond::kIfDeq, Upper(digest_v), true},
      {Cond::kIfDeq, "0000000000000000", false},
      {Cond::kIfDne, digest_v, false},
      {Cond::kIfDne, "0000000000000000", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "cond " << static_cast<int>(c.cond) << " cmp " << c.cmp);
    db.Flush();
    EXPECT_FALSE(*db.DelEx("k", c.cond, c.cmp, now));  // missing: 0 whatever the condition
    Put("k", "v");
    EXPECT_EQ(*db.DelEx("k", c.cond, c.cmp, now), c.deletes_v);
    EXPECT_EQ(db.Exists("k", now), !c.deletes_v);
    PutHash("h");
    EXPECT_EQ(db.DelEx("h", c.cond, c.cmp, now).status(), OpStatus::kWrongType);
    EXPECT_TRUE(db.Exists("h", now));
  }
}

TEST_F(DbCasTest, DelIfEqLockRelease) {
  // acquire: SET k tok NX PX 30000; release: DELIFEQ k tok (DelEx kIfEq).
  SetOptions acquire;
  acquire.cond = Cond::kNX;
  acquire.expire = SetOptions::Expire::kAt;
  acquire.expire_at_ms = now + 30'000;
  EXPECT_TRUE(db.Set("lock", "tokA", acquire, now)->written);
  EXPECT_FALSE(db.Set("lock", "tokB", acquire, now)->written);
  EXPECT_FALSE(*db.DelEx("lock", Cond::kIfEq, "tokB", now));  // not the owner
  EXPECT_EQ(Value("lock"), "tokA");
  EXPECT_EQ(db.ExpiresSize(), 1u);
  EXPECT_TRUE(*db.DelEx("lock", Cond::kIfEq, "tokA", now));
  EXPECT_FALSE(db.Exists("lock", now));
  EXPECT_EQ(db.ExpiresSize(), 0u);
  EXPECT_FALSE(*db.DelEx("lock", Cond::kIfEq, "tokA", now));  // released twice
  // A lock whose TTL ran out is gone for its old owner too.
  EXPECT_TRUE(db.Set("lock", "tokA", acquire, now)->written);
  now += 30'001;
  EXPECT_FALSE(*db.DelEx("lock", Cond::kIfEq, "tokA", now));
  EXPECT_EQ(db.Size(), 0u);
  EXPECT_EQ(db.ExpiresSize(), 0u);
}

TEST_F(DbCasTest, ManyLocksAcquireAndReleaseShrinkTheTable) {
  SetOptions acquire;
  acquire.cond = Cond::kNX;
  acquire.expire = SetOptions::Expire::kAt;
  acquire.expire_at_ms = now + 30'000;
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE(db.Set(Cat("lock:", i), Cat("tok", i), acquire, now)->written);
  }
  for (int i = 0; i < 5000; ++i) {
    ASSERT_FALSE(*db.DelEx(Cat("lock:", i), Cond::kIfEq, Cat("tok", i + 1), now));
    ASSERT_TRUE(*db.DelEx(Cat("lock:", i), Cond::kIfEq, Cat("tok", i), now));
  }
  EXPECT_EQ(db.Size(), 0u);
  EXPECT_EQ(db.ExpiresSize(), 0u);
}

// --- the change hook ---

class CountingObserver : public KeyObserver {
 public:
  void OnKeyChanged(std::string_view key) override { changed.emplace_back(key); }
  std::vector<std::string> changed;
};

TEST_F(DbCasTest, EveryCasWriteReportsTheChangeAndFailuresDoNot) {
  CountingObserver obs;
  Put("k", "v");
  db.AddObserver(&obs);
  EXPECT_EQ(SetOutcome("k", "x", If(Cond::kIfEq, "nope")), "skipped");
  EXPECT_FALSE(*db.DelEx("k", Cond::kIfNe, "v", now));
  EXPECT_TRUE(db.Digest("k", now).ok());
  EXPECT_TRUE(obs.changed.empty());
  EXPECT_EQ(SetOutcome("k", "x", If(Cond::kIfEq, "v")), "written");
  EXPECT_EQ(obs.changed.size(), 1u);
  EXPECT_EQ(SetOutcome("new", "x", If(Cond::kIfNe, "v")), "written");
  EXPECT_EQ(obs.changed.size(), 2u);
  EXPECT_TRUE(*db.DelEx("k", Cond::kIfEq, "x", now));
  EXPECT_TRUE(*db.DelEx("new", Cond::kNone, "", now));
  ASSERT_EQ(obs.changed.size(), 4u);
  EXPECT_EQ(obs.changed[0], "k");
  EXPECT_EQ(obs.changed[1], "new");
  EXPECT_EQ(obs.changed[2], "k");
  EXPECT_EQ(obs.changed[3], "new");
  db.RemoveObserver(&obs);
}

}  // namespace
}  // namespace deadbolt::shard

#include "shard/types/set_value.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "shard/types/value_kinds.h"

namespace deadbolt::shard {
namespace {

// Owns the latest block of a series of mutations.
class Set {
 public:
  Set() : s_(SetValue::Create()) {}
  ~Set() { delete s_; }
  Set(const Set&) = delete;
  Set& operator=(const Set&) = delete;
  bool Add(std::string_view m) {
    bool added;
    s_ = SetValue::Add(s_, m, &added);
    return added;
  }
  bool Remove(std::string_view m) {
    bool removed;
    s_ = SetValue::Remove(s_, m, &removed);
    return removed;
  }
  const SetValue* operator->() const { return s_; }
  SetValue* release() { return std::exchange(s_, SetValue::Create()); }

 private:
  SetValue* s_;
};

std::vector<std::string> All(const Set& s) {
  std::vector<std::string> out;
  s->ForEach([&](std::string_view m) { out.emplace_back(m); });
  return out;
}

TEST(SetValueTest, CanonicalIntIsRedisString2ll) {
  EXPECT_EQ(SetValue::CanonicalInt("0"), 0);
  EXPECT_EQ(SetValue::CanonicalInt("-12"), -12);
  EXPECT_EQ(SetValue::CanonicalInt("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(SetValue::CanonicalInt("-9223372036854775808"), INT64_MIN);
  for (std::string_view bad : {"", "-", "-0", "01", "+1", " 1", "1 ", "1a",
                               "9223372036854775808", "-9223372036854775809", "1.0"}) {
    EXPECT_FALSE(SetValue::CanonicalInt(bad)) << bad;
  }
}

// Integers stay an intset, sorted, widening 2 -> 4 -> 8 bytes as wider members arrive.
// Small sets added to one member at a time keep at most 16 bytes of slack in their buffer.
TEST(SetValueTest, PackedBuffersGrowToWhatTheyHold) {
  Set strings, ints;
  for (int i = 0; i < 10; i++) {
    strings.Add(std::string(35, 'u') + static_cast<char>('0' + i));
    ints.Add(std::to_string(1000 + i));
  }
  ASSERT_EQ(strings->form(), SetValue::Form::kPacked);
  ASSERT_EQ(ints->form(), SetValue::Form::kInts);
  EXPECT_LE(strings->AllocatedBytes(), sizeof(SetValue) + 10 * 37 + 16);
  EXPECT_LE(ints->AllocatedBytes(), sizeof(SetValue) + 10 * 8 + 16);
}

// One block, as Redis's intset: the 8-byte header and the slots, rounded up to 8 bytes, at every
// size from empty to the intset limit and back (a header object beside a std::string buffer
// took 48 + 64 bytes for 10 members).
TEST(SetValueTest, IntsetIsOneBlockOfHeaderAndSlots) {
  Set s;
  EXPECT_EQ(s->AllocatedBytes(), 8u);
  for (int i = 0; i < 10; ++i) s.Add(std::to_string(40000 + i));  // 4-byte slots
  EXPECT_EQ(s->AllocatedBytes(), 48u);
  auto expect = [&](size_t width) { return 8 + ((s->size() * width + 7) & ~size_t{7}); };
  for (int i = 10; i < static_cast<int>(SetValue::kMaxIntsetEntries) - 1; ++i) {
    s.Add(std::to_string(i % 2 == 0 ? i : -40000 - i));
    ASSERT_EQ(s->AllocatedBytes(), expect(4)) << i;
  }
  s.Add("5000000000");  // 8-byte slots
  s.Remove("5000000000");
  EXPECT_EQ(s->form(), SetValue::Form::kInts);
  EXPECT_EQ(s->AllocatedBytes(), expect(8));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s.Remove(std::to_string(40000 + i)));
  while (s->size() > 0) {
    ASSERT_TRUE(s.Remove(All(s).front()));
    ASSERT_EQ(s->AllocatedBytes(), expect(8)) << s->size();
  }
}

TEST(SetValueTest, IntsetSortedAndWidening) {
  Set s;
  for (std::string m : {"5", "-3", "100", "5"}) s.Add(m);
  EXPECT_EQ(s->form(), SetValue::Form::kInts);
  EXPECT_EQ(All(s), (std::vector<std::string>{"-3", "5", "100"}));
  EXPECT_TRUE(s.Add("70000"));
  EXPECT_TRUE(s.Add("-9223372036854775808"));
  EXPECT_EQ(All(s), (std::vector<std::string>{"-9223372036854775808", "-3", "5", "100", "70000"}));
  EXPECT_TRUE(s->Contains("70000"));
  EXPECT_FALSE(s->Contains("070000"));
  EXPECT_TRUE(s.Remove("5"));
  EXPECT_FALSE(s.Remove("5"));
  EXPECT_EQ(s->size(), 4u);
  EXPECT_EQ(s->form(), SetValue::Form::kInts);
}

TEST(SetValueTest, EncodingConversions) {
  Set a;  // ints -> packed on a short non-integer
  a.Add("1");
  a.Add("2");
  a.Add("x");
  EXPECT_EQ(a->form(), SetValue::Form::kPacked);
  EXPECT_EQ(All(a), (std::vector<std::string>{"1", "2", "x"}));
  for (size_t i = 3; i < SetValue::kMaxPackedEntries; ++i) a.Add("m" + std::to_string(i));
  EXPECT_EQ(a->form(), SetValue::Form::kPacked);
  a.Add("one-more");
  EXPECT_EQ(a->form(), SetValue::Form::kTable);
  EXPECT_EQ(a->size(), SetValue::kMaxPackedEntries + 1);
  EXPECT_TRUE(a->Contains("x"));
  EXPECT_TRUE(a->Contains("1"));

  Set b;  // packed -> table on a long member
  b.Add("x");
  b.Add(std::string(SetValue::kMaxPackedLen + 1, 'l'));
  EXPECT_EQ(b->form(), SetValue::Form::kTable);

  Set c;  // ints -> table past the intset limit
  for (size_t i = 0; i < SetValue::kMaxIntsetEntries; ++i) c.Add(std::to_string(i * 7));
  EXPECT_EQ(c->form(), SetValue::Form::kInts);
  c.Add("-1");
  EXPECT_EQ(c->form(), SetValue::Form::kTable);
  EXPECT_EQ(c->size(), SetValue::kMaxIntsetEntries + 1);
  EXPECT_TRUE(c->Contains("7"));

  Set d;  // a big intset meeting a string goes straight to a table
  for (size_t i = 0; i < SetValue::kMaxPackedEntries; ++i) d.Add(std::to_string(i));
  d.Add("s");
  EXPECT_EQ(d->form(), SetValue::Form::kTable);
  // Never back: removing down to one member keeps the table, as Redis.
  for (size_t i = 0; i < SetValue::kMaxPackedEntries; ++i) d.Remove(std::to_string(i));
  EXPECT_EQ(d->form(), SetValue::Form::kTable);
  EXPECT_EQ(All(d), (std::vector<std::string>{"s"}));
}

TEST(SetValueTest, MatchesStdSetUnderRandomOperations) {
  std::mt19937 rng(11);
  for (int kind = 0; kind < 3; ++kind) {
    Set s;
    std::set<std::string> model;
    for (int step = 0; step < 6000; ++step) {
      std::string m = std::to_string(static_cast<int>(rng() % 700) - 100);
      if (kind == 1 && rng() % 50 == 0) m = "s" + m;
      if (kind == 2 && rng() % 3 == 0) m = std::string(rng() % 80, 'a') + m;
      const bool add = rng() % 3 != 0;
      if (add) {
        EXPECT_EQ(s.Add(m), model.insert(m).second);
      } else {
        EXPECT_EQ(s.Remove(m), model.erase(m) == 1);
      }
      ASSERT_EQ(s->size(), model.size());
      if (step % 101 == 0) {
        std::vector<std::string> got = All(s);
        std::sort(got.begin(), got.end());
        ASSERT_EQ(got, std::vector<std::string>(model.begin(), model.end()));
        EXPECT_EQ(s->Contains(m), model.count(m) == 1);
      }
    }
  }
}

TEST(SetValueTest, RandomAndScanCoverEveryMember) {
  for (size_t n : {size_t{5}, size_t{1000}}) {
    Set s;
    for (size_t i = 0; i < n; ++i) s.Add("m" + std::to_string(i));
    uint64_t rng = 1;
    std::set<std::string> seen;
    for (size_t i = 0; i < n * 40; ++i) seen.insert(s->Random(&rng));
    EXPECT_EQ(seen.size(), n);
    std::set<std::string> scanned;
    uint64_t cursor = 0;
    do {
      cursor = s->Scan(cursor, 10, [&](std::string_view m) { scanned.emplace(m); });
    } while (cursor != 0);
    EXPECT_EQ(scanned.size(), n);
  }
}

TEST(SetValueTest, EntryOwnsTheSet) {
  Set owned;
  for (int i = 0; i < 200; ++i) owned.Add("x" + std::to_string(i));
  SetValue* s = owned.release();
  Entry* e = MakeSetEntry("k", s, 5);
  EXPECT_EQ(TypeOf(e), ValueType::kSet);
  EXPECT_EQ(SetOf(e).block(), s);
  DestroyEntry(e);
}

// The inline form's limit: [u8 width][slots] up to kMaxInlineBytes (255), i.e. 127 members of
// 2 bytes or 63 of 4; MakeSetEntry keeps exactly those in the Entry, and the view reads them
// back as the block would.
TEST(SetValueTest, InlineIntsetAtItsThresholds) {
  struct Case {
    int64_t base;  // members are base, base + 1, ...
    size_t fits;   // the most that fit inline
  };
  for (Case c : {Case{0, 127}, Case{100'000, 63}, Case{int64_t{1} << 40, 31}}) {
    for (size_t n : {size_t{1}, c.fits, c.fits + 1}) {
      Set owned;
      for (size_t i = 0; i < n; ++i) owned.Add(std::to_string(c.base + static_cast<int64_t>(i)));
      ASSERT_EQ(owned->form(), SetValue::Form::kInts);
      EXPECT_EQ(owned->FitsInline(), n <= c.fits) << c.base << " " << n;
      std::vector<std::string> want;
      owned->ForEach([&](std::string_view m) { want.emplace_back(m); });
      SetValue* s = owned.release();
      Entry* e = MakeSetEntry("key", s, 1'700'000'000'000);
      EXPECT_EQ(TypeOf(e), ValueType::kSet);
      EXPECT_EQ(e->expire_at(), 1'700'000'000'000);
      const SetView v = SetOf(e);
      if (n <= c.fits) {
        ASSERT_TRUE(e->has_inline_value());
        ASSERT_TRUE(v.is_inline());
        EXPECT_EQ(e->inline_value().size(), 1 + n * (c.base == 0 ? 2 : c.base < (1 << 30) ? 4 : 8));
        EXPECT_EQ(e->block_size(), Entry::BlockSize(3, e->inline_value().size(), 1));
        EXPECT_EQ(v.AllocatedBytes(), 0u);
      } else {
        EXPECT_FALSE(e->has_inline_value());
        EXPECT_EQ(v.block(), s);
      }
      EXPECT_TRUE(v.is_intset());
      EXPECT_EQ(v.size(), n);
      std::vector<std::string> got;
      v.ForEach([&](std::string_view m) { got.emplace_back(m); });
      EXPECT_EQ(got, want);
      EXPECT_TRUE(v.Contains(std::to_string(c.base)));
      EXPECT_TRUE(v.Contains(std::to_string(c.base + static_cast<int64_t>(n) - 1)));
      EXPECT_FALSE(v.Contains(std::to_string(c.base + static_cast<int64_t>(n))));
      EXPECT_FALSE(v.Contains("0" + std::to_string(c.base)));  // not canonical
      EXPECT_FALSE(v.Contains("x"));
      uint64_t rng = 7;
      for (int i = 0; i < 20; ++i) EXPECT_TRUE(v.Contains(v.Random(&rng)));
      std::vector<std::string> scanned;
      EXPECT_EQ(v.Scan(123, 1, [&](std::string_view m) { scanned.emplace_back(m); }), 0u);
      EXPECT_EQ(scanned, want);
      // Back to a block (what an edit starts from), equal member for member.
      if (e->has_inline_value()) {
        SetValue* copy = SetValue::FromInline(e->inline_value());
        std::vector<std::string> again;
        copy->ForEach([&](std::string_view m) { again.emplace_back(m); });
        EXPECT_EQ(again, want);
        EXPECT_EQ(copy->size(), n);
        EXPECT_TRUE(copy->FitsInline());
        delete copy;
      }
      DestroyEntry(e);
    }
  }
}

// Negative members, and the widest ones, read back through the inline form.
TEST(SetValueTest, InlineIntsetKeepsSignsAndExtremes) {
  Set owned;
  const std::vector<std::string> members = {"-9223372036854775808", "-32769", "-1", "0",
                                            "32768", "9223372036854775807"};
  for (const std::string& m : members) owned.Add(m);
  Entry* e = MakeSetEntry("k", owned.release(), Entry::kNoExpire);
  ASSERT_TRUE(e->has_inline_value());
  std::vector<std::string> got;
  SetOf(e).ForEach([&](std::string_view m) { got.emplace_back(m); });
  EXPECT_EQ(got, members);
  // A TTL of another width rebuilds the Entry; the inline value goes with it.
  Entry* r = Entry::Rebuild(e, int64_t{1} << 50);
  Entry::FreeShell(e);
  ASSERT_TRUE(r->has_inline_value());
  got.clear();
  SetOf(r).ForEach([&](std::string_view m) { got.emplace_back(m); });
  EXPECT_EQ(got, members);
  DestroyEntry(r);
}

}  // namespace
}  // namespace deadbolt::shard

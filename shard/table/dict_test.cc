#include "shard/table/dict.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "shard/base/test_util.h"

namespace deadbolt::shard {
namespace {

// The entries of these tests are short inline strings, which own nothing but their block: the
// Dicts free them with Entry::FreeShell.

std::string Key(int i) { return Cat("key:", i); }

void Add(Dict& d, const std::string& key) {
  d.Insert(Entry::MakeString(key, "v", Entry::kNoExpire), Dict::Hash(key));
}

bool Has(Dict& d, const std::string& key) {
  return static_cast<bool>(d.FindLink(key, Dict::Hash(key)));
}

bool Remove(Dict& d, const std::string& key) {
  Dict::Pos pos = d.FindLink(key, Dict::Hash(key));
  if (!pos) return false;
  Entry::FreeShell(d.Unlink(pos));
  return true;
}

void FinishRehash(Dict& d) {
  while (d.RehashSteps(1000)) {
  }
}

TEST(DictTest, InsertFindRemove) {
  Dict d(&Entry::FreeShell);
  EXPECT_EQ(d.size(), 0u);
  EXPECT_EQ(d.bucket_count(), 0u);  // an empty dict holds no bucket array
  for (int i = 0; i < 1000; ++i) Add(d, Key(i));
  EXPECT_EQ(d.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(Has(d, Key(i))) << i;
  EXPECT_FALSE(Has(d, "nope"));
  EXPECT_NE(d.Find(Key(5), Dict::Hash(Key(5))), nullptr);
  EXPECT_EQ(d.Find("nope", Dict::Hash("nope")), nullptr);
  for (int i = 0; i < 1000; i += 2) EXPECT_TRUE(Remove(d, Key(i)));
  EXPECT_EQ(d.size(), 500u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(Has(d, Key(i)), i % 2 == 1) << i;
  EXPECT_FALSE(Remove(d, Key(0)));
}

TEST(DictTest, GrowsIncrementallyAndKeepsEverythingFindable) {
  Dict d(&Entry::FreeShell);
  for (int i = 0; i < 4; ++i) Add(d, Key(i));
  FinishRehash(d);
  EXPECT_EQ(d.bucket_count(), 4u);
  EXPECT_FALSE(d.rehashing());
  Add(d, Key(4));  // used == size: starts a resize to 8
  EXPECT_TRUE(d.rehashing());
  EXPECT_EQ(d.bucket_count(), 4u + 8u);
  // Every key is found while the rehash is under way (FindLink moves one bucket per call).
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(Has(d, Key(i))) << i;
  FinishRehash(d);
  EXPECT_FALSE(d.rehashing());
  EXPECT_EQ(d.bucket_count(), 8u);

  // Grow to 1024 keys, checking that no single insert does a whole rehash: the table is always
  // a power of two, and the old array lives on while buckets move.
  bool saw_rehash = false;
  for (int i = 5; i < 1024; ++i) {
    Add(d, Key(i));
    Has(d, Key(i));  // one rehash step, as a command does
    saw_rehash |= d.rehashing();
  }
  EXPECT_TRUE(saw_rehash);
  FinishRehash(d);
  EXPECT_EQ(d.bucket_count(), 1024u);
  for (int i = 0; i < 1024; ++i) EXPECT_TRUE(Has(d, Key(i))) << i;
  EXPECT_LE(d.MaxChainLength(), 12u);  // a decent hash spreads keys
}

// Prefetch is a hint: on an empty table, and on one in the middle of a rehash, it moves no
// bucket (a twin table without it needs as many rehash steps to finish) and every key is still
// found.
TEST(DictTest, PrefetchChangesNothing) {
  std::vector<uint64_t> hashes;
  for (int i = 0; i < 64; ++i) hashes.push_back(Dict::Hash(Key(i)));
  Dict d(&Entry::FreeShell), twin(&Entry::FreeShell);
  d.Prefetch(hashes.data(), hashes.size());  // no bucket array yet
  d.Prefetch(hashes.data(), 0);
  EXPECT_EQ(d.size(), 0u);
  for (Dict* t : {&d, &twin}) {
    for (int i = 0; i < 32; ++i) Add(*t, Key(i));
    FinishRehash(*t);
    Add(*t, Key(32));  // used == size: a resize starts
    ASSERT_TRUE(t->rehashing());
  }
  d.Prefetch(hashes.data(), hashes.size());  // keys present and missing, in both tables
  int steps = 0, twin_steps = 0;
  while (d.RehashSteps(1)) ++steps;
  while (twin.RehashSteps(1)) ++twin_steps;
  EXPECT_EQ(steps, twin_steps);
  EXPECT_GT(steps, 0);
  EXPECT_EQ(d.size(), 33u);
  for (int i = 0; i < 33; ++i) EXPECT_TRUE(Has(d, Key(i))) << i;
  for (int i = 33; i < 64; ++i) EXPECT_FALSE(Has(d, Key(i))) << i;
}

TEST(DictTest, ShrinksWhenMostlyEmpty) {
  Dict d(&Entry::FreeShell);
  for (int i = 0; i < 4096; ++i) Add(d, Key(i));
  FinishRehash(d);
  EXPECT_EQ(d.bucket_count(), 4096u);
  for (int i = 0; i < 4000; ++i) ASSERT_TRUE(Remove(d, Key(i)));
  FinishRehash(d);
  d.MaybeShrink();
  EXPECT_TRUE(d.rehashing());
  FinishRehash(d);
  EXPECT_EQ(d.bucket_count(), 128u);  // next power of two above 96 + 1
  for (int i = 4000; i < 4096; ++i) EXPECT_TRUE(Has(d, Key(i))) << i;
  for (int i = 4000; i < 4096; ++i) ASSERT_TRUE(Remove(d, Key(i)));
  FinishRehash(d);
  d.MaybeShrink();
  FinishRehash(d);
  EXPECT_EQ(d.bucket_count(), 4u);  // never below the initial size
  Add(d, "again");
  EXPECT_TRUE(Has(d, "again"));
}

// The scan guarantee: a key present for the whole scan is returned at least once, whatever
// resizes happen between steps.
void CheckScanAcrossResize(int initial, int added_per_step, int removed_per_step) {
  Dict d(&Entry::FreeShell);
  for (int i = 0; i < initial; ++i) Add(d, Key(i));
  FinishRehash(d);
  int next_new = initial;
  int next_removed = 0;  // keys [0, next_removed) were removed during the scan: not required
  std::set<std::string> seen;
  uint64_t cursor = 0;
  size_t visited = 0;
  int steps = 0;
  bool saw_rehash = false;
  do {
    cursor = d.Scan(
        cursor,
        [&](Entry* e) {
          seen.insert(std::string(e->key()));
          return false;
        },
        &visited);
    for (int j = 0; j < added_per_step; ++j) Add(d, Key(next_new++));
    for (int j = 0; j < removed_per_step && next_removed < initial * 19 / 20; ++j) {
      Remove(d, Key(next_removed++));
    }
    d.MaybeShrink();
    Has(d, "probe");  // a rehash step, as any command does
    saw_rehash |= d.rehashing();
    ++steps;
    ASSERT_LT(steps, 10'000'000);
  } while (cursor != 0);
  EXPECT_TRUE(saw_rehash) << "the test did not exercise a resize";
  for (int i = next_removed; i < initial; ++i) EXPECT_TRUE(seen.count(Key(i))) << Key(i);
}

TEST(DictTest, ScanCompleteWhileGrowing) { CheckScanAcrossResize(1000, 3, 0); }
TEST(DictTest, ScanCompleteWhileShrinking) { CheckScanAcrossResize(20000, 0, 40); }
TEST(DictTest, ScanCompleteWhileGrowingAndShrinking) { CheckScanAcrossResize(5000, 5, 5); }

TEST(DictTest, ScanStartedDuringRehash) {
  Dict d(&Entry::FreeShell);
  for (int i = 0; i < 4096; ++i) Add(d, Key(i));
  FinishRehash(d);
  Add(d, Key(4096));  // start a resize to 8192 and leave it half done
  for (int i = 0; i < 100; ++i) d.RehashSteps(10);
  ASSERT_TRUE(d.rehashing());
  std::set<std::string> seen;
  uint64_t cursor = 0;
  size_t visited = 0;
  do {
    cursor = d.Scan(
        cursor,
        [&](Entry* e) {
          seen.insert(std::string(e->key()));
          return false;
        },
        &visited);
  } while (cursor != 0);
  EXPECT_EQ(seen.size(), 4097u);
  // A full walk during a 4096 -> 8192 rehash looks at every bucket of both tables once.
  EXPECT_EQ(visited, 4096u + 8192u);
}

TEST(DictTest, ScanCanRemove) {
  Dict d(&Entry::FreeShell);
  for (int i = 0; i < 500; ++i) Add(d, Key(i));
  uint64_t cursor = 0;
  size_t visited = 0;
  int removed = 0;
  do {
    cursor = d.Scan(
        cursor,
        [&](Entry* e) {
          const bool odd = (e->key().back() - '0') % 2 == 1;
          removed += odd;
          return odd;
        },
        &visited);
  } while (cursor != 0);
  EXPECT_EQ(removed, 250);
  EXPECT_EQ(d.size(), 250u);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(Has(d, Key(i)), i % 2 == 0) << i;
}

TEST(DictTest, ScanOfEmptyDictEndsAtOnce) {
  Dict d(&Entry::FreeShell);
  size_t visited = 0;
  EXPECT_EQ(d.Scan(
                0, [](Entry*) { return false; }, &visited),
            0u);
  EXPECT_EQ(visited, 0u);
}

TEST(DictTest, RandomReachesEveryEntry) {
  Dict d(&Entry::FreeShell);
  uint64_t rng = 42;
  EXPECT_EQ(d.Random(&rng), nullptr);
  for (int i = 0; i < 50; ++i) Add(d, Key(i));
  Add(d, Key(50));
  std::set<std::string> seen;
  for (int i = 0; i < 5000; ++i) seen.insert(std::string(d.Random(&rng)->key()));
  EXPECT_EQ(seen.size(), 51u);
  // Also while a rehash is under way.
  for (int i = 51; i < 65; ++i) Add(d, Key(i));
  ASSERT_TRUE(d.rehashing());
  seen.clear();
  for (int i = 0; i < 5000; ++i) seen.insert(std::string(d.Random(&rng)->key()));
  EXPECT_EQ(seen.size(), 65u);
}

TEST(DictTest, ReplaceKeepsChainAndCount) {
  Dict d(&Entry::FreeShell);
  for (int i = 0; i < 100; ++i) Add(d, Key(i));
  Dict::Pos pos = d.FindLink(Key(7), Dict::Hash(Key(7)));
  ASSERT_TRUE(pos);
  Entry* old = d.Replace(pos, Entry::MakeString(Key(7), "new", 5));
  EXPECT_EQ(old->string_value(), "v");
  Entry::FreeShell(old);
  EXPECT_EQ(d.size(), 100u);
  const Entry* e = d.Find(Key(7), Dict::Hash(Key(7)));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->string_value(), "new");
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(Has(d, Key(i))) << i;
}

TEST(DictTest, ForEachAndClear) {
  Dict d(&Entry::FreeShell);
  for (int i = 0; i < 300; ++i) Add(d, Key(i));
  int n = 0;
  d.ForEach([&](const Entry*) {
    ++n;
    return true;
  });
  EXPECT_EQ(n, 300);
  n = 0;
  d.ForEach([&](const Entry*) { return ++n < 10; });
  EXPECT_EQ(n, 10);
  d.Clear();
  EXPECT_EQ(d.size(), 0u);
  EXPECT_EQ(d.bucket_count(), 0u);
  EXPECT_FALSE(Has(d, Key(1)));
}

}  // namespace
}  // namespace deadbolt::shard

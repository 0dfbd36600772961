// PackedItem (shard/types/packed_growth.h), and the packed forms of lists, sets and sorted sets
// holding UUIDs: the same text comes back, whatever the case, through every change of form.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "shard/types/list_value.h"
#include "shard/types/packed_growth.h"
#include "shard/types/set_value.h"
#include "shard/types/zset_value.h"

namespace deadbolt::shard {
namespace {

constexpr char kLower[] = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
constexpr char kUpper[] = "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0";
constexpr char kDigits[] = "01234567-8901-2345-6789-012345678901";
constexpr char kMixed[] = "0f1e2d3c-4b5a-6978-8796-A5B4C3D2E1F0";

std::string RoundTrip(std::string_view v) {
  char enc[PackedItem::kMaxEncoded];
  const size_t n = PackedItem::Encode(v, enc);
  EXPECT_EQ(n, PackedItem::EncodedSize(v));
  EXPECT_EQ(n, PackedItem::SizeAt(enc));
  char scratch[PackedItem::kUuidTextLen];
  return std::string(PackedItem::Decode(enc, scratch));
}

// 36-character UUIDs of one case take 17 bytes; anything else is kept as it is (1 + length).
TEST(PackedItemTest, UuidsOfOneCaseTakeSeventeenBytesAndComeBackTheSame) {
  for (std::string_view u : {kLower, kUpper, kDigits, "ffffffff-ffff-ffff-ffff-ffffffffffff",
                             "00000000-0000-0000-0000-000000000000"}) {
    EXPECT_EQ(PackedItem::EncodedSize(u), 17u) << u;
    EXPECT_EQ(RoundTrip(u), u);
  }
  const std::vector<std::string> kept = {
      kMixed,
      "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f",     // 35
      "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f00",   // 37
      "0f1e2d3c4-b5a-6978-8796-a5b4c3d2e1f0",    // hyphen misplaced
      "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1g0",    // not hex
      "{f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
      "0f1e2d3c-4b5a-6978-8796_a5b4c3d2e1f0",
      "",
      "x",
      std::string(64, '\xff'),
      std::string("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1\0f", 36)};
  for (const std::string& v : kept) {
    EXPECT_EQ(PackedItem::EncodedSize(v), 1 + v.size()) << v;
    EXPECT_EQ(RoundTrip(v), v);
  }
}

// Lower and upper case of the same UUID are different members, as in Redis.
TEST(PackedItemTest, EncodingsAreEqualExactlyWhenTextsAre) {
  const std::vector<std::string> values = {kLower, kUpper, kMixed, kDigits, "a", ""};
  for (const std::string& a : values) {
    char ea[PackedItem::kMaxEncoded];
    const size_t na = PackedItem::Encode(a, ea);
    for (const std::string& b : values) {
      char eb[PackedItem::kMaxEncoded];
      const size_t nb = PackedItem::Encode(b, eb);
      EXPECT_EQ(PackedItem::Equals(ea, eb, nb), a == b) << a << " vs " << b;
      (void)na;
    }
  }
}

std::string Uuid(int i, bool upper) {
  char buf[40];
  std::snprintf(buf, sizeof buf, upper ? "%08X-1234-5ABC-8DEF-%012X" : "%08x-1234-5abc-8def-%012x",
                i * 2654435761u, i);
  return buf;
}

// Members of every kind (lower, upper, mixed-case UUIDs, other strings) in a list, through
// every operation and both conversions (packed -> deque at 129 elements, back at 64).
TEST(PackedItemTest, ListKeepsEveryTextThroughChangesOfForm) {
  ListValue l;
  std::vector<std::string> want;
  for (int i = 0; i < 10; ++i) {
    want.push_back(Uuid(i, i % 2 == 1));
    l.PushBack(want.back());
  }
  EXPECT_LE(l.AllocatedBytes(), sizeof(ListValue) + 10 * 17 + 16);  // 16-byte UUIDs
  l.PushFront(kMixed);
  want.insert(want.begin(), kMixed);
  l.Insert(3, kUpper);
  want.insert(want.begin() + 3, kUpper);
  l.Set(5, kLower);
  want[5] = kLower;
  l.Set(6, "short");
  want[6] = "short";
  auto all = [&] {
    std::vector<std::string> out;
    l.ForEach([&](std::string_view v) { out.emplace_back(v); });
    return out;
  };
  EXPECT_EQ(all(), want);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(l.At(i), want[i]);
  EXPECT_EQ(l.Remove(0, kUpper), 1u);  // kLower is a different element
  want.erase(want.begin() + 3);
  EXPECT_EQ(all(), want);
  while (l.size() <= ListValue::kMaxPackedEntries) {
    want.push_back(Uuid(static_cast<int>(want.size()), want.size() % 3 == 0));
    l.PushBack(want.back());
  }
  EXPECT_FALSE(l.packed());
  EXPECT_EQ(all(), want);
  l.Trim(0, ListValue::kMaxPackedEntries / 2);
  want.resize(ListValue::kMaxPackedEntries / 2);
  EXPECT_TRUE(l.packed());
  EXPECT_EQ(all(), want);
  EXPECT_EQ(l.PopFront(), want.front());
  EXPECT_EQ(l.PopBack(), want.back());
}

TEST(PackedItemTest, SetKeepsEveryTextThroughChangesOfForm) {
  struct Owned {
    SetValue* s = SetValue::Create();
    ~Owned() { delete s; }
    bool Add(std::string_view m) {
      bool added;
      s = SetValue::Add(s, m, &added);
      return added;
    }
    bool Remove(std::string_view m) {
      bool removed;
      s = SetValue::Remove(s, m, &removed);
      return removed;
    }
    const SetValue* operator->() const { return s; }
  } s;
  std::set<std::string> want;
  for (int i = 0; i < 10; ++i) {
    want.insert(Uuid(i, i % 2 == 1));
    EXPECT_TRUE(s.Add(Uuid(i, i % 2 == 1)));
  }
  EXPECT_EQ(s->form(), SetValue::Form::kPacked);
  EXPECT_LE(s->AllocatedBytes(), sizeof(SetValue) + 10 * 17 + 16);
  EXPECT_TRUE(s.Add(kLower));
  EXPECT_TRUE(s.Add(kUpper));  // the same UUID in the other case is another member
  EXPECT_TRUE(s.Add(kMixed));
  EXPECT_FALSE(s.Add(kUpper));
  want.insert({kLower, kUpper, kMixed});
  EXPECT_TRUE(s->Contains(kUpper));
  EXPECT_FALSE(s->Contains("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f1"));
  EXPECT_TRUE(s.Remove(kUpper));
  EXPECT_FALSE(s->Contains(kUpper));
  EXPECT_TRUE(s->Contains(kLower));
  want.erase(kUpper);
  auto all = [&] {
    std::set<std::string> out;
    s->ForEach([&](std::string_view m) { out.emplace(m); });
    return out;
  };
  EXPECT_EQ(all(), want);
  for (int i = 10; s->size() <= SetValue::kMaxPackedEntries; ++i) {
    want.insert(Uuid(i, i % 2 == 1));
    s.Add(Uuid(i, i % 2 == 1));
  }
  EXPECT_EQ(s->form(), SetValue::Form::kTable);
  EXPECT_EQ(all(), want);
  uint64_t rng = 1;
  EXPECT_EQ(want.count(s->Random(&rng)), 1u);
}

// Same scores: ordered by the text (upper case before lower case, as bytes), not by the stored
// bytes; and the order survives the change to a skiplist and back.
TEST(PackedItemTest, SortedSetOrdersUuidsByTheirText) {
  std::unique_ptr<ZSetValue> z(ZSetValue::Create());
  auto set = [&](std::string_view m, double s) {
    bool added;
    ZSetValue* next = ZSetValue::Set(z.get(), m, s, &added);
    if (next != z.get()) z.reset(next);
    return added;
  };
  auto del = [&](std::string_view m) {
    bool removed;
    ZSetValue* next = ZSetValue::Del(z.get(), m, &removed);
    if (next != z.get()) z.reset(next);
    return removed;
  };
  std::map<std::string, double> want;
  for (std::string_view m : {kLower, kUpper, kMixed, kDigits, "0", "zzz", "G"}) {
    EXPECT_TRUE(set(m, 1));
    want[std::string(m)] = 1;
  }
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(set(Uuid(i, i % 2 == 0), i % 3));
    want[Uuid(i, i % 2 == 0)] = i % 3;
  }
  EXPECT_TRUE(z->packed());
  auto all = [&] {
    std::vector<std::pair<std::string, double>> out;
    z->ForEach([&](std::string_view m, double s) {
      out.emplace_back(std::string(m), s);
      return true;
    });
    return out;
  };
  auto model = [&] {
    std::vector<std::pair<std::string, double>> out(want.begin(), want.end());
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.second < b.second; });
    return out;
  };
  EXPECT_EQ(all(), model());
  EXPECT_EQ(z->Score(kUpper), 1);
  EXPECT_EQ(z->Score("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f1"), std::nullopt);
  const auto m = model();
  for (size_t r = 0; r < m.size(); ++r) EXPECT_EQ(z->Rank(m[r].first), r) << m[r].first;
  EXPECT_FALSE(set(kUpper, 5));
  want[kUpper] = 5;
  EXPECT_TRUE(del(kLower));
  want.erase(kLower);
  EXPECT_EQ(all(), model());
  for (int i = 8; z->size() <= ZSetValue::kMaxPackedEntries; ++i) {
    set(Uuid(i, i % 2 == 0), i % 3);
    want[Uuid(i, i % 2 == 0)] = i % 3;
  }
  EXPECT_FALSE(z->packed());
  EXPECT_EQ(all(), model());
  while (z->size() > ZSetValue::kMaxPackedEntries / 2) {
    const std::string first = want.begin()->first;
    EXPECT_TRUE(del(first));
    want.erase(first);
  }
  EXPECT_TRUE(z->packed());
  EXPECT_EQ(all(), model());
  uint64_t rng = 7;
  EXPECT_EQ(want.count(z->Random(&rng).first), 1u);
}

}  // namespace
}  // namespace deadbolt::shard

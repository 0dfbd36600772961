#include "shard/types/list_value.h"

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "shard/types/value_kinds.h"

namespace deadbolt::shard {
namespace {

std::vector<std::string> All(const ListValue& l) {
  std::vector<std::string> out;
  l.ForEach([&](std::string_view v) { out.emplace_back(v); });
  return out;
}

std::vector<std::string> All(const std::deque<std::string>& d) { return {d.begin(), d.end()}; }

TEST(ListValueTest, PushPopBothEndsStaysPacked) {
  ListValue l;
  l.PushBack("b");
  l.PushFront("a");
  l.PushBack("");
  l.PushBack("c");
  EXPECT_TRUE(l.packed());
  EXPECT_EQ(All(l), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(l.At(2), "");
  EXPECT_EQ(l.PopBack(), "c");
  EXPECT_EQ(l.PopFront(), "a");
  EXPECT_EQ(l.size(), 2u);
  EXPECT_EQ(All(l), (std::vector<std::string>{"b", ""}));
}

// More than kMaxPackedEntries elements, or one longer than kMaxPackedLen, makes it large; it is
// packed again only once it shrinks to half the limit with every element short.
TEST(ListValueTest, EncodingConversions) {
  ListValue l;
  for (size_t i = 0; i < ListValue::kMaxPackedEntries; ++i) l.PushBack(std::to_string(i));
  EXPECT_TRUE(l.packed());
  l.PushBack("x");
  EXPECT_FALSE(l.packed());
  while (l.size() > ListValue::kMaxPackedEntries / 2 + 1) l.PopFront();
  EXPECT_FALSE(l.packed());
  l.PopFront();
  EXPECT_TRUE(l.packed());
  EXPECT_EQ(l.At(l.size() - 1), "x");

  ListValue big;
  big.PushBack("a");
  big.PushBack(std::string(ListValue::kMaxPackedLen, 'v'));
  EXPECT_TRUE(big.packed());
  big.PushBack(std::string(ListValue::kMaxPackedLen + 1, 'v'));
  EXPECT_FALSE(big.packed());
  big.PopFront();
  EXPECT_FALSE(big.packed());  // the long element is still there
  big.PopBack();
  EXPECT_TRUE(big.packed());
  EXPECT_EQ(All(big), (std::vector<std::string>{std::string(ListValue::kMaxPackedLen, 'v')}));

  ListValue set;  // LSET with a long value converts too
  set.PushBack("a");
  set.Set(0, std::string(100, 'z'));
  EXPECT_FALSE(set.packed());
  EXPECT_EQ(set.At(0), std::string(100, 'z'));
}

TEST(ListValueTest, RemoveFromHeadTailOrAll) {
  for (bool large : {false, true}) {
    ListValue l;
    for (std::string v : {"a", "x", "b", "x", "c", "x"}) l.PushBack(v);
    if (large) l.PushBack(std::string(100, 'L'));
    EXPECT_EQ(l.Remove(-2, "x"), 2u);
    EXPECT_EQ(All(l)[1], "x");
    EXPECT_EQ(l.Remove(0, "x"), 1u);
    EXPECT_EQ(l.Remove(5, "nope"), 0u);
    std::vector<std::string> want = {"a", "b", "c"};
    if (large) want.push_back(std::string(100, 'L'));
    EXPECT_EQ(All(l), want);
  }
}

// Every operation, in both forms, against std::deque as the model.
TEST(ListValueTest, MatchesADequeUnderRandomOperations) {
  std::mt19937 rng(7);
  ListValue l;
  std::deque<std::string> d;
  auto value = [&] {
    const int r = static_cast<int>(rng() % 100);
    if (r < 2) return std::string(70 + rng() % 10, 'q');
    return std::to_string(rng() % 20);
  };
  bool saw_packed = false, saw_large = false;
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 9);
    const bool grow = (step / 2000) % 2 == 0;  // phases of growth and of shrinking
    if (op == 0 || (grow && op == 8)) {
      std::string v = value();
      l.PushBack(v);
      d.push_back(v);
    } else if (op == 1 || (grow && op == 7)) {
      std::string v = value();
      l.PushFront(v);
      d.push_front(v);
    } else if (op == 2 && !d.empty()) {
      EXPECT_EQ(l.PopFront(), d.front());
      d.pop_front();
    } else if (op == 3 && !d.empty()) {
      EXPECT_EQ(l.PopBack(), d.back());
      d.pop_back();
    } else if (op == 4 && !d.empty()) {
      const size_t i = rng() % d.size();
      std::string v = value();
      l.Set(i, v);
      d[i] = v;
    } else if (op == 5) {
      const size_t i = rng() % (d.size() + 1);
      std::string v = value();
      l.Insert(i, v);
      d.insert(d.begin() + static_cast<std::ptrdiff_t>(i), v);
    } else if (op == 6) {
      const int64_t count = static_cast<int64_t>(rng() % 5) - 2;
      const std::string v = std::to_string(rng() % 20);
      size_t want = 0;
      std::deque<std::string> kept;
      if (count >= 0) {
        for (auto& e : d) {
          if (e == v && (count == 0 || want < static_cast<size_t>(count))) {
            ++want;
          } else {
            kept.push_back(e);
          }
        }
      } else {
        for (auto it = d.rbegin(); it != d.rend(); ++it) {
          if (*it == v && want < static_cast<size_t>(-count)) {
            ++want;
          } else {
            kept.push_front(*it);
          }
        }
      }
      EXPECT_EQ(l.Remove(count, v), want);
      d = kept;
    } else if (op == 7 && !d.empty() && rng() % 10 == 0) {
      const size_t a = rng() % d.size(), b = a + rng() % (d.size() - a + 1);
      l.Trim(a, b);
      d = std::deque<std::string>(d.begin() + static_cast<std::ptrdiff_t>(a),
                                  d.begin() + static_cast<std::ptrdiff_t>(b));
    }
    ASSERT_EQ(l.size(), d.size());
    (l.packed() ? saw_packed : saw_large) = true;
    if (step % 97 == 0) {
      ASSERT_EQ(All(l), All(d)) << "step " << step;
      if (!d.empty()) {
        EXPECT_EQ(l.At(d.size() / 2), d[d.size() / 2]);
      }
    }
  }
  EXPECT_TRUE(saw_packed);
  EXPECT_TRUE(saw_large);
}

TEST(ListValueTest, EntryOwnsTheList) {
  auto* l = new ListValue();
  l->PushBack(std::string(200, 'x'));
  Entry* e = MakeListEntry("k", l, Entry::kNoExpire);
  EXPECT_EQ(TypeOf(e), ValueType::kList);
  EXPECT_EQ(ListOf(e), l);
  DestroyEntry(e);  // ASan: no leak
}

}  // namespace
}  // namespace deadbolt::shard

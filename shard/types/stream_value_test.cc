// StreamValue (stream_value.h): IDs' order and steps, appends, deletes and trims with their
// counters, and the serialized form: read back exactly, and refused when cut or changed where
// a count or an order would lie.

#include "shard/types/stream_value.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace deadbolt::shard {
namespace {

TEST(StreamId, OrderAndSteps) {
  EXPECT_LT((StreamId{1, 5}), (StreamId{2, 0}));
  EXPECT_LT((StreamId{1, 5}), (StreamId{1, 6}));
  StreamId id{1, UINT64_MAX};
  ASSERT_TRUE(id.Incr());
  EXPECT_EQ(id, (StreamId{2, 0}));
  ASSERT_TRUE(id.Decr());
  EXPECT_EQ(id, (StreamId{1, UINT64_MAX}));
  StreamId max = StreamId::Max();
  EXPECT_FALSE(max.Incr());
  StreamId zero;
  EXPECT_FALSE(zero.Decr());
  EXPECT_EQ((StreamId{123, 4}).ToString(), "123-4");
  EXPECT_EQ(StreamId::Max().ToString(), "18446744073709551615-18446744073709551615");
}

StreamValue::Fields F(std::string f, std::string v) { return {std::move(f), std::move(v)}; }

TEST(StreamValue, AppendDeleteTrimKeepTheCounters) {
  StreamValue s;
  for (uint64_t i = 1; i <= 10; i++) s.Append({i, 0}, F("f", std::to_string(i)));
  EXPECT_EQ(s.size(), 10u);
  EXPECT_EQ(s.entries_added(), 10u);
  EXPECT_EQ(s.last_id(), (StreamId{10, 0}));
  EXPECT_EQ(s.first_id(), (StreamId{1, 0}));
  EXPECT_TRUE(s.Delete({5, 0}));
  EXPECT_FALSE(s.Delete({5, 0}));
  EXPECT_TRUE(s.Delete({3, 0}));
  EXPECT_EQ(s.max_deleted_id(), (StreamId{5, 0}));  // the largest, not the last
  EXPECT_EQ(s.TrimMaxLen(5, 2), 2u);                // limited to 2
  EXPECT_EQ(s.first_id(), (StreamId{4, 0}));
  EXPECT_EQ(s.TrimMaxLen(5, 0), 1u);
  EXPECT_EQ(s.size(), 5u);
  EXPECT_EQ(s.TrimMinId({8, 0}, 0), 2u);  // 6, 7
  EXPECT_EQ(s.first_id(), (StreamId{8, 0}));
  EXPECT_EQ(s.TrimMaxLen(0, 0), 3u);
  EXPECT_EQ(s.first_id(), StreamId{});  // empty: 0-0
  EXPECT_EQ(s.last_id(), (StreamId{10, 0}));
  EXPECT_EQ(s.entries_added(), 10u);
}

TEST(StreamValue, SerializeReadsBackAndRefusesDamage) {
  StreamValue s;
  s.Append({1, 1}, F("field", std::string("v\0\r\n", 4)));
  s.Append({1, 2}, {"a", "1", "b", ""});
  s.Append({UINT64_MAX - 1, 7}, F("", "x"));
  s.Delete({1, 1});
  s.SetEntriesAdded(99);
  const std::string bytes = s.Serialize();
  StreamValue back;
  ASSERT_TRUE(StreamValue::Parse(bytes, &back));
  EXPECT_EQ(back.entries(), s.entries());
  EXPECT_EQ(back.last_id(), s.last_id());
  EXPECT_EQ(back.max_deleted_id(), (StreamId{1, 1}));
  EXPECT_EQ(back.entries_added(), 99u);
  EXPECT_EQ(back.Serialize(), bytes);
  for (size_t cut = 0; cut < bytes.size(); cut++) {
    StreamValue t;
    EXPECT_FALSE(StreamValue::Parse(bytes.substr(0, cut), &t)) << cut;
  }
  StreamValue t;
  EXPECT_FALSE(StreamValue::Parse(bytes + "x", &t));  // trailing bytes
  std::string bad = bytes;
  bad[0] = 9;  // an unknown version
  EXPECT_FALSE(StreamValue::Parse(bad, &t));
  // Entries out of order, or past the last ID: damage.
  StreamValue two;
  two.Append({5, 0}, F("f", "v"));
  two.Append({6, 0}, F("f", "v"));
  std::string swapped = two.Serialize();
  const size_t first = 1 + 16 + 16 + 8 + 8;  // version, last, max deleted, added, count
  swapped[first] = 7;                        // the first entry's ms: 7 > 6
  EXPECT_FALSE(StreamValue::Parse(swapped, &t));
  // Random bytes never crash it.
  std::string noise = bytes;
  for (size_t i = 1; i < noise.size(); i += 3) {
    noise[i] = static_cast<char>(noise[i] * 31 + 7);
    StreamValue n;
    StreamValue::Parse(noise, &n);
  }
}

TEST(StreamValue, GroupsSerializeAndDamageIsRefused) {
  StreamValue s;
  s.Append({1, 0}, F("f", "v"));
  s.Append({2, 0}, F("f", "w"));
  StreamGroup& g = s.groups()["g"];
  g.last_id = {2, 0};
  g.entries_read = 2;
  g.consumers["alice"] = StreamConsumer{111, {{1, 0}}};
  g.consumers["bob"] = StreamConsumer{222, {{2, 0}}};
  g.pel[{1, 0}] = StreamNack{"alice", 1000, 1};
  g.pel[{2, 0}] = StreamNack{"bob", 2000, 3};
  s.groups()["empty"];
  const std::string bytes = s.Serialize();
  StreamValue back;
  ASSERT_TRUE(StreamValue::Parse(bytes, &back));
  ASSERT_EQ(back.groups().size(), 2u);
  const StreamGroup& b = back.groups().at("g");
  EXPECT_EQ(b.last_id, (StreamId{2, 0}));
  EXPECT_EQ(b.entries_read, 2);
  EXPECT_EQ(b.consumers.at("bob").seen_ms, 222);
  EXPECT_EQ(b.consumers.at("bob").pending, (std::set<StreamId>{{2, 0}}));
  EXPECT_EQ(b.pel.at({2, 0}).consumer, "bob");
  EXPECT_EQ(b.pel.at({2, 0}).delivery_count, 3u);
  EXPECT_EQ(back.groups().at("empty").entries_read, -1);
  EXPECT_EQ(back.Serialize(), bytes);
  for (size_t cut = 0; cut < bytes.size(); cut++) {
    StreamValue t;
    EXPECT_FALSE(StreamValue::Parse(bytes.substr(0, cut), &t)) << cut;
  }
  // A pending entry naming a consumer the group does not have: damage.
  std::string bad = bytes;
  const size_t at = bad.find("bob", bad.find("bob") + 3);
  ASSERT_NE(at, std::string::npos);
  bad[at] = 'x';
  StreamValue t;
  EXPECT_FALSE(StreamValue::Parse(bad, &t));
}

TEST(StreamValue, ChangesApplyToTheStateBeforeThemAndDamageIsRefused) {
  StreamValue a, b;
  for (uint64_t i = 1; i <= 5; i++) a.Append({i, 0}, {"f", std::to_string(i)});
  a.groups().emplace("g", StreamGroup{{2, 0}, 2, {}, {}});
  ASSERT_TRUE(StreamValue::Parse(a.Serialize(), &b));  // b: a's state before the change
  a.ForgetChanges();
  // One change: appended, deleted (one of them just appended), trimmed, a group delivered.
  a.Append({6, 0}, {"f", "6"});
  a.Append({7, 0}, {"f", "7", "g", ""});
  ASSERT_TRUE(a.Delete({6, 0}));
  ASSERT_TRUE(a.Delete({3, 0}));
  ASSERT_EQ(a.TrimMaxLen(3, 0), 2u);  // 1-0 and 2-0
  StreamGroup& g = a.groups().at("g");
  g.last_id = {4, 0};
  g.consumers["c"].pending.insert({4, 0});
  g.pel.emplace(StreamId{4, 0}, StreamNack{"c", 1000, 1});
  const std::string changes = a.TakeChanges();
  EXPECT_EQ(a.TakeChanges().size(), 2u + 40u + 16u);  // nothing more: counters, no lists
  // Cut anywhere, or with a byte more, the bytes are refused and b is unchanged.
  const std::string before = b.Serialize();
  for (size_t n = 0; n < changes.size(); n++) {
    EXPECT_FALSE(b.ApplyChanges(changes.substr(0, n))) << n;
    EXPECT_EQ(b.Serialize(), before);
  }
  EXPECT_FALSE(b.ApplyChanges(changes + "x"));
  EXPECT_FALSE(b.ApplyChanges("\x02" + changes.substr(1)));  // another version
  ASSERT_TRUE(b.ApplyChanges(changes));
  EXPECT_EQ(b.Serialize(), a.Serialize());
  EXPECT_EQ(b.size(), 3u);
}

}  // namespace
}  // namespace deadbolt::shard

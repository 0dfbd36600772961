#include "server/txn/tagged_backoff.h"

#include <gtest/gtest.h>

namespace deadbolt::server {
namespace {

void Window(TaggedBackoff& b, uint32_t waited, int64_t now_ms) {
  for (uint32_t i = 0; i < TaggedBackoff::kWindow; i++) b.Note(i < waited, now_ms);
}

TEST(TaggedBackoffTest, RandomMeetingsDoNotBackOff) {
  TaggedBackoff b;
  Window(b, TaggedBackoff::kWindow / 2, 0);  // half waited: not more than half
  EXPECT_FALSE(b.InOrder(0));
  Window(b, 4, 1);
  EXPECT_FALSE(b.InOrder(1));
}

TEST(TaggedBackoffTest, MostWaitingGoesInOrderForASpanThatDoubles) {
  TaggedBackoff b;
  Window(b, TaggedBackoff::kWindow / 2 + 1, 100);
  EXPECT_TRUE(b.InOrder(100));
  EXPECT_TRUE(b.InOrder(100 + TaggedBackoff::kFirstSpanMs - 1));
  EXPECT_FALSE(b.InOrder(100 + TaggedBackoff::kFirstSpanMs));
  Window(b, TaggedBackoff::kWindow, 200);
  EXPECT_EQ(b.span_ms(), 2 * TaggedBackoff::kFirstSpanMs);
  EXPECT_TRUE(b.InOrder(200 + 2 * TaggedBackoff::kFirstSpanMs - 1));
  for (int i = 0; i < 20; i++) Window(b, TaggedBackoff::kWindow, 300);
  EXPECT_EQ(b.span_ms(), TaggedBackoff::kMaxSpanMs);
  EXPECT_FALSE(b.InOrder(300 + TaggedBackoff::kMaxSpanMs));
}

TEST(TaggedBackoffTest, CalmWindowsHalveTheSpan) {
  TaggedBackoff b;
  for (int i = 0; i < 4; i++) Window(b, TaggedBackoff::kWindow, 0);
  EXPECT_EQ(b.span_ms(), 8 * TaggedBackoff::kFirstSpanMs);
  Window(b, 0, 1000);
  EXPECT_EQ(b.span_ms(), 4 * TaggedBackoff::kFirstSpanMs);
  EXPECT_FALSE(b.InOrder(1000));  // (a calm window does not start a span)
  Window(b, TaggedBackoff::kWindow, 2000);
  EXPECT_EQ(b.span_ms(), 8 * TaggedBackoff::kFirstSpanMs);
}

}  // namespace
}  // namespace deadbolt::server

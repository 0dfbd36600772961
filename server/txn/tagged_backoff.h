#pragma once
// When a reactor's pipelines stop being journalled as transactions (server/core/relay.cc,
// `tagged`) and go in order instead, under appendfsync always. No I/O; one per reactor, owned by
// its thread; time is a parameter.
//
// A tagged relay keeps its keys locked until every part of it is on disk, a few fsyncs, so
// relays meeting on a key (a hot counter in every pipeline) wait for each other fsync by fsync,
// where in order they would share each one. Over each kWindow tagged relays home, if more than
// half waited for another relay's lock, relays go in order for a span of time that doubles each
// time this happens again (from kFirstSpanMs up to kMaxSpanMs) and halves after a calmer
// window. Random keys meet now and then (about one relay in ten at 50 connections, P16, 100,000
// keys), which costs less than going in order.

#include <algorithm>
#include <cstdint>

namespace deadbolt::server {

class TaggedBackoff {
 public:
  static constexpr uint32_t kWindow = 32;
  static constexpr int64_t kFirstSpanMs = 10;
  static constexpr int64_t kMaxSpanMs = 1000;

  // A tagged relay came home; `waited`: it waited for another relay's lock on its way.
  void Note(bool waited, int64_t now_ms) {
    seen_++;
    if (waited) waited_++;
    if (seen_ < kWindow) return;
    if (2 * waited_ > seen_) {
      span_ms_ = span_ms_ == 0 ? kFirstSpanMs : std::min(2 * span_ms_, kMaxSpanMs);
      until_ms_ = now_ms + span_ms_;
    } else {
      span_ms_ /= 2;
    }
    seen_ = waited_ = 0;
  }
  // Whether a relay that would be tagged goes in order instead.
  bool InOrder(int64_t now_ms) const { return now_ms < until_ms_; }
  int64_t span_ms() const { return span_ms_; }

 private:
  int64_t until_ms_ = 0;
  int64_t span_ms_ = 0;
  uint32_t seen_ = 0;    // tagged relays home in this window
  uint32_t waited_ = 0;  // of which waited for another relay's lock
};

}  // namespace deadbolt::server

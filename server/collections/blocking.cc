#include "server/collections/blocking.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/base/error_strings.h"
#include "server/core/reactor.h"
#include "server/txn/lock_waiters.h"
#include "shard/base/numeric.h"

namespace deadbolt::server {

bool ParseBlockTimeout(std::string_view s, int64_t now_ms, int64_t* deadline,
                       protocol::ReplyBuilder& rb) {
  long double secs;
  if (!shard::ParseLongDouble(s, &secs)) {
    rb.Error(errors::kTimeoutNotFloat);
    return false;
  }
  if (secs < 0 || std::isinf(secs) || secs * 1000 > static_cast<long double>(INT64_MAX / 2)) {
    rb.Error(errors::kTimeoutNegative);
    return false;
  }
  const auto ms = static_cast<int64_t>(secs * 1000);  // truncated, as Redis: 0.0001 waits forever
  *deadline = ms == 0 || ms > LockWaiters::kForever - now_ms ? LockWaiters::kForever : now_ms + ms;
  return true;
}

std::string RespOf(int resp, const std::string_view* items, size_t n, bool bulk_only) {
  std::string out;
  protocol::ReplyBuilder rb(&out, resp);
  if (bulk_only) {
    rb.Bulk(items[0]);
  } else {
    rb.BulkArray(items, n);
  }
  return out;
}

std::string ErrorOf(int resp, std::string_view msg) {
  std::string out;
  protocol::ReplyBuilder rb(&out, resp);
  rb.Error(msg);
  return out;
}

bool OthersWait(ShardCtx& ctx, std::string_view key) {
  Reactor* r = Reactor::Current();
  if (r == nullptr) return false;  // no reactor (a unit test): nobody waits
  LockWaiters& waiters = r->lock_waiters();
  if (!waiters.HasWaiters(ctx.db_index, key)) return false;
  waiters.HandOver(ctx.db_index, key);
  return waiters.HasWaiters(ctx.db_index, key);
}

void ServeWaiters(ShardCtx& ctx, std::string_view key) {
  // No reactor (a handler run by a unit test, or by a script's redis.call there): nobody waits.
  Reactor* r = Reactor::Current();
  if (r == nullptr) return;
  LockWaiters& waiters = r->lock_waiters();
  if (waiters.HasWaiters(ctx.db_index, key)) waiters.HandOver(ctx.db_index, key);
}

bool AlwaysMayBlock(CmdArgs) { return true; }

}  // namespace deadbolt::server

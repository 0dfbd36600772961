#include "server/cmdtable/restart_delay.h"

#include <algorithm>

#include "server/base/error_strings.h"

namespace deadbolt::server {

int64_t RestartDelay::RemainingMs(int64_t now_ms) const {
  if (delay_ms <= 0) return 0;
  const int64_t end_ms = since_ms + delay_ms;
  if (now_ms >= end_ms) return 0;
  return std::min(end_ms - now_ms, delay_ms);
}

bool MayCreateKey(const CommandSpec& spec, CmdArgs args) {
  if (!(spec.flags & kMayCreate)) return false;
  return !spec.may_create || spec.may_create(args);
}

std::optional<std::string> RestartDelayRefusal(const RestartDelay& delay, const CommandSpec& spec,
                                               CmdArgs args, int64_t now_ms) {
  if (!(spec.flags & kMayCreate)) return std::nullopt;
  const int64_t remaining = delay.RemainingMs(now_ms);
  if (remaining == 0 || !MayCreateKey(spec, args)) return std::nullopt;
  return errors::RestartDelayRefusal(delay.delay_ms - remaining, remaining, delay.delay_ms);
}

}  // namespace deadbolt::server

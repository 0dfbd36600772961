// libFuzzer harness: commands from bytes down to the shard operations.
//
// The input is a stream of RESP requests (the first byte picks RESP2 or RESP3 and how far the
// clock moves between commands). Each request is looked up in the command table, its arity
// checked as the dispatcher does, and, when the command runs on one shard, its ShardHandler runs
// on a real Shard: argument parsing, the shard operation and the reply, with no sockets and no
// reactor. Commands that need a connection or a reactor (fan-outs, blocking, pub/sub, scripts
// by text) are skipped. The properties checked, besides "no crash, no sanitizer report": every
// command writes exactly one whole RESP value, and the shard's own invariants hold afterwards
// (every key readable, its TYPE known).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/reply_builder.h"
#include "protocol/resp_parser.h"
#include "server/base/config.h"
#include "server/cmdtable/command.h"
#include "shard/shard.h"
#include "tests/fuzz/resp_value.h"

namespace {

using namespace deadbolt;  // NOLINT: a harness names many of its parts

void Check(bool ok) {
  if (!ok) std::abort();
}

// Commands whose arguments may ask for a lot of memory or time with a few bytes (Redis allows
// them too; a fuzzer would spend its time there, not find bugs): skipped above these sizes.
bool TooCostly(std::string_view name, server::CmdArgs args) {
  auto number_over = [&](size_t i, long long limit) {
    if (i >= args.size()) return false;
    long long v = std::atoll(std::string(args[i]).c_str());
    return v > limit || v < -limit;
  };
  if (name == "setrange") return number_over(2, 1 << 16);
  if (name == "lpos" || name == "srandmember" || name == "zrandmember" || name == "spop" ||
      name == "lpop" || name == "rpop" || name == "zpopmin" || name == "zpopmax") {
    for (size_t i = 2; i < args.size(); i++) {
      if (number_over(i, 1 << 12)) return true;
    }
  }
  return false;
}

// LOCK.* keep their waiters in the reactor (server/txn/lock_waiters.*): their shard work is
// covered by shard/db_lock_test.cc and the socket tests.
bool NeedsReactor(std::string_view name) { return name.substr(0, 5) == "lock."; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int resp = (data[0] & 1) ? 3 : 2;
  const int64_t tick_ms = (data[0] >> 1) * 37;
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);

  static const server::CommandTable& table = server::CommandTable::Get();
  static const server::Config config;
  shard::Shard shard(0, 2);
  int64_t now_ms = 1'700'000'000'000;

  protocol::ParserLimits limits;
  limits.max_bulk_len = 1 << 16;
  limits.max_multibulk_len = 1 << 10;
  protocol::RespParser parser(limits);
  std::vector<std::string_view> args;
  int commands = 0;
  while (!input.empty() && commands++ < 64) {
    size_t consumed = 0;
    if (parser.Parse(input, &consumed, &args) != protocol::ParseStatus::kOk) break;
    input.remove_prefix(consumed);
    if (args.empty()) continue;
    const server::CommandSpec* spec = table.Find(args[0]);
    if (!spec || !spec->ArityOk(args.size()) || !spec->shard_handler) continue;
    if (spec->flags & (server::kBlocking | server::kPubSub)) continue;
    if (NeedsReactor(spec->name)) continue;
    const server::CmdArgs cmd(args.data(), args.size());
    if (TooCostly(spec->name, cmd)) continue;
    std::string out;
    protocol::ReplyBuilder rb(&out, resp);
    server::ShardCtx ctx{shard, shard.db(0), 0, now_ms, config, rb};
    spec->shard_handler(cmd, ctx);
    size_t used = 0;
    Check(fuzz::ParseRespValue(out, &used));  // one whole value...
    Check(used == out.size());                // ...and nothing after it
    now_ms += tick_ms;
  }
  shard.ActiveExpire(now_ms, 1 << 20);
  return 0;
}

#pragma once
// What the stream commands share (server/streams/cmd_stream.cc, cmd_stream_group.cc): their
// arguments as Redis 7.0's t_stream.c parses them (IDs, interval bounds, XADD/XTRIM's trimming,
// XREAD/XREADGROUP's options) and their replies (entries, XREAD's per-key reply).
//
// Threads: any; pure functions over the arguments and a ReplyBuilder.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/reply_builder.h"
#include "server/cmdtable/command.h"
#include "shard/db.h"

namespace deadbolt::server::stream_cmds {

// Redis's string2ull: a strict decimal first (not negative), else what strtoull reads whole.
bool ParseU64(std::string_view s, uint64_t* out);
// Redis's streamGenericParseIDOrReply: "ms-seq", or "ms" with `missing_seq`; unless `strict`,
// "-" and "+" are the smallest and largest IDs; with `auto_seq`, "ms-*" sets it (XADD).
bool ParseId(std::string_view s, bool strict, uint64_t missing_seq, shard::StreamId* id,
             bool* auto_seq = nullptr);
// The same, replying Redis's "Invalid stream ID" error when false.
bool ParseIdOrReply(std::string_view s, bool strict, uint64_t missing_seq, shard::StreamId* id,
                    protocol::ReplyBuilder& rb);
// An interval's bound (XRANGE, XPENDING, XAUTOCLAIM's start): an ID, "-"/"+", or "(" and an ID
// for an exclusive one.
bool ParseBound(std::string_view s, bool start, shard::StreamId* id, protocol::ReplyBuilder& rb);
// XADD's and XTRIM's options from args[i] (see the definition); the ID's index, or -1.
int ParseAddOrTrim(CmdArgs args, size_t i, bool xadd, shard::XAddSpec* spec,
                   protocol::ReplyBuilder& rb);

struct XReadArgs {
  int64_t count = 0;      // 0: all
  int64_t block_ms = -1;  // -1: no BLOCK
  size_t streams = 0;     // index of the first key
  size_t n = 0;           // keys
  // XREADGROUP's
  std::string_view group, consumer;
  bool noack = false;
};
bool ParseXRead(CmdArgs args, bool group, XReadArgs* x, protocol::ReplyBuilder* rb);
// CommandSpec::key_range and ::blocks of XREAD (false) and XREADGROUP (true): the keys after
// STREAMS; whether BLOCK was given.
template <bool kGroup>
bool XReadKeyRange(CmdArgs args, int* first, int* last) {
  XReadArgs x;
  if (!ParseXRead(args, kGroup, &x, nullptr)) return false;
  *first = static_cast<int>(x.streams);
  *last = static_cast<int>(x.streams + x.n) - 1;
  return true;
}
template <bool kGroup>
bool XReadMayBlock(CmdArgs args) {
  XReadArgs x;
  return ParseXRead(args, kGroup, &x, nullptr) && x.block_ms >= 0;
}
// BLOCK's milliseconds from now (0: no limit) as a LockWaiters deadline.
int64_t Deadline(int64_t block_ms, int64_t now_ms);

// An entry: [id, [field, value, ...]], or [id, nil] for a pending entry whose entry is gone.
void ReplyEntry(protocol::ReplyBuilder& rb, const shard::StreamEntryOut& e);
void ReplyEntries(protocol::ReplyBuilder& rb, const std::vector<shard::StreamEntryOut>& entries);
// XREAD's and XREADGROUP's reply: [[key, entries], ...] (RESP3: a map key -> entries).
void ReplyRead(
    protocol::ReplyBuilder& rb,
    const std::vector<std::pair<std::string_view, std::vector<shard::StreamEntryOut>>>& got);

// The reply of an XREAD/XREADGROUP that read keys[i] into got[i] (nullopt: nothing there):
// ReplyRead of those with entries, or a null array when none had any and it may not wait. False
// when none had any and it may wait: the caller then makes the client wait.
bool ReplyReadOrNull(protocol::ReplyBuilder& rb, const std::vector<std::string>& keys,
                     std::vector<std::optional<std::vector<shard::StreamEntryOut>>>& got,
                     bool may_wait);

}  // namespace deadbolt::server::stream_cmds

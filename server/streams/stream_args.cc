#include "server/streams/stream_args.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "server/base/error_strings.h"
#include "server/commands/cmd_util.h"
#include "server/txn/lock_waiters.h"
#include "shard/base/numeric.h"

namespace deadbolt::server::stream_cmds {

using protocol::ReplyBuilder;
using shard::StreamEntryOut;
using shard::StreamId;
using shard::StreamTrim;
using shard::XAddSpec;

// --- arguments ---

// Redis's string2ull: a strict decimal first (not negative), else what strtoull reads whole (a
// leading '+' or spaces).
bool ParseU64(std::string_view s, uint64_t* out) {
  int64_t ll;
  if (shard::ParseInt64(s, &ll)) {
    if (ll < 0) return false;
    *out = static_cast<uint64_t>(ll);
    return true;
  }
  if (s.empty() || s.size() > 127 || memchr(s.data(), '\0', s.size()) != nullptr) return false;
  char buf[128];
  memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = strtoull(buf, &end, 10);
  if (errno == EINVAL || errno == ERANGE || end != buf + s.size()) return false;
  *out = v;
  return true;
}

// Redis's streamGenericParseIDOrReply: "ms-seq", or "ms" with `missing_seq`; unless `strict`,
// "-" and "+" are the smallest and largest IDs; with `auto_seq`, "ms-*" sets it (XADD).
bool ParseId(std::string_view s, bool strict, uint64_t missing_seq, StreamId* id, bool* auto_seq) {
  if (auto_seq) *auto_seq = false;
  if (s.size() > 127) return false;
  if (s.size() == 1 && (s[0] == '-' || s[0] == '+')) {
    if (strict) return false;
    *id = s[0] == '-' ? StreamId{} : StreamId::Max();
    return true;
  }
  const size_t dash = s.find('-');
  if (dash == std::string_view::npos) {
    id->seq = missing_seq;
    return ParseU64(s, &id->ms);
  }
  if (!ParseU64(s.substr(0, dash), &id->ms)) return false;
  const std::string_view seq = s.substr(dash + 1);
  if (auto_seq && seq == "*") {
    id->seq = 0;
    *auto_seq = true;
    return true;
  }
  return ParseU64(seq, &id->seq);
}

bool ParseIdOrReply(std::string_view s, bool strict, uint64_t missing_seq, StreamId* id,
                    ReplyBuilder& rb) {
  if (ParseId(s, strict, missing_seq, id)) return true;
  rb.Error(errors::kStreamBadId);
  return false;
}

// XRANGE's bounds: an ID, "-"/"+", or "(" and an ID for an exclusive bound.
bool ParseBound(std::string_view s, bool start, StreamId* id, ReplyBuilder& rb) {
  const uint64_t missing_seq = start ? 0 : UINT64_MAX;
  if (s.size() > 1 && s[0] == '(') {
    if (!ParseIdOrReply(s.substr(1), true, missing_seq, id, rb)) return false;
    if (start ? !id->Incr() : !id->Decr()) {
      rb.Error(start ? errors::kStreamBadStart : errors::kStreamBadEnd);
      return false;
    }
    return true;
  }
  return ParseIdOrReply(s, false, missing_seq, id, rb);
}

// Redis's streamParseAddOrTrimArgsOrReply from args[i]: NOMKSTREAM (XADD), MAXLEN|MINID [=|~]
// threshold, LIMIT n. For XADD it stops at the ID ("*" or one) and returns its index; for XTRIM
// it returns args.size(). -1 after replying an error.
int ParseAddOrTrim(CmdArgs args, size_t i, bool xadd, XAddSpec* spec, ReplyBuilder& rb) {
  StreamTrim& trim = spec->trim;
  bool approx = false, limit_given = false;
  int64_t limit = 0;
  for (; i < args.size(); i++) {
    const size_t more = args.size() - 1 - i;
    const std::string_view opt = args[i];
    if (xadd && opt == "*") break;
    const bool maxlen = OptionIs(opt, "maxlen");
    if ((maxlen || OptionIs(opt, "minid")) && more > 0) {
      if (trim.by != StreamTrim::By::kNone) {
        rb.Error(errors::kStreamMaxLenMinId);
        return -1;
      }
      approx = false;
      if (more >= 2 && (args[i + 1] == "~" || args[i + 1] == "=")) {
        approx = args[i + 1] == "~";
        i++;
      }
      if (maxlen) {
        int64_t n;
        if (!StringToInt64(args[i + 1], &n)) {
          rb.Error(errors::kNotInteger);
          return -1;
        }
        if (n < 0) {
          rb.Error(errors::kStreamMaxLenNegative);
          return -1;
        }
        trim.by = StreamTrim::By::kMaxLen;
        trim.maxlen = static_cast<uint64_t>(n);
      } else {
        if (!ParseIdOrReply(args[i + 1], true, 0, &trim.minid, rb)) return -1;
        trim.by = StreamTrim::By::kMinId;
      }
      i++;
    } else if (OptionIs(opt, "limit") && more > 0) {
      if (!StringToInt64(args[i + 1], &limit)) {
        rb.Error(errors::kNotInteger);
        return -1;
      }
      if (limit < 0) {
        rb.Error(errors::kStreamLimitNegative);
        return -1;
      }
      limit_given = true;
      i++;
    } else if (xadd && OptionIs(opt, "nomkstream")) {
      spec->nomkstream = true;
    } else if (xadd) {
      bool auto_seq = false;
      if (!ParseId(opt, true, 0, &spec->id, &auto_seq)) {
        rb.Error(errors::kStreamBadId);
        return -1;
      }
      // ("ms" alone is ms-0, given in full)
      spec->id_mode = auto_seq ? XAddSpec::IdMode::kAutoSeq : XAddSpec::IdMode::kExplicit;
      break;
    } else {
      rb.Error(errors::kSyntax);
      return -1;
    }
  }
  if (limit != 0 && trim.by == StreamTrim::By::kNone) {
    rb.Error(errors::kStreamLimitNoStrategy);
    return -1;
  }
  if (!xadd && trim.by == StreamTrim::By::kNone) {
    rb.Error(errors::kXTrimNoStrategy);
    return -1;
  }
  if (limit_given && !approx) {
    rb.Error(errors::kStreamLimitNoTilde);
    return -1;
  }
  // "~" without LIMIT: Redis's 100 * stream-node-max-entries (100), at most 10,000; "=": none.
  trim.limit = approx ? (limit_given ? static_cast<size_t>(limit) : 10000) : 0;
  // A LIMIT of 0 with "~" means no limit, as in Redis.
  return static_cast<int>(i);
}

// --- replies ---

void ReplyEntry(ReplyBuilder& rb, const StreamEntryOut& e) {
  rb.ArrayHeader(2);
  rb.Bulk(e.id.ToString());
  if (e.deleted) {
    rb.NullArray();
    return;
  }
  rb.ArrayHeader(e.fields.size());
  for (const std::string& f : e.fields) rb.Bulk(f);
}

void ReplyEntries(ReplyBuilder& rb, const std::vector<StreamEntryOut>& entries) {
  rb.ArrayHeader(entries.size());
  for (const StreamEntryOut& e : entries) ReplyEntry(rb, e);
}

// Redis's xreadCommand's option loop, for XREAD or (`group`) XREADGROUP. False after replying
// an error (to rb, when given).
bool ParseXRead(CmdArgs args, bool group, XReadArgs* x, ReplyBuilder* rb) {
  auto fail = [&](std::string_view e) {
    if (rb) rb->Error(e);
    return false;
  };
  for (size_t i = 1; i < args.size(); i++) {
    const size_t more = args.size() - 1 - i;
    const std::string_view o = args[i];
    if (OptionIs(o, "block") && more > 0) {
      int64_t ms;
      if (!StringToInt64(args[++i], &ms)) return fail(errors::kTimeoutNotInteger);
      if (ms < 0) return fail(errors::kTimeoutNegative);
      x->block_ms = ms;  // (a deadline past the end of time waits forever)
    } else if (OptionIs(o, "count") && more > 0) {
      if (!StringToInt64(args[++i], &x->count)) return fail(errors::kNotInteger);
      if (x->count < 0) x->count = 0;
    } else if (OptionIs(o, "streams") && more > 0) {
      x->streams = i + 1;
      const size_t rest = args.size() - x->streams;
      if (rest % 2 != 0) {
        return fail(group ? errors::kXReadGroupUnbalanced : errors::kXReadUnbalanced);
      }
      x->n = rest / 2;
      if (group && x->group.data() == nullptr) return fail(errors::kXReadGroupMissing);
      return true;
    } else if (OptionIs(o, "group") && more >= 2) {
      if (!group) return fail(errors::kXReadGroupOption);
      x->group = args[i + 1];
      x->consumer = args[i + 2];
      i += 2;
    } else if (OptionIs(o, "noack")) {
      if (!group) return fail(errors::kXReadNoAck);
      x->noack = true;
    } else {
      return fail(errors::kSyntax);
    }
  }
  return fail(errors::kSyntax);  // no STREAMS
}

// BLOCK's milliseconds from now (0: no limit).
int64_t Deadline(int64_t block_ms, int64_t now_ms) {
  if (block_ms == 0 || block_ms >= LockWaiters::kForever - now_ms) return LockWaiters::kForever;
  return now_ms + block_ms;
}

// The reply of the keys that had entries: [[key, entries], ...] (RESP3: a map key -> entries).
void ReplyRead(ReplyBuilder& rb,
               const std::vector<std::pair<std::string_view, std::vector<StreamEntryOut>>>& got) {
  if (rb.resp() >= 3) {
    rb.MapHeader(got.size());
  } else {
    rb.ArrayHeader(got.size());
  }
  for (const auto& [key, entries] : got) {
    if (rb.resp() < 3) rb.ArrayHeader(2);
    rb.Bulk(key);
    ReplyEntries(rb, entries);
  }
}

bool ReplyReadOrNull(ReplyBuilder& rb, const std::vector<std::string>& keys,
                     std::vector<std::optional<std::vector<StreamEntryOut>>>& got, bool may_wait) {
  std::vector<std::pair<std::string_view, std::vector<StreamEntryOut>>> some;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (got[i]) some.emplace_back(keys[i], std::move(*got[i]));
  }
  if (!some.empty()) {
    ReplyRead(rb, some);
    return true;
  }
  if (!may_wait) {
    rb.NullArray();
    return true;
  }
  return false;
}

}  // namespace deadbolt::server::stream_cmds

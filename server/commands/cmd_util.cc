#include "server/commands/cmd_util.h"

#include <absl/strings/str_cat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"

namespace deadbolt::server {

bool ConstantTimeEquals(std::string_view given, std::string_view secret) {
  // volatile: keeps the compiler from turning the loop into one that stops at a difference.
  volatile unsigned char diff = given.size() == secret.size() ? 0 : 1;
  const unsigned char* g = reinterpret_cast<const unsigned char*>(given.data());
  const unsigned char* s = reinterpret_cast<const unsigned char*>(secret.data());
  const size_t n = secret.size();
  size_t j = 0;
  for (size_t i = 0; i < given.size(); i++) {
    const unsigned char expected = n == 0 ? 0 : s[j];
    diff = diff | (g[i] ^ expected);
    j = j + 1 == n ? 0 : j + 1;
  }
  return diff == 0;
}

bool ParseScanCursor(std::string_view s, uint64_t* out) {
  // strtoul needs a terminated string; cursors are short, anything long is copied to the heap.
  char small[32];
  std::string large;
  char* buf = small;
  if (s.size() >= sizeof(small)) {
    large.assign(s);
    buf = large.data();
  } else {
    std::memcpy(small, s.data(), s.size());
    small[s.size()] = '\0';
  }
  if (std::isspace(static_cast<unsigned char>(buf[0]))) return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(buf, &end, 10);
  // As Redis, the parse ends at the first NUL byte, and what follows it is not looked at.
  if (*end != '\0' || errno == ERANGE) return false;
  *out = v;
  return true;
}

bool ParseElementScan(CmdArgs args, ShardCtx& ctx, shard::ValueType type, ElementScanArgs* out) {
  if (!ParseScanCursor(args[2], &out->cursor)) {
    ctx.rb.Error(errors::kInvalidCursor);
    return false;
  }
  int64_t count = 10;
  std::string_view error;
  for (size_t i = 3; i < args.size() && error.empty(); i += 2) {
    const bool has_value = i + 1 < args.size();
    if (OptionIs(args[i], "count") && has_value) {
      if (!StringToInt64(args[i + 1], &count)) {
        error = errors::kNotInteger;
      } else if (count < 1) {
        error = errors::kSyntax;
      }
    } else if (OptionIs(args[i], "match") && has_value) {
      out->pattern = args[i + 1];
    } else {
      error = errors::kSyntax;
    }
  }
  out->count = static_cast<size_t>(count);
  if (error.empty()) return true;
  const shard::ValueType held = ctx.db.Type(args[1], ctx.now_ms);
  if (held == shard::ValueType::kNone) {
    ctx.rb.ArrayHeader(2);
    ctx.rb.Bulk("0");
    ctx.rb.ArrayHeader(0);
  } else {
    ctx.rb.Error(held == type ? error : errors::kWrongType);
  }
  return false;
}

bool ParseRandCount(CmdArgs args, std::string_view with, int64_t* count, bool* with_given,
                    protocol::ReplyBuilder& rb) {
  if (!StringToInt64(args[2], count)) {
    rb.Error(errors::kNotInteger);
    return false;
  }
  if (*count == INT64_MIN) {
    rb.Error(errors::kZRandCountRange);
    return false;
  }
  if (args.size() > 4 || (args.size() == 4 && !OptionIs(args[3], with))) {
    rb.Error(errors::kSyntax);
    return false;
  }
  *with_given = args.size() == 4;
  if (*with_given && (*count < -INT64_MAX / 2 || *count > INT64_MAX / 2)) {
    rb.Error(errors::kValueOutOfRange);
    return false;
  }
  if (*count < -errors::kMaxRandPicks) {
    rb.Error(errors::kRandPicksRange);
    return false;
  }
  return true;
}

void ReplyScanCursor(protocol::ReplyBuilder& rb, uint64_t cursor) {
  char buf[24];
  auto end = std::to_chars(buf, buf + sizeof(buf), cursor).ptr;
  rb.Bulk(std::string_view(buf, end - buf));
}

ShardCtx LocalShardCtx(Connection& conn, protocol::ReplyBuilder& rb) {
  Reactor& r = conn.reactor();
  ShardCtx ctx{r.shard(), r.shard().db(conn.db_index()), conn.db_index(), r.now_ms(), r.config(),
               rb};
  ctx.acl_user = conn.AclUserHere();
  return ctx;
}

bool AllKeysOn(CmdArgs args, size_t first, size_t step, const Server& server, int shard) {
  for (size_t i = first; i < args.size(); i += step) {
    if (server.ShardOf(args[i]) != shard) return false;
  }
  return true;
}

void ReplyStatus(protocol::ReplyBuilder& rb, shard::OpStatus s) {
  rb.Error(errors::ForStatus(s));
}

const std::vector<int>& AllShards(const Server& server) {
  thread_local std::vector<int> all;
  if (all.size() != static_cast<size_t>(server.num_shards())) {
    all.clear();
    for (int i = 0; i < server.num_shards(); i++) all.push_back(i);
  }
  return all;
}

ShardedKeys::ShardedKeys(CmdArgs args, size_t first, size_t step, const Server& server)
    : step_(step) {
  size_t total = 0;
  for (size_t i = first; i < args.size(); i++) total += args[i].size();
  bytes_.reserve(total);  // never reallocated below: the views point into it
  args_.reserve(args.size() - first);
  for (size_t i = first; i < args.size(); i++) {
    const size_t off = bytes_.size();
    bytes_.append(args[i]);
    args_.emplace_back(bytes_.data() + off, args[i].size());
  }
  const size_t groups = args_.size() / step;
  owner_.reserve(groups);
  for (size_t i = 0; i < groups; i++) {
    const int s = server.ShardOf(args_[i * step]);
    owner_.push_back(s);
    if (static_cast<size_t>(s) >= on_.size()) on_.resize(s + 1);
    on_[s].push_back(static_cast<uint32_t>(i));
  }
  for (int s = 0; s < static_cast<int>(on_.size()); s++) {
    if (!on_[s].empty()) shards_.push_back(s);
  }
}

void WriteHelp(protocol::ReplyBuilder& rb, std::initializer_list<const char*> lines) {
  rb.ArrayHeader(lines.size());
  for (const char* l : lines) rb.SimpleString(l);
}

void RunSub(const char* container, const Sub* subs, size_t n, CmdArgs args, Connection& conn,
            protocol::ReplyBuilder& rb) {
  for (size_t i = 0; i < n; i++) {
    if (!EqualsIgnoreCase(args[1], subs[i].name)) continue;
    int a = subs[i].arity;
    size_t argc = args.size();
    if (a >= 0 ? argc != static_cast<size_t>(a) : argc < static_cast<size_t>(-a)) {
      rb.Error(errors::WrongArity(absl::StrCat(container, "|", AsciiLower(args[1]))));
      return;
    }
    subs[i].fn(args, conn, rb);
    return;
  }
  rb.Error(errors::UnknownSubcommand(args[1], AsciiUpper(container)));
}

CommandSpec Subs(CommandSpec parent, std::initializer_list<std::pair<const char*, int>> subs,
                 std::initializer_list<const char*> admin) {
  for (auto& [name, arity] : subs) {
    std::vector<std::string> cats = parent.acl_categories;
    for (const char* a : admin) {
      if (std::string_view(a) == name) cats = {"@admin", "@slow", "@dangerous", "@connection"};
    }
    parent.subcommands.push_back(
        ConnCommand(parent.name + "|" + name, arity, parent.flags, nullptr, std::move(cats)));
  }
  return parent;
}

CommandSpec OnlySlow(CommandSpec container) {
  container.acl_categories = {"@slow"};
  return container;
}

}  // namespace deadbolt::server

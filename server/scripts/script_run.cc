#include "server/scripts/script_run.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "server/acl/acl.h"
#include "server/base/config.h"
#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/cmdtable/memory_limit.h"
#include "server/commands/cmd_util.h"
#include "server/core/reactor.h"
#include "server/pubsub/registry.h"
#include "shard/shard.h"

namespace deadbolt::server {
namespace {

constexpr std::string_view kInvalidExpireSet = "ERR invalid expire time in 'set' command";
constexpr std::string_view kInvalidExpirePExpire = "ERR invalid expire time in 'pexpire' command";

int64_t DefaultPublish(bool shard_channel, std::string_view channel, std::string_view message) {
  return PublishNoWait(*Reactor::Current(),
                       shard_channel ? PubSubKind::kShard : PubSubKind::kChannel, channel, message);
}

// Parses one RESP2 reply at *pos of `in` (a handler's whole, well-formed output) into `out`.
// An error reply sets *error instead.
void ParseReply(std::string_view in, size_t* pos, CallReply* out, std::string_view* error) {
  const char type = in[*pos];
  const size_t eol = in.find("\r\n", *pos);
  const std::string_view line = in.substr(*pos + 1, eol - *pos - 1);
  *pos = eol + 2;
  int64_t n = 0;
  switch (type) {
    case '+':
      out->type = CallReply::Type::kStatus;
      out->str.assign(line);
      return;
    case '-':
      *error = line;
      return;
    case ':':
      StringToInt64(line, &n);
      out->type = CallReply::Type::kInteger;
      out->integer = n;
      return;
    case '$':
      StringToInt64(line, &n);
      if (n < 0) {
        out->type = CallReply::Type::kFalse;
        return;
      }
      out->type = CallReply::Type::kString;
      out->str.assign(in.substr(*pos, static_cast<size_t>(n)));
      *pos += static_cast<size_t>(n) + 2;
      return;
    default:  // '*'
      StringToInt64(line, &n);
      if (n < 0) {
        out->type = CallReply::Type::kFalse;
        return;
      }
      out->type = CallReply::Type::kArray;
      out->elements.resize(static_cast<size_t>(n));
      for (CallReply& e : out->elements) ParseReply(in, pos, &e, error);
      return;
  }
}

}  // namespace

ScriptRun::ScriptRun(const ScriptCall& call, ShardCtx& ctx)
    : call_(call), ctx_(ctx), db_(&ctx.db), db_index_(ctx.db_index) {}

bool ScriptRun::Call(int line, std::initializer_list<LuaArg> args, CallReply* reply) {
  return Call(line, absl::Span<const LuaArg>(args.begin(), args.size()), reply);
}

bool ScriptRun::Call(int line, absl::Span<const LuaArg> args, CallReply* reply) {
  call_args_.clear();
  for (LuaArg a : args) {
    if (a == nullptr) return FailArgs(line);
    call_args_.push_back(*a);
  }
  // PUBLISH / SPUBLISH run on the connection's reactor, not on a shard: as Redisson names them.
  if (EqualsIgnoreCase(call_args_[0], "publish") || EqualsIgnoreCase(call_args_[0], "spublish")) {
    if (call_args_.size() != 3) return Fail(errors::kScriptWrongArity, line);
    if (!Publish(args[0], args[1], args[2], line)) return false;
    if (reply) {
      *reply = CallReply();
      reply->type = CallReply::Type::kInteger;
    }
    return true;
  }
  const CommandSpec* spec = CommandTable::Get().Find(call_args_[0]);
  if (spec == nullptr) return Fail(errors::kScriptUnknownCommand, line);
  if (!spec->ArityOk(call_args_.size())) return Fail(errors::kScriptWrongArity, line);
  if ((spec->flags & kNoScript) || spec->shard_handler == nullptr) {
    return Fail(errors::kScriptNotAllowed, line);
  }
  if (ctx_.acl_user != nullptr) {
    const std::string refusal = acl::ScriptCallRefusal(
        *ctx_.acl_user, CmdArgs(call_args_.data(), call_args_.size()), ctx_.now_ms);
    if (!refusal.empty()) return Fail(refusal, line);
  }
  if ((spec->flags & kWrite) && call_.read_only) return Fail(errors::kScriptWriteInReadOnly, line);
  if (!CheckOom((spec->flags & kDenyOom) != 0, line)) return false;
  if (spec->flags & kWrite) wrote_ = true;
  call_out_.clear();
  protocol::ReplyBuilder rb(&call_out_, 2);
  ShardCtx ctx{ctx_.shard, *db_, db_index_, ctx_.now_ms, ctx_.config, rb};
  ctx.acl_user = ctx_.acl_user;
  spec->shard_handler(CmdArgs(call_args_.data(), call_args_.size()), ctx);
  CallReply ignored;
  CallReply* out = reply ? reply : &ignored;
  *out = CallReply();
  std::string_view error;
  size_t pos = 0;
  if (!call_out_.empty()) ParseReply(call_out_, &pos, out, &error);
  if (!error.empty()) return Fail(error, line);
  return true;
}

bool ScriptRun::Fail(std::string_view redis_error, int line) {
  error_ = errors::ScriptError(redis_error, script().sha, line);
  return false;
}

bool ScriptRun::FailArgs(int line) { return Fail(errors::kScriptArgs, line); }

bool ScriptRun::CheckWrite(std::initializer_list<LuaArg> args, int line, bool denyoom) {
  for (LuaArg a : args) {
    if (a == nullptr) return FailArgs(line);
  }
  if (call_.read_only) return Fail(errors::kScriptWriteInReadOnly, line);
  if (!CheckOom(denyoom, line)) return false;
  wrote_ = true;
  return true;
}

bool ScriptRun::AclAllows(int line, std::initializer_list<std::string_view> args) {
  if (ctx_.acl_user == nullptr) return true;  // a user who may do everything
  const std::string refusal = acl::ScriptCallRefusal(
      *ctx_.acl_user, CmdArgs(args.begin(), args.size()), ctx_.now_ms);
  return refusal.empty() || Fail(refusal, line);
}

bool ScriptRun::AclAllowsOnEachKey(int line, std::string_view command) {
  if (ctx_.acl_user == nullptr) return true;
  for (std::string_view key : call_.keys) {
    if (!AclAllows(line, {command, key})) return false;
  }
  return true;
}

bool ScriptRun::CheckOom(bool denyoom, int line) {
  // As Redis's scriptVerifyOOM: refused only before the script's first write, which it could
  // not take back.
  if (denyoom && !wrote_ && MemoryLimit::Over()) return Fail(errors::kOom, line);
  return true;
}

bool ScriptRun::Get(LuaArg key, int line, std::optional<std::string_view>* value) {
  if (!key) return FailArgs(line);
  if (!AclAllows(line, {"get", *key})) return false;
  auto r = db_->Get(*key, ctx_.now_ms);
  if (r.ok()) {
    *value = *r;
  } else if (r.status() == shard::OpStatus::kKeyNotFound) {
    value->reset();
  } else {
    return Fail(errors::ForStatus(r.status()), line);
  }
  return true;
}

bool ScriptRun::Exists(LuaArg key, int line, bool* exists) {
  if (!key) return FailArgs(line);
  if (!AclAllows(line, {"exists", *key})) return false;
  *exists = db_->Exists(*key, ctx_.now_ms);
  return true;
}

bool ScriptRun::Pttl(LuaArg key, int line, int64_t* ms) {
  if (!key) return FailArgs(line);
  if (!AclAllows(line, {"pttl", *key})) return false;
  *ms = db_->Pttl(*key, ctx_.now_ms);
  return true;
}

bool ScriptRun::Del(LuaArg key, int line, int64_t* deleted) {
  if (!CheckWrite({key}, line)) return false;
  if (!AclAllows(line, {"del", *key})) return false;
  *deleted = db_->Del(*key, ctx_.now_ms) ? 1 : 0;
  return true;
}

bool ScriptRun::PExpire(LuaArg key, LuaArg ms, int line, int64_t* result) {
  if (!CheckWrite({key, ms}, line)) return false;
  if (!AclAllows(line, {"pexpire", *key, *ms})) return false;
  int64_t at;
  std::string_view error;
  if (!ParsePExpire(*ms, ctx_.now_ms, &at, &error)) return Fail(error, line);
  *result = db_->ExpireAt(*key, at, shard::ExpireCond::kNone, ctx_.now_ms);
  return true;
}

bool ScriptRun::SetPx(LuaArg key, LuaArg value, LuaArg ms, bool nx, int line, bool* written) {
  if (!CheckWrite({key, value, ms}, line, /*denyoom=*/true)) return false;
  if (!AclAllows(line, {"set", *key, *value, "PX", *ms})) return false;
  shard::SetOptions opts;
  std::string_view error;
  if (!ParseSetPx(*ms, ctx_.now_ms, &opts.expire_at_ms, &error)) return Fail(error, line);
  opts.expire = shard::SetOptions::Expire::kAt;
  if (nx) opts.cond = shard::SetOptions::Cond::kNX;
  auto r = db_->Set(*key, *value, opts, ctx_.now_ms);
  if (!r.ok()) {
    if (r.status() != shard::OpStatus::kSkipped) return Fail(errors::ForStatus(r.status()), line);
    *written = false;
    return true;
  }
  *written = r->written;
  return true;
}

bool ScriptRun::HExists(LuaArg key, LuaArg field, int line, bool* exists) {
  if (!key || !field) return FailArgs(line);
  if (!AclAllows(line, {"hexists", *key, *field})) return false;
  auto r = db_->HExists(*key, *field, ctx_.now_ms);
  if (!r.ok()) return Fail(errors::ForStatus(r.status()), line);
  *exists = *r;
  return true;
}

bool ScriptRun::HIncrBy(LuaArg key, LuaArg field, int64_t delta, int line, int64_t* value) {
  if (!CheckWrite({key, field}, line, /*denyoom=*/true)) return false;
  if (!AclAllows(line, {"hincrby", *key, *field, "1"})) return false;
  auto r = db_->HIncrBy(*key, *field, delta, ctx_.now_ms);
  if (!r.ok()) return Fail(errors::ForStatus(r.status()), line);
  *value = *r;
  return true;
}

bool ScriptRun::HSet(LuaArg key, LuaArg field, std::string_view value, int line) {
  if (!CheckWrite({key, field}, line, /*denyoom=*/true)) return false;
  if (!AclAllows(line, {"hset", *key, *field, value})) return false;
  auto r = db_->HSet(*key, *field, value, ctx_.now_ms);
  if (!r.ok()) return Fail(errors::ForStatus(r.status()), line);
  return true;
}

bool ScriptRun::Publish(LuaArg command, LuaArg channel, LuaArg message, int line) {
  if (!command || !channel || !message) return FailArgs(line);
  bool shard_channel;
  if (EqualsIgnoreCase(*command, "publish")) {
    shard_channel = false;
  } else if (EqualsIgnoreCase(*command, "spublish")) {
    shard_channel = true;
  } else {
    // Redis would run whatever command this names; deadbolt's scripts only publish.
    return Fail(errors::kScriptUnknownCommand, line);
  }
  if (!AclAllows(line, {shard_channel ? "spublish" : "publish", *channel, *message})) return false;
  (call_.publish ? call_.publish : DefaultPublish)(shard_channel, *channel, *message);
  return true;
}

void ScriptRun::PcallSelect(LuaArg db) {
  double n;
  if (!db || !LuaToNumber(*db, &n)) return;  // SELECT of nil: an error pcall returns
  char buf[32];
  int64_t index;
  if (!StringToInt64(LuaNumberText(n, buf), &index)) return;
  if (index < 0 || index >= ctx_.config.databases || index >= ctx_.shard.num_dbs()) return;
  db_ = &ctx_.shard.db(static_cast<int>(index));
  db_index_ = static_cast<int>(index);
}

bool LuaToNumber(std::string_view s, double* out) {
  // Lua strings are NUL-terminated for strtod: a NUL inside ends the number, as in Lua.
  char small[64];
  std::string large;
  const char* p;
  if (s.size() < sizeof(small)) {
    std::memcpy(small, s.data(), s.size());
    small[s.size()] = '\0';
    p = small;
  } else {
    large.assign(s);
    p = large.c_str();
  }
  char* end;
  double v = std::strtod(p, &end);
  if (end == p) return false;
  if (*end == 'x' || *end == 'X') v = static_cast<double>(std::strtoul(p, &end, 16));
  while (*end != '\0' && std::isspace(static_cast<unsigned char>(*end))) end++;
  if (*end != '\0') return false;
  *out = v;
  return true;
}

std::string_view LuaNumberText(double v, char (&buf)[32]) {
  const int n = std::snprintf(buf, sizeof(buf), "%.17g", v);
  return std::string_view(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

int64_t LuaNumberToInteger(double v) {
  // 2^63 is exactly representable; anything at or beyond it (or NaN) does not fit.
  if (std::isnan(v) || v >= 9223372036854775808.0 || v < -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

bool ParseSetPx(std::string_view ms, int64_t now_ms, int64_t* at_ms, std::string_view* error) {
  int64_t v;
  if (!StringToInt64(ms, &v)) {
    *error = errors::kNotInteger;
    return false;
  }
  if (v <= 0 || __builtin_add_overflow(v, now_ms, at_ms)) {
    *error = kInvalidExpireSet;
    return false;
  }
  return true;
}

bool ParsePExpire(std::string_view ms, int64_t now_ms, int64_t* at_ms, std::string_view* error) {
  int64_t v;
  if (!StringToInt64(ms, &v)) {
    *error = errors::kNotInteger;
    return false;
  }
  if (v > INT64_MAX - now_ms) {
    *error = kInvalidExpirePExpire;
    return false;
  }
  *at_ms = v + now_ms;
  return true;
}

}  // namespace deadbolt::server

// The catalogue's scripts over several unrelated keys: node-redlock (npm `redlock` 4.x and
// 5.0.0-beta, `@sesamecare-oss/redlock`) acquire / extend / release of one lock over several
// resources, and Redisson's batched watchdog renewal of up to 100 locks.
//
// When all the keys sit on one shard a script runs there in one step, statement by statement.
// When they span shards it runs on the connection's reactor as a Connection::FanOutPhases, which
// holds exclusive locks on every key of the call on every shard for all its phases, so no
// other client sees it half done and two racing multi-key acquires never both win:
//   phase 1: each shard looks at its keys (does the key exist, does it hold the lock value,
//            is it of the wrong type) and writes one status byte per key;
//   phase 2: each shard reads every status (phase 1 has finished everywhere), takes the same
//            decision the script would have taken walking the keys in order, and writes its keys;
//   finish:  the reply, or the error the script would have raised, at the key it would have
//            raised it.
// Arguments the writes need (SET's PX, PEXPIRE's ms, nil ARGV) are checked once, up front,
// since their errors depend on nothing else.

#include "server/scripts/script_multikey.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/error_strings.h"
#include "server/cmdtable/memory_limit.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/scripts/script_run.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;

// A script call copied for a fan-out, with the shard owning each key. Immutable after
// construction; shared (shared_ptr) by the shards of the fan-out, which only read it.
class OwnedScriptCall {
 public:
  OwnedScriptCall(const ScriptCall& call, const Server& server) : call_(call) {
    size_t total = 0;
    for (auto k : call.keys) total += k.size();
    for (auto a : call.argv) total += a.size();
    bytes_.reserve(total);  // never reallocated below: the views point into it
    views_.reserve(call.keys.size() + call.argv.size());
    auto copy = [&](std::string_view s) {
      const size_t off = bytes_.size();
      bytes_.append(s);
      views_.emplace_back(bytes_.data() + off, s.size());
    };
    for (auto k : call.keys) copy(k);
    for (auto a : call.argv) copy(a);
    call_.keys = CmdArgs(views_.data(), call.keys.size());
    call_.argv = CmdArgs(views_.data() + call.keys.size(), call.argv.size());
    owner_.reserve(call.keys.size());
    for (auto k : call_.keys) {
      const int s = server.ShardOf(k);
      owner_.push_back(s);
      if (std::find(shards_.begin(), shards_.end(), s) == shards_.end()) shards_.push_back(s);
    }
    std::sort(shards_.begin(), shards_.end());
  }
  OwnedScriptCall(const OwnedScriptCall&) = delete;
  OwnedScriptCall& operator=(const OwnedScriptCall&) = delete;

  const ScriptCall& call() const { return call_; }
  size_t num_keys() const { return owner_.size(); }
  const std::vector<int>& shards() const { return shards_; }
  // fn(i) for every key (0-based) owned by `shard`, in argument order.
  template <typename F>
  void ForEachKeyOn(int shard, F&& fn) const {
    for (size_t i = 0; i < owner_.size(); i++) {
      if (owner_[i] == shard) fn(i);
    }
  }

 private:
  ScriptCall call_;
  std::string bytes_;
  std::vector<std::string_view> views_;
  std::vector<int> owner_;
  std::vector<int> shards_;
};

// What phase 1 learns of one key.
enum KeyStatus : uint8_t {
  kPass = 0,   // acquire: missing; extend, release: holds the lock value; renew: has the field
  kStop,       // acquire: exists; extend, release: does not hold the value; renew: no field
  kWrongType,  // GET / HEXISTS fails with WRONGTYPE
  kNilArg,     // renew: its field, ARGV[i + 1], is nil
};

// ------------------------------------------------------------------------------------------
// node-redlock
//
//   acquire: for each key: if EXISTS key == 1 then return 0 end
//            for each key: SET key ARGV[1] PX ARGV[2]
//            return #KEYS
//   extend:  for each key: if GET key ~= ARGV[1] then return 0 end
//            for each key: SET key ARGV[1] PX ARGV[2]
//            return #KEYS
//   release: count = 0; for each key: if GET key == ARGV[1] then pcall DEL key; count++ end
//            return count
// @sesamecare-oss/redlock first runs redis.pcall("SELECT", tonumber(ARGV[1])) and shifts the
// other arguments by one.
// ------------------------------------------------------------------------------------------

enum class RedlockOp { kAcquire, kExtend, kRelease };

// kOffset: 1 when ARGV[1] is the database to SELECT. kCheckLine: the line of EXISTS / GET;
// kWriteLine: the line of SET / DEL.
template <RedlockOp kOp, int kOffset, int kCheckLine, int kWriteLine>
struct Redlock {
  // @sesamecare-oss/redlock's SELECT. Across shards the fan-out locks the keys in the
  // connection's database: the script is atomic against everything else on them there, but
  // only against other scripts on the database it SELECTs when that is another one (clients
  // normally use the same database for both).
  static void Select(ScriptRun& r) {
    if (kOffset) r.PcallSelect(r.arg(1));
  }
  static LuaArg Value(const ScriptRun& r) { return r.arg(kOffset + 1); }
  static LuaArg Ms(const ScriptRun& r) { return r.arg(kOffset + 2); }

  // Phase 1 for the i-th key (0-based).
  static KeyStatus Check(ScriptRun& r, size_t i) {
    const std::string_view key = r.call().keys[i];
    if (kOp == RedlockOp::kAcquire) return r.db().Exists(key, r.now_ms()) ? kStop : kPass;
    auto v = r.db().Get(key, r.now_ms());
    if (v.ok()) {
      LuaArg value = Value(r);
      return value && *v == *value ? kPass : kStop;
    }
    return v.status() == shard::OpStatus::kKeyNotFound ? kStop : kWrongType;
  }

  // Acquire / extend: whether the SETs can run; false with the error they raise.
  static bool CheckSet(const ScriptRun& r, int64_t now_ms, int64_t* at_ms, std::string* error) {
    const std::string_view sha = r.script().sha;
    if (!Value(r) || !Ms(r)) {
      *error = errors::ScriptError(errors::kScriptArgs, sha, kWriteLine);
    } else if (r.read_only()) {
      *error = errors::ScriptError(errors::kScriptWriteInReadOnly, sha, kWriteLine);
    } else if (MemoryLimit::Over()) {
      // The script's first write is this SET: refused over maxmemory, as Redis does.
      *error = errors::ScriptError(errors::kOom, sha, kWriteLine);
    } else {
      std::string_view e;
      if (ParseSetPx(*Ms(r), now_ms, at_ms, &e)) return true;
      *error = errors::ScriptError(e, sha, kWriteLine);
    }
    return false;
  }

  static void SetKey(ScriptRun& r, size_t i, int64_t at_ms) {
    shard::SetOptions opts;
    opts.expire = shard::SetOptions::Expire::kAt;
    opts.expire_at_ms = at_ms;
    r.db().Set(r.call().keys[i], *Value(r), opts, r.now_ms());
  }

  // Release, for the i-th key: GET (WRONGTYPE fails the script), then if it holds the value
  // pcall DEL (which fails, silently, in a read-only script) and count it: kPass.
  static KeyStatus ReleaseKey(ScriptRun& r, size_t i) {
    const std::string_view key = r.call().keys[i];
    auto v = r.db().Get(key, r.now_ms());
    if (!v.ok()) return v.status() == shard::OpStatus::kKeyNotFound ? kStop : kWrongType;
    LuaArg value = Value(r);
    if (!value || *v != *value) return kStop;
    if (!r.read_only()) r.db().Del(key, r.now_ms());
    return kPass;
  }

  // All keys on this shard: the script, statement by statement.
  // ACL: the commands the script calls, on every key, before it starts (it reads and writes
  // the keyspace directly). False with the script failed.
  static bool AclAllows(ScriptRun& r) {
    return r.AclAllowsOnEachKey(kCheckLine, kOp == RedlockOp::kAcquire ? "exists" : "get") &&
           r.AclAllowsOnEachKey(kWriteLine, kOp == RedlockOp::kRelease ? "del" : "set");
  }

  static void Run(ScriptRun& r, ReplyBuilder& rb) {
    Select(r);
    if (!AclAllows(r)) return;
    const size_t n = r.num_keys();
    if (kOp == RedlockOp::kRelease) {
      int64_t count = 0;
      for (size_t i = 0; i < n; i++) {
        const KeyStatus s = ReleaseKey(r, i);
        if (s == kWrongType) {
          r.Fail(errors::kWrongType, kCheckLine);
          return;
        }
        count += s == kPass ? 1 : 0;
      }
      rb.Integer(count);
      return;
    }
    for (size_t i = 0; i < n; i++) {
      const KeyStatus s = Check(r, i);
      if (s == kWrongType) {
        r.Fail(errors::kWrongType, kCheckLine);
        return;
      }
      if (s == kStop) {
        rb.Integer(0);
        return;
      }
    }
    if (n == 0) {
      rb.Integer(0);
      return;
    }
    int64_t at_ms;
    std::string error;
    if (!CheckSet(r, r.now_ms(), &at_ms, &error)) {
      rb.Error(error);
      return;
    }
    for (size_t i = 0; i < n; i++) SetKey(r, i, at_ms);
    rb.Integer(static_cast<int64_t>(n));
  }

  // Keys on several shards (see the top of the file).
  struct State {
    State(const ScriptCall& call, const Server& server)
        : owned(call, server), status(call.keys.size(), kPass), count(server.num_shards()) {}
    OwnedScriptCall owned;
    std::vector<uint8_t> status;           // per key, written by its shard in phase 1
    std::vector<PerShard<int64_t>> count;  // release: keys counted, per shard (phase 2)
    bool set_ok = false;                   // acquire, extend: the SETs' arguments are fine
    int64_t at_ms = 0;
    std::string set_error;
    // The first key (in argument order) whose status is not kPass, or n.
    size_t FirstNotPass() const {
      size_t i = 0;
      while (i < status.size() && status[i] == kPass) i++;
      return i;
    }
    size_t FirstWrongType() const {
      size_t i = 0;
      while (i < status.size() && status[i] != kWrongType) i++;
      return i;
    }
    // Acquire / extend: whether phase 2 writes.
    bool Writes() const { return set_ok && FirstNotPass() == status.size(); }
  };

  static void Multi(const ScriptCall& call, Connection& conn, ReplyBuilder& rb) {
    Server& server = conn.reactor().server();
    auto st = std::make_shared<State>(call, server);
    {
      ShardCtx ctx = LocalShardCtx(conn, rb);
      ScriptRun r(st->owned.call(), ctx);
      if (!AclAllows(r)) {
        rb.Error(r.error());
        return;
      }
    }
    if (kOp != RedlockOp::kRelease) {
      // The SETs' arguments are checked against the coordinator's clock: every key gets the
      // same expiry, as in Redis (a script sees one time).
      ShardCtx ctx = LocalShardCtx(conn, rb);
      ScriptRun r(st->owned.call(), ctx);
      st->set_ok = CheckSet(r, ctx.now_ms, &st->at_ms, &st->set_error);
    }
    std::vector<Connection::ShardFn> phases;
    phases.push_back([st](ShardCtx& ctx) {
      ScriptRun r(st->owned.call(), ctx);
      Select(r);
      st->owned.ForEachKeyOn(ctx.shard.index(), [&](size_t i) { st->status[i] = Check(r, i); });
    });
    phases.push_back([st](ShardCtx& ctx) {
      ScriptRun r(st->owned.call(), ctx);
      Select(r);
      const int me = ctx.shard.index();
      if (kOp == RedlockOp::kRelease) {
        const size_t stop = st->FirstWrongType();  // the script fails there: later keys stay
        st->owned.ForEachKeyOn(me, [&](size_t i) {
          if (i < stop && ReleaseKey(r, i) == kPass) st->count[me].v++;
        });
        return;
      }
      if (!st->Writes()) return;
      st->owned.ForEachKeyOn(me, [&](size_t i) { SetKey(r, i, st->at_ms); });
    });
    conn.FanOutPhases(st->owned.shards(), std::move(phases), [st](ReplyBuilder& rb) {
      const std::string_view sha = st->owned.call().script->sha;
      const size_t n = st->status.size();
      if (kOp == RedlockOp::kRelease) {
        if (st->FirstWrongType() < n) {
          rb.Error(errors::ScriptError(errors::kWrongType, sha, kCheckLine));
          return;
        }
        int64_t total = 0;
        for (const auto& c : st->count) total += c.v;
        rb.Integer(total);
        return;
      }
      const size_t first = st->FirstNotPass();
      if (first < n) {
        if (st->status[first] == kWrongType) {
          rb.Error(errors::ScriptError(errors::kWrongType, sha, kCheckLine));
        } else {
          rb.Integer(0);
        }
        return;
      }
      if (!st->set_ok) {
        rb.Error(st->set_error);
        return;
      }
      rb.Integer(static_cast<int64_t>(n));
    });
  }
};

// ------------------------------------------------------------------------------------------
// Redisson's watchdog renewal of many locks at once (one line):
//   local result = {} for i = 1, #KEYS do
//     if HEXISTS KEYS[i] ARGV[i + 1] == 1 then PEXPIRE KEYS[i] ARGV[1]; insert 1 else insert 0
//   end return result
// Without a cluster Redisson renews up to 100 unrelated locks per call, so on every shard.
// ------------------------------------------------------------------------------------------

struct RedissonRenew {
  static constexpr int kLine = 1;

  static KeyStatus Check(ScriptRun& r, size_t i) {
    LuaArg field = r.arg(i + 2);
    if (!field) return kNilArg;
    auto has = r.db().HExists(r.call().keys[i], *field, r.now_ms());
    if (!has.ok()) return kWrongType;
    return *has ? kPass : kStop;
  }

  // PEXPIRE's argument: nullopt when fine (and *at_ms set), else the error it raises.
  static std::optional<std::string_view> CheckExpire(const ScriptRun& r, int64_t now_ms,
                                                     int64_t* at_ms) {
    LuaArg ms = r.arg(1);
    if (!ms) return errors::kScriptArgs;
    if (r.read_only()) return errors::kScriptWriteInReadOnly;
    std::string_view e;
    if (!ParsePExpire(*ms, now_ms, at_ms, &e)) return e;
    return std::nullopt;
  }

  static void Run(ScriptRun& r, ReplyBuilder& rb) {
    const size_t n = r.num_keys();
    std::vector<uint8_t> result(n);
    for (size_t i = 0; i < n; i++) {
      bool has;
      if (!r.HExists(r.key(i + 1), r.arg(i + 2), kLine, &has)) return;
      if (has) {
        int64_t set;
        if (!r.PExpire(r.key(i + 1), r.arg(1), kLine, &set)) return;
      }
      result[i] = has ? 1 : 0;
    }
    rb.ArrayHeader(n);
    for (uint8_t v : result) rb.Integer(v);
  }

  struct State {
    State(const ScriptCall& call, const Server& server)
        : owned(call, server), status(call.keys.size(), kPass), result(call.keys.size(), 0) {}
    OwnedScriptCall owned;
    std::vector<uint8_t> status;  // per key, phase 1
    std::vector<uint8_t> result;  // per key, phase 2
    std::optional<std::string_view> expire_error;
    int64_t at_ms = 0;
    // Where the script raises an error (or n), and which.
    size_t FirstError(std::string_view* error) const {
      for (size_t i = 0; i < status.size(); i++) {
        if (status[i] == kWrongType) {
          *error = errors::kWrongType;
          return i;
        }
        if (status[i] == kNilArg) {
          *error = errors::kScriptArgs;
          return i;
        }
        if (status[i] == kPass && expire_error) {
          *error = *expire_error;
          return i;
        }
      }
      return status.size();
    }
  };

  static void Multi(const ScriptCall& call, Connection& conn, ReplyBuilder& rb) {
    Server& server = conn.reactor().server();
    auto st = std::make_shared<State>(call, server);
    {
      ShardCtx ctx = LocalShardCtx(conn, rb);
      ScriptRun r(st->owned.call(), ctx);
      // ACL: the commands it calls, on every key, before it starts.
      if (!r.AclAllowsOnEachKey(kLine, "hexists") || !r.AclAllowsOnEachKey(kLine, "pexpire")) {
        rb.Error(r.error());
        return;
      }
      st->expire_error = CheckExpire(r, ctx.now_ms, &st->at_ms);
    }
    std::vector<Connection::ShardFn> phases;
    phases.push_back([st](ShardCtx& ctx) {
      ScriptRun r(st->owned.call(), ctx);
      st->owned.ForEachKeyOn(ctx.shard.index(), [&](size_t i) { st->status[i] = Check(r, i); });
    });
    phases.push_back([st](ShardCtx& ctx) {
      std::string_view unused;
      const size_t stop = st->FirstError(&unused);
      ScriptRun r(st->owned.call(), ctx);
      st->owned.ForEachKeyOn(ctx.shard.index(), [&](size_t i) {
        if (i >= stop) return;
        // Again, in order: an earlier PEXPIRE of the same key may have removed it.
        const std::string_view key = st->owned.call().keys[i];
        auto has = ctx.db.HExists(key, *r.arg(i + 2), ctx.now_ms);
        if (has.ok() && *has) {
          ctx.db.ExpireAt(key, st->at_ms, shard::ExpireCond::kNone, ctx.now_ms);
          st->result[i] = 1;
        }
      });
    });
    conn.FanOutPhases(st->owned.shards(), std::move(phases), [st](ReplyBuilder& rb) {
      std::string_view error;
      if (st->FirstError(&error) < st->status.size()) {
        rb.Error(errors::ScriptError(error, st->owned.call().script->sha, kLine));
        return;
      }
      rb.ArrayHeader(st->result.size());
      for (uint8_t v : st->result) rb.Integer(v);
    });
  }
};

template <typename F>
ScriptInfo Entry(std::string_view sha, std::string_view client, std::string_view name,
                 bool acquires = false) {
  ScriptInfo s{sha, client, name, -1, F::Run, F::Multi, {}, acquires};
  if (!ParseSha1Hex(sha, &s.digest)) std::abort();  // a typo in the table below
  return s;
}

using RedlockOp::kAcquire;
using RedlockOp::kExtend;
using RedlockOp::kRelease;

}  // namespace

void AddMultiKeyScripts(std::vector<ScriptInfo>* out) {
  constexpr std::string_view kV4 = "node-redlock 4.x";
  out->push_back(Entry<Redlock<kAcquire, 0, 4, 11>>("e5a322e2634ef59a516e8ea150cb085afafee684", kV4,
                                                    "acquire", /*acquires=*/true));
  out->push_back(
      Entry<Redlock<kExtend, 0, 4, 11>>("ce46f80993d5dac20dd066eb301a4e37994bdbed", kV4, "extend"));
  out->push_back(Entry<Redlock<kRelease, 0, 5, 6>>("0f0f23b9048b36752b5be114f357ba083449f908", kV4,
                                                   "release"));
  constexpr std::string_view kV5 = "node-redlock 5.0.0-beta";
  out->push_back(Entry<Redlock<kAcquire, 0, 4, 11>>("96da70f7716f27d278a5218544df37fd8b0a5e4c", kV5,
                                                    "acquire", /*acquires=*/true));
  out->push_back(
      Entry<Redlock<kExtend, 0, 4, 11>>("aed6f382e410db8ba7926d4e5e9aab410bf2a78a", kV5, "extend"));
  out->push_back(Entry<Redlock<kRelease, 0, 5, 6>>("e4612211c9f8f51c257e26e056b0a654b3187242", kV5,
                                                   "release"));
  constexpr std::string_view kSesame = "@sesamecare-oss/redlock 1.x";
  out->push_back(Entry<Redlock<kAcquire, 1, 9, 16>>("1b77b94aa78451d55dfa97e18819bfbfc596cb5b",
                                                    kSesame, "acquire", /*acquires=*/true));
  out->push_back(Entry<Redlock<kExtend, 1, 9, 16>>("820e9778d2b6733e9ed771e4be90ae73a95a6f3b",
                                                   kSesame, "extend"));
  out->push_back(Entry<Redlock<kRelease, 1, 10, 11>>("df51f6837dcfe303d334e6abea9aeae192bab216",
                                                     kSesame, "release"));
  out->push_back(Entry<RedissonRenew>("6a3d31570dc6f4b0bd32bcdc8e75667747c6f635", "Redisson RLock",
                                      "renew many locks (watchdog, 3.3x-4.x)"));
}

}  // namespace deadbolt::server

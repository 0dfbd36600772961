#pragma once
// The command table: name, arity, flags, key positions and handler of every command.

#include <absl/types/span.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/reply_builder.h"

namespace deadbolt::shard {
class Shard;
class Db;
}  // namespace deadbolt::shard

namespace deadbolt::server {

namespace acl {
class User;  // server/acl/acl.h
}  // namespace acl
class BlockedReply;  // server/txn/blocked_reply.h
class Connection;
class Reactor;
struct Config;

using CmdArgs = absl::Span<const std::string_view>;  // args[0] is the command name

// Where and how a command runs. Owned by the reactor that runs the command, for that call only.
struct ShardCtx {
  shard::Shard& shard;
  shard::Db& db;
  int db_index;
  int64_t now_ms;
  const Config& config;
  protocol::ReplyBuilder& rb;
  // Set only for a blocking command (CommandSpec::blocks) called by a client connection that
  // can wait for its reply: not inside MULTI/EXEC, scripts or fan-outs, where a blocking command
  // does not wait (as in Redis). A handler that has to wait moves the BlockedReply out, writes
  // nothing to rb and finishes it later (server/txn/blocked_reply.h).
  std::unique_ptr<BlockedReply>* block = nullptr;
  // The caller's ACL user when it may not do everything (null otherwise): scripts check each
  // command they call against it (server/lua/lua_redis.cc, server/scripts/script_run.cc). Valid
  // for the call, on the thread running it (a copy travels with a forwarded call).
  const acl::User* acl_user = nullptr;
  // CLIENT TRACKING (server/tracking/): the calling client when it tracks keys, so that a change
  // it makes is known as its own (NOLOOP), and whether the keys of this call are to be
  // remembered for it (a read in default mode, not opted out). Zero for every other client.
  struct Track {
    uint64_t client = 0;
    int reactor = 0;
    bool remember = false;
  } track = {};
};

// A command that touches the keys of one shard. Runs on the reactor owning its keys: inline when
// that is the connection's own reactor, otherwise as a message to the owner. It parses its
// arguments, calls one pure shard operation and writes the reply.
using ShardHandler = void (*)(CmdArgs args, ShardCtx& ctx);
// A command about the connection or the whole server (or with keys on several shards). Runs on the
// connection's reactor; it may fan out to other shards through Connection::FanOut().
using ConnHandler = void (*)(CmdArgs args, Connection& conn, protocol::ReplyBuilder& rb);

enum CommandFlag : uint32_t {
  kWrite = 1 << 0,
  kReadOnly = 1 << 1,
  kFast = 1 << 2,
  kAdmin = 1 << 3,
  kNoAuth = 1 << 4,  // allowed before AUTH
  kLoading = 1 << 5,
  kStale = 1 << 6,
  kNoScript = 1 << 7,
  kPubSub = 1 << 8,
  kDenyOom = 1 << 9,
  kBarrier = 1 << 10,   // waits until the connection's earlier commands have replied
  kMultiKey = 1 << 11,  // keys may span shards: handled by a ConnHandler that fans out
  kNoQueue = 1 << 12,   // runs at once inside MULTI instead of being queued (EXEC, WATCH, ...)
  kBlocking = 1 << 13,  // may wait in the server (set with CommandSpec::blocks)
  // May bring a key into existence, and so grant a lock: every denyoom command (SET in any form,
  // SETNX, INCR, HSET, COPY, LOCK.ACQUIRE, ...; the table adds it to them), RENAME, RENAMENX,
  // and EVAL/EVALSHA (per script: CommandSpec::may_create). Refused while --restart-delay runs
  // (server/cmdtable/restart_delay.h). deadbolt's own: COMMAND does not list it.
  kMayCreate = 1 << 14,
  // Cheap enough to be timed in runs (server/core/reactor.h, StartTiming): every fast command,
  // and the lock path's commands that Redis calls slow (SET in any form, DEL, UNLINK, GETDEL,
  // DELIFEQ, DELEX). The table adds it. deadbolt's own: COMMAND does not list it.
  kTimedInRuns = 1 << 15,
  // Has subcommands (CLIENT, CONFIG, ...), whose calls INFO commandstats counts apart
  // ("cmdstat_client|list"), as Redis 7. The table adds it; COMMAND does not list it.
  kContainer = 1 << 16,
  // Runs while a Lua script on this reactor is past busy-reply-threshold (Redis's allow_busy:
  // SCRIPT KILL, SHUTDOWN, AUTH, MULTI, ...); anything else gets BUSY then
  // (Reactor::ServeWhileBusy).
  kAllowBusy = 1 << 17,
  // Refused inside MULTI, and the transaction with it (SHUTDOWN), as Redis's no_multi.
  kNoMulti = 1 << 18,
  // A call may name no key at all (EVAL with numkeys 0), as Redis's no_mandatory_keys: COMMAND
  // GETKEYS answers such a call, malformed or not, with the keys it found.
  kNoMandatoryKeys = 1 << 19,
  // Allowed on a slot being imported after ASKING, as Redis's asking (RESTORE-ASKING). Only what
  // COMMAND shows until cluster mode.
  kAsking = 1 << 20,
};

// For commands whose key positions depend on an argument (EVAL's numkeys): sets the first and
// last key index (step 1; first > last for none) and returns true, or returns false when the
// arguments are malformed (the handler then replies the error).
using KeyRangeFn = bool (*)(CmdArgs args, int* first, int* last);

// For a command with one key an option names (GEORADIUS ... STORE key): its index, or 0.
using ExtraKeyFn = int (*)(CmdArgs args);

// For a blocking command: whether this call may wait in the server (LOCK.ACQUIRE with WAIT).
using BlocksFn = bool (*)(CmdArgs args);

// For a kMayCreate command whose calls differ: whether this call may create a key (EVALSHA: only
// when the script is one that acquires a lock).
using MayCreateFn = bool (*)(CmdArgs args);

// For a command that may have effects beyond its keys (a script may publish): whether this call's
// effects are on its keys alone (EVALSHA of a catalogued lock script that publishes nothing), so
// that a pipeline may run it ahead of an earlier command under locks on its keys.
using KeysOnlyFn = bool (*)(CmdArgs args);

struct CommandSpec {
  std::string name;      // lower case; "client|setname" for a subcommand
  int arity = 0;         // Redis convention: N exact, -N at least N (name included)
  uint32_t flags = 0;
  int first_key = 0;  // 0: no keys
  int last_key = 0;   // -1: last argument
  int key_step = 0;
  // A command with keys runs its shard_handler on the shard owning them when they all live on
  // one shard; when they span shards it runs its conn_handler (which fans out atomically). A
  // command may have either or both.
  ShardHandler shard_handler = nullptr;
  ConnHandler conn_handler = nullptr;
  KeyRangeFn key_range = nullptr;
  // An argument inside key_range's range that is not a key (ZUNIONSTORE's numkeys), or 0.
  int key_range_gap = 0;
  // A key beyond first_key..last_key that an option names (GEORADIUS's STORE), found per call.
  ExtraKeyFn extra_key = nullptr;
  // A blocking command (flag kBlocking) has a shard_handler and this. A call for which it says
  // true gets a ShardCtx::block, and if it waits (or runs on another shard) the connection runs
  // none of its later commands until it has replied.
  BlocksFn blocks = nullptr;
  // A kMayCreate command may have this; without it every call may create a key.
  MayCreateFn may_create = nullptr;
  KeysOnlyFn keys_only = nullptr;
  // Redis 7's ACL categories ("@string", "@keyspace", "@write", ...): COMMAND INFO reports
  // them, ACL rules (+@read) select commands by them (server/acl/).
  std::vector<std::string> acl_categories;
  // The command's bit in an ACL user's command bitmap: every command and subcommand has one
  // (CommandTable::AclSpec). Set by the table.
  int acl_id = -1;
  std::vector<CommandSpec> subcommands;  // for COMMAND INFO/DOCS and commandstats
  // Where its calls are counted in ReactorStats::commands (CommandTable::StatsSlot); set by the
  // table, for subcommands too.
  uint32_t stats_slot = 0;

  bool has_keys() const { return first_key > 0 || key_range != nullptr; }
  // Redis's movablekeys: where the keys are depends on the call.
  bool movable_keys() const { return key_range != nullptr || extra_key != nullptr; }
  bool ArityOk(size_t argc) const {
    return arity >= 0 ? argc == static_cast<size_t>(arity) : argc >= static_cast<size_t>(-arity);
  }
  // The key arguments of a call (indexes into args).
  template <typename F>
  void ForEachKey(CmdArgs args, F&& f) const {
    int first = first_key, last = last_key, step = key_step;
    if (key_range) {
      if (!key_range(args, &first, &last)) return;
      step = 1;
    } else if (first_key <= 0) {
      return;
    } else if (last_key < 0) {
      last = static_cast<int>(args.size()) + last_key;
    }
    for (int i = first; i <= last && i < static_cast<int>(args.size()); i += step) {
      if (i != key_range_gap || key_range == nullptr) f(i);
    }
    if (extra_key != nullptr) {
      if (int k = extra_key(args); k > 0) f(k);
    }
  }
};

// Built once by the main thread before the reactors start; read-only afterwards, shared by all.
class CommandTable {
 public:
  // Inline: called for every command, where an out-of-line call and its guard showed up.
  [[gnu::always_inline]] static const CommandTable& Get() {
    static const CommandTable* const table = new CommandTable();
    return *table;
  }
  // Case-insensitive lookup of a top-level command. Runs for every command a client sends, so
  // it neither copies nor lower-cases the name: it hashes the bytes case-folded and compares
  // them with the (lower-case) name of the one candidate the hash points to.
  const CommandSpec* Find(std::string_view name) const;
  // The subcommand of a container command (CLIENT, CONFIG, ...) called `sub` in any case
  // ("client|list" for CLIENT LIST), or null when `parent` has none of that name. Like Redis's
  // lookup, it never echoes the client's bytes: a caller keeps the table's own spec.
  static const CommandSpec* FindSubcommand(const CommandSpec& parent, std::string_view sub);
  // True if `name` is spec's name ignoring ASCII case: what Find compares once its hash has
  // pointed at a candidate. Lets a connection check its previous command first.
  static bool NameMatches(std::string_view name, const CommandSpec& spec) {
    const std::string& lower = spec.name;
    if (name.size() != lower.size()) return false;
    for (size_t i = 0; i < name.size(); i++) {
      char c = name[i];
      if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
      if (c != lower[i]) return false;
    }
    return true;
  }
  // Index of a command in All().
  size_t IndexOf(const CommandSpec* spec) const { return spec - all_.data(); }
  // Where a call is counted in ReactorStats::commands: its subcommand's slot for a container
  // command called with a known subcommand, else its command's.
  static uint32_t StatsSlot(const CommandSpec* spec, CmdArgs args) {
    if (!(spec->flags & kContainer) || args.size() < 2) [[likely]]
      return spec->stats_slot;
    const CommandSpec* sub = FindSubcommand(*spec, args[1]);
    return sub ? sub->stats_slot : spec->stats_slot;
  }
  // Every command and subcommand, by stats slot (INFO commandstats and latencystats).
  const std::vector<const CommandSpec*>& StatsSpecs() const { return stats_specs_; }
  const std::vector<CommandSpec>& All() const { return all_; }

  void Add(CommandSpec spec) { all_.push_back(std::move(spec)); }

  // Every command and subcommand by its acl_id (server/acl/): ids 0..AclCount()-1.
  size_t AclCount() const { return by_acl_id_.size(); }
  const CommandSpec& AclSpec(int id) const { return *by_acl_id_[id]; }
  // The command ("get") or subcommand ("client|setname"), any case; null if none.
  const CommandSpec* FindFullName(std::string_view name) const;

 private:
  CommandTable();
  void Index();
  std::vector<CommandSpec> all_;
  std::vector<const CommandSpec*> stats_specs_;
  // Open addressing over the names of all_ (linear probing, at most a quarter full).
  struct NameSlot {
    uint32_t hash = 0;
    uint32_t index = 0;  // into all_, plus one; 0: empty
  };
  std::vector<NameSlot> by_name_;
  std::vector<const CommandSpec*> by_acl_id_;
  size_t name_mask_ = 0;
};

// Table builders for the command families.
// A command run by a ConnHandler on the connection's reactor; keys (if any) are
// args[first_key..last_key] every key_step (last_key -1: to the end).
CommandSpec ConnCommand(std::string name, int arity, uint32_t flags, ConnHandler h,
                        std::vector<std::string> acl, int first_key = 0, int last_key = 0,
                        int key_step = 0);
// A container command (OBJECT, XGROUP, XINFO) whose subcommands name their key at args[2], run
// by one shard handler that reads args[1]. Each subcommand has its name, arity and flags, and
// `sub_acl` as its categories (HELP's are trimmed by the table, as Redis's); the container
// itself is @slow, as in Redis: ACL checks its subcommands.
struct SubcommandDef {
  const char* name;
  int arity;
  uint32_t flags;
};
CommandSpec KeyContainer(std::string name, uint32_t flags, ShardHandler h,
                         std::vector<std::string> sub_acl,
                         std::initializer_list<SubcommandDef> subs);
// A command with one key, args[1], run by a ShardHandler on the shard that owns it.
CommandSpec Key1(std::string name, int arity, uint32_t flags, ShardHandler h,
                 std::vector<std::string> acl);
// A command whose keys may span shards: `across` coordinates them, `one_shard` runs when every
// key sits on one shard (kMultiKey is added to the flags).
CommandSpec MultiKeyCommand(std::string name, int arity, uint32_t flags, ConnHandler across,
                            ShardHandler one_shard, std::vector<std::string> acl, int first_key,
                            int last_key, int key_step);

// Each command family registers its commands (cmd_*.cc).
void RegisterServerCommands(CommandTable* t);
void RegisterClientCommands(CommandTable* t);  // server/clients/cmd_client.cc
void RegisterAclCommands(CommandTable* t);  // server/commands/cmd_acl.cc
void RegisterStringCommands(CommandTable* t);
void RegisterKeyCommands(CommandTable* t);
void RegisterHashCommands(CommandTable* t);
void RegisterZSetCommands(CommandTable* t);
void RegisterZSetAlgebraCommands(CommandTable* t);  // ZUNION ZINTER ZDIFF (and *STORE), ZINTERCARD
void RegisterListCommands(CommandTable* t);
void RegisterSetCommands(CommandTable* t);
void RegisterBitmapCommands(CommandTable* t);  // server/collections/cmd_bitmap.cc
void RegisterHllCommands(CommandTable* t);     // server/collections/cmd_hll.cc
void RegisterGeoCommands(CommandTable* t);     // server/collections/cmd_geo.cc
void RegisterStreamCommands(CommandTable* t);  // server/streams/cmd_stream.cc
void RegisterStreamGroupCommands(CommandTable* t);  // server/streams/cmd_stream_group.cc
void RegisterSortCommands(CommandTable* t);    // server/collections/cmd_sort.cc
void RegisterMPopCommands(CommandTable* t);    // LMPOP ZMPOP BLMPOP BZMPOP, collections/cmd_mpop.cc
void RegisterLockCommands(CommandTable* t);
void RegisterNativeLockCommands(CommandTable* t);
void RegisterScriptCommands(CommandTable* t);
void RegisterPubSubCommands(CommandTable* t);
void RegisterTransactionCommands(CommandTable* t);
void RegisterPersistenceCommands(CommandTable* t);
// server/ops/: SLOWLOG and LATENCY; MONITOR; OBJECT and MEMORY; DEBUG.
void RegisterCommandCommands(CommandTable* t);  // COMMAND, server/ops/cmd_command.cc
void RegisterSlowlogCommands(CommandTable* t);
void RegisterMonitorCommands(CommandTable* t);
void RegisterObjectCommands(CommandTable* t);  // OBJECT, MEMORY
void RegisterDebugCommands(CommandTable* t);
void RegisterClusterCommands(CommandTable* t);  // server/cluster/cmd_cluster.cc

}  // namespace deadbolt::server

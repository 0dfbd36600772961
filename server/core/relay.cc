// A pipeline's commands travelling along the shards (--pipeline-order sent, the default).
//
// A connection that cannot run a command inline (its key is on another shard, or behind a
// transaction's lock here) gathers it and every single-shard command after it that the same
// read brought in into one Relay, and sends that to the first command's shard. Each shard runs,
// in order, the commands that are its own and passes the rest on to the shard of the next one;
// the last sends the replies home in one message. A shard switch inside a pipeline therefore
// costs one message one way, not a round trip, and a pipeline's effects still happen in the
// order it was sent: a command runs only after every earlier one has run.
//
// The Relay owns its bytes (arguments and replies) and moves from reactor to reactor; nothing
// in it points into a shard. Only `conn` points back, and it is dereferenced on `origin` only.

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/cmdtable/journal_health.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/txn/lock_table.h"

namespace deadbolt::server {

struct Relay {
  struct Cmd {
    const CommandSpec* spec;
    uint32_t argc;
    int shard;
  };
  std::string bytes;           // every argument of every command, back to back
  std::vector<uint32_t> lens;  // the length of each argument
  std::vector<Cmd> cmds;
  size_t next = 0;       // the first command not yet run
  size_t next_arg = 0;   // its first argument in `lens`
  size_t next_byte = 0;  // its first byte in `bytes`
  std::string replies;   // the replies of the commands run so far, in order
  std::vector<SlowlogEntry> slow;  // slow calls, logged at home with the client's address
  size_t segment = 0;    // where the replies written by the shard that sent it here begin
  bool resumed = false;  // `next` waited in the LockTable and may now run
  // client-output-buffer-limit's hard limit for the client (0: none): once the replies reach
  // it, the rest is not run and the relay goes home, where the client is closed for it.
  size_t max_replies = 0;
  int origin = 0;
  int db = 0;
  int resp = 2;
  uint64_t seq = 0;
  uint64_t client_id = 0;
  Connection* conn = nullptr;  // dereferenced only on `origin`
  std::shared_ptr<const acl::User> acl_user;  // a restricted caller's, for scripts

  void Add(const CommandSpec* spec, CmdArgs args, int shard) {
    for (std::string_view a : args) {
      bytes.append(a);
      lens.push_back(static_cast<uint32_t>(a.size()));
    }
    cmds.push_back(Cmd{spec, static_cast<uint32_t>(args.size()), shard});
  }
};

void RelayDeleter::operator()(Relay* r) const { delete r; }

namespace {

void RunRelay(std::unique_ptr<Relay> r);

absl::AnyInvocable<void()> Carry(std::unique_ptr<Relay> r) {
  return [r = std::move(r)]() mutable { RunRelay(std::move(r)); };
}

// Relays that came home, kept for the next ones of this reactor with their buffers' capacity
// (a relay is made and comes home on the same reactor): a remote command then costs no
// allocation for its arguments.
thread_local std::vector<std::unique_ptr<Relay>> spare;
constexpr size_t kMaxSpare = 64;
constexpr size_t kMaxSpareBytes = 16 * 1024;  // larger buffers go back to the allocator

std::unique_ptr<Relay> NewRelay() {
  if (spare.empty()) return std::make_unique<Relay>();
  std::unique_ptr<Relay> r = std::move(spare.back());
  spare.pop_back();
  return r;
}

void Recycle(std::unique_ptr<Relay> r) {
  if (spare.size() >= kMaxSpare || r->bytes.capacity() > kMaxSpareBytes ||
      r->cmds.capacity() > kMaxSpareBytes / 8) {
    return;
  }
  r->bytes.clear();
  r->lens.clear();
  r->cmds.clear();
  r->replies.clear();
  r->slow.clear();
  r->next = r->next_arg = r->next_byte = r->segment = 0;
  r->resumed = false;
  r->max_replies = 0;
  spare.push_back(std::move(r));
}

// On the origin: the relay is done; its replies go to the connection's slot.
void Home(std::unique_ptr<Relay> r) {
  if (const std::string* e = Reactor::FailedReplyError()) {
    // The last shard's part waited for a journal batch that could not be written.
    r->replies.replace(r->segment, std::string::npos,
                       FailHeldReplies(std::string_view(r->replies).substr(r->segment), *e));
  }
  Connection* c = r->conn;
  for (SlowlogEntry& e : r->slow) [[unlikely]] Reactor::Current()->AddSlow(std::move(e), c);
  uint64_t seq = r->seq;
  std::string replies = std::move(r->replies);
  Recycle(std::move(r));
  c->OnRelayDone(seq, std::move(replies));
}

void RunRelay(std::unique_ptr<Relay> r) {
  Reactor* re = Reactor::Current();
  const int me = re->id();
  if (const std::string* e = Reactor::FailedReplyError(); e && r->segment < r->replies.size()) {
    // The shard that sent it here could not put its part in its journal: that part's replies
    // become errors (its later commands still run, as a client's next command would).
    r->replies.replace(r->segment, std::string::npos,
                       FailHeldReplies(std::string_view(r->replies).substr(r->segment), *e));
  }
  r->segment = r->replies.size();
  re->StartTiming();
  thread_local std::vector<std::string_view> views;
  while (r->next < r->cmds.size()) {
    const Relay::Cmd& cmd = r->cmds[r->next];
    if (cmd.shard != me) {
      re->EndTiming(nullptr);
      re->Send(cmd.shard, Carry(std::move(r)));
      return;
    }
    views.clear();
    size_t off = r->next_byte;
    for (uint32_t i = 0; i < cmd.argc; i++) {
      uint32_t n = r->lens[r->next_arg + i];
      views.emplace_back(r->bytes.data() + off, n);
      off += n;
    }
    CmdArgs a(views.data(), views.size());
    LockTable& locks = re->locks();
    if (!r->resumed && MustWait(cmd.spec, a, r->db, r->client_id, locks)) {
      // Behind a transaction's lock: the rest of the pipeline waits with it.
      std::vector<std::string> names = LockNames(cmd.spec, a, r->db);
      uint64_t owner = r->client_id;
      r->resumed = true;
      re->EndTiming(nullptr);
      locks.Park(std::move(names), owner, Carry(std::move(r)));
      return;
    }
    r->resumed = false;
    CommandStats& cs = re->stats().commands[cmd.spec->stats_slot];
    cs.calls++;
    protocol::ReplyBuilder rb(&r->replies, r->resp);
    ShardCtx ctx{re->shard(), re->shard().db(r->db), r->db, re->now_ms(), re->config(), rb};
    ctx.acl_user = r->acl_user.get();
    re->BeginCall(cmd.spec);
    cmd.spec->shard_handler(a, ctx);
    if (!re->JoinRun(cs, cmd.spec) && re->ChargeCall(cs, re->Lap())) [[unlikely]] {
      if (auto e = re->NoteSlowCall(cmd.spec, a, re->last_lap_ticks())) {
        r->slow.push_back(std::move(*e));
      }
    }
    r->next++;
    r->next_arg += cmd.argc;
    r->next_byte = off;
    if (r->max_replies && r->replies.size() >= r->max_replies) break;  // a client not reading
  }
  re->EndTiming(nullptr);
  if (r->origin == me) {
    Home(std::move(r));
  } else {
    int origin = r->origin;
    re->Send(origin, [r = std::move(r)]() mutable { Home(std::move(r)); });
  }
}

}  // namespace

void Connection::RelayAdd(const CommandSpec* spec, CmdArgs args, int shard) {
  if (!relay_) {
    const uint64_t seq = ReserveSlot();  // before relay_ is set: ReserveSlot would send it
    relay_.reset(NewRelay().release());
    relay_->seq = seq;
    relay_->origin = reactor_->id();
    relay_->db = db_index_;
    relay_->resp = resp_;
    relay_->client_id = id_;
    relay_->conn = this;
    relay_->acl_user = AclSnapshot();
    const OutputBufferLimits& limits = reactor_->config().client_output_buffer_limit;
    relay_->max_replies =
        static_cast<size_t>(subscribed() ? limits.pubsub.hard : limits.normal.hard);
    Ref();
    inflight_++;
    inflight_shard_ = kRelayShard;
  }
  relay_->Add(spec, args, shard);
}

bool Connection::RelayFull() const {
  return relay_ && (relay_->cmds.size() >= kMaxRelayCommands || relay_->bytes.size() >= kMaxRelayBytes);
}

void Connection::SendRelay() {
  if (!relay_) return;
  std::unique_ptr<Relay> r(relay_.release());
  int first = r->cmds.front().shard;
  reactor_->Send(first, Carry(std::move(r)));
}

void Connection::OnRelayDone(uint64_t seq, std::string replies) {
  CompleteSlot(seq, std::move(replies));
  OnForwardDone();
  Unref();
}

}  // namespace deadbolt::server

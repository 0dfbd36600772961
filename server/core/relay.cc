// A pipeline's commands travelling along the shards (--pipeline-order sent, the default).
//
// A connection that cannot run a command inline (its key is on another shard, or behind a
// transaction's lock here) gathers it and every single-shard command after it that the same
// read brought in into one Relay, and sends it on its way; the last shard sends the replies home
// in one message. A pipeline's effects still happen in the order it was sent, as others see
// them: each command sees every earlier one, and no client sees a command's effect before that
// of an earlier one.
//
// Two ways to travel:
//  * Ascending (the usual): the relay visits each of its shards once, in ascending shard order,
//    and there runs all the commands that are that shard's. A command may so run before an
//    earlier command of the pipeline that waits on a higher shard ("ahead"). Its keys are then
//    locked in that shard's LockTable (all the shard's ahead commands' keys at once, or the relay
//    waits for them, as a transaction does) before it runs, and stay locked until the relay is
//    home, when every earlier command has run: whoever wants them waits, so nobody sees the
//    command's effect before the earlier one's. Over two shards a pipeline of random keys costs
//    two or three messages instead of one per shard switch (about half its commands).
//  * In order: the relay goes to the shard of its next command each time, as a client's own
//    round trips would. Taken when it needs fewer messages (a pipeline over many shards, each
//    visited about once anyway: AscendingPays), when a command may have effects beyond its keys
//    (scripts publish; keyless, pub/sub and admin commands).
//
// Under appendfsync always an ascending relay that may write is `tagged`: on each shard its
// commands run under locks on their keys and are journalled as that shard's part of one
// transaction (Journal::EnterTx, the relay's lock id as its id), so that a crash keeps the whole
// pipeline or none of it though each shard has its own journal. It leaves each shard at once;
// the last stamps commit_ns and writes its part, and has every other part written at once too
// (their fsyncs overlap); home waits for every part to be on disk, then the locks go
// (StartCommit).
// Around hot keys an origin sends its relays in order for a while (TaggedBackoff).
// docs/ARCHITECTURE.md, *Under `appendfsync always`*, says why and what it costs.
//
// Why ascending cannot deadlock: the relay takes its locks on a shard all at once, and waits on a
// shard only while it holds locks on lower shards alone, as a transaction does (lock_table.h).
// Whoever holds what it waits for has passed that shard and is on a higher one, or running.
//
// The Relay owns its bytes (arguments and replies) and moves from reactor to reactor; nothing
// in it points into a shard. Only `conn` points back, and it is dereferenced on `origin` only.
//
// Laid out by shard: each shard's commands are packed together (a command's specification,
// argument lengths and bytes in one record), with a byte per command saying whose it is. A
// shard so reads only its own commands' lines, not every command's, and the origin takes back
// only those when it writes the next relay: a line written on one core and read on the other
// costs both (bench/PROFILE.md, session 20). Replies are written in the order the commands ran,
// with each one's length; home puts them in pipeline order from the per-command shard bytes.
//
// Also here: a relay's keys asked for ahead of its lookups on a shard (PrefetchKeys; the
// connection's own look-ahead is Connection::PrefetchPipeline, in connection_exec.cc).

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/base/config.h"
#include "server/base/error_strings.h"
#include "server/cmdtable/journal_health.h"
#include "server/core/connection.h"
#include "server/core/journal.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/txn/lock_table.h"
#include "server/txn/relay_route.h"
#include "server/txn/tagged_backoff.h"

namespace deadbolt::server {

// A growing run of bytes, written a whole record at a time (neither zero-filled nor terminated,
// as a std::string would be on each append).
class RecBuffer {
 public:
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return cap_; }
  void clear() { size_ = 0; }
  // Room for `n` more bytes at the end, to be written by the caller.
  char* Extend(size_t n) {
    if (size_ + n > cap_) Grow(size_ + n);
    char* w = data_.get() + size_;
    size_ += n;
    return w;
  }

 private:
  void Grow(size_t need) {
    size_t cap = std::max<size_t>({need, 2 * cap_, 256});
    std::unique_ptr<char[]> d(new char[cap]);
    if (size_ > 0) std::memcpy(d.get(), data_.get(), size_);
    data_ = std::move(d);
    cap_ = cap;
  }
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t cap_ = 0;
};

struct Relay {
  // One command in its shard's part: this header, the length of each argument (uint32_t), the
  // arguments' bytes back to back, then padding to 8. One run of lines per command.
  struct Rec {
    const CommandSpec* spec;
    uint32_t argc;
    uint32_t size;  // the whole record's bytes, header and padding included
    uint32_t idx;   // its place in the pipeline (in `order`)
    uint32_t flags;  // kRemember: a tracking client's read whose keys are remembered
  };
  // One shard's commands, packed in pipeline order: the shard that runs them reads these lines
  // and no other shard's (a line written on one core and read on another is a miss for each,
  // and the origin takes it back when it writes the next relay).
  struct Part {
    int shard = 0;
    uint32_t count = 0;  // commands
    uint32_t pos = 0;    // the record of its first command not yet run (a byte offset)
    uint32_t ran = 0;    // its commands run
    RecBuffer recs;
  };
  // Keys locked on one shard for commands run ahead, released when the relay is home. The list
  // goes back to that shard with the unlock, a pointer's size (the message's closure then fits
  // in its own storage), and is kept there for the next relay's names (TakeNames).
  using Names = std::unique_ptr<std::vector<std::string>>;
  struct Held {
    int shard;
    Names names;
    uint32_t last = 0;  // the latest command (its place) run ahead under these locks
  };
  // Written on the origin only: shards read them.
  std::vector<uint8_t> order;  // each command's shard, in pipeline order (--threads <= 256)
  std::vector<Part> parts;     // [0, used): sorted by shard once sent; the rest kept for reuse
  size_t used = 0;
  size_t last = 0;       // the part the last command joined (a pipeline's runs are often long)
  size_t rec_bytes = 0;  // over all parts (RelayFull)
  // The first command not yet run. Ascending, the commands of the shards below the current one
  // have all run (each shard runs all of its own), so nothing else records what ran: the
  // commands ran in ascending shard order, in pipeline order within a shard (unless `mixed`,
  // where `done` records it).
  size_t next = 0;
  std::string replies;  // the replies of the commands run so far, in the order they ran
  // Unless in order from the start: each reply's length and its command's place, in the order
  // they ran (home puts them in pipeline order).
  std::vector<uint32_t> reply_lens;
  std::vector<uint16_t> reply_idx;  // (kMaxRelayCommands fits)
  std::vector<SlowlogEntry> slow;  // slow calls, logged at home with the client's address
  size_t segment = 0;              // where the replies written by the shard that sent it here begin
  size_t segment_reply = 0;        // and which of reply_lens is the first of them
  bool resumed = false;            // `next` waited in the LockTable and may now run
  bool in_order = false;           // visits the shard of each next command (see above)
  bool discard = false;            // past the client's output limit: replies dropped
  bool may_pause = false;          // its slot is the connection's first (PauseHere)
  bool paused = false;             // home early, to go on later (PauseHere)
  bool ahead = false;              // some command ran ahead: replies are not in pipeline order
  // A shard's commands stopped running ahead at the hold (StopAhead): it visits the shard of
  // each next command not yet run since, skipping those done.
  bool mixed = false;
  std::vector<uint8_t> done;       // mixed: which commands have run
  // appendfsync always, ascending: its commands are one transaction in the journal (see the
  // top of this file).
  bool tagged = false;
  bool writes = false;                  // a command may write (kWrite)
  bool tx_changed = false;              // tagged: a command run under its locks changed a key
  bool waited = false;                  // tagged: waited for another relay's lock (TaggedBackoff)
  uint32_t acks_due = 0;  // tagged: acks home waits for, one per part not written there or last
  // Tagged, its origin a participant: the origin's journal batch with its part there (home
  // waits for it: see Home).
  bool home_part = false;
  uint64_t home_batch = 0;
  int64_t commit_ns = 0;
  std::vector<uint32_t> participants;  // tagged: the shards with a part, ascending
  std::string fail_error;  // tagged: a part's journal write failed: every reply becomes this
  size_t delivered = 0;            // the commands before it had their replies sent home (PauseHere)
  size_t kept = 0;                 // bytes of replies (run ahead) that stayed when it paused
  uint64_t lock_id = 0;            // the LockTable owner of its locks (not a transaction's id)
  std::vector<Held> held;          // locks for commands run ahead of one not run yet
  relay_route::Tally tally;        // the messages of each route, counted as commands join
  // client-output-buffer-limit's hard limit for the client (0: none): once the replies reach
  // it, the relay goes home, where the client is closed for it (OverReplyLimit).
  size_t max_replies = 0;
  // The client's socket, if the last shard may send the replies to it (SendRepliesHere); -1 if
  // they go home first. And how many of `replies` it sent.
  int reply_fd = -1;
  size_t written = 0;
  struct SendCall : Reactor::IoCall {
    Relay* relay = nullptr;
  } send_call;  // that send, in flight in the last shard's ring
  int origin = 0;
  int db = 0;
  int resp = 2;
  uint64_t seq = 0;
  uint64_t client_id = 0;
  // CLIENT TRACKING: the client when it tracks (0 otherwise), for its commands' ShardCtx.
  uint64_t track_client = 0;
  Connection* conn = nullptr;                 // dereferenced only on `origin`
  std::shared_ptr<const acl::User> acl_user;  // a restricted caller's, for scripts

  size_t size() const { return order.size(); }

  Part* PartOf(int shard) {
    for (size_t k = 0; k < used; k++) {
      if (parts[k].shard == shard) return &parts[k];
    }
    return nullptr;
  }

  static constexpr uint32_t kRemember = 1;

  void Add(const CommandSpec* spec, CmdArgs args, int shard, uint32_t flags) {
    if (last >= used || parts[last].shard != shard) {
      last = 0;
      while (last < used && parts[last].shard != shard) last++;
      if (last == used) {
        if (used == parts.size()) parts.emplace_back();
        parts[used].shard = shard;
        used++;
      }
    }
    Part& p = parts[last];
    size_t arg_bytes = 0;
    for (std::string_view a : args) arg_bytes += a.size();
    const size_t size = (sizeof(Rec) + args.size() * sizeof(uint32_t) + arg_bytes + 7) & ~size_t{7};
    // (the buffers keep their capacity from relay to relay)
    char* w = p.recs.Extend(size);
    // The header's fields written one by one: a Rec built on the stack and copied would be
    // read back before its own stores had left (a store-forwarding stall on each command).
    const uint32_t argc = static_cast<uint32_t>(args.size());
    const uint32_t rec_size = static_cast<uint32_t>(size);
    const uint32_t idx = static_cast<uint32_t>(order.size());
    std::memcpy(w + offsetof(Rec, spec), &spec, sizeof(spec));
    std::memcpy(w + offsetof(Rec, argc), &argc, sizeof(argc));
    std::memcpy(w + offsetof(Rec, size), &rec_size, sizeof(rec_size));
    std::memcpy(w + offsetof(Rec, idx), &idx, sizeof(idx));
    std::memcpy(w + offsetof(Rec, flags), &flags, sizeof(flags));
    w += sizeof(Rec);
    for (std::string_view a : args) {
      uint32_t n = static_cast<uint32_t>(a.size());
      std::memcpy(w, &n, sizeof(n));
      w += sizeof(n);
    }
    for (std::string_view a : args) {
      std::memcpy(w, a.data(), a.size());
      w += a.size();
    }
    p.count++;
    rec_bytes += size;
    order.push_back(static_cast<uint8_t>(shard));
    tally.Add(shard);
  }
};

void RelayDeleter::operator()(Relay* r) const { delete r; }

namespace {

void RunRelay(std::unique_ptr<Relay> r, bool direct);

// A relay's lock id has this bit; a transaction's does not.
constexpr uint64_t kRelayLockBit = uint64_t{1} << 63;

thread_local TaggedBackoff tagged_backoff;  // (appendfsync always)

// What RunRelay reads first on shard `to`, and Home at home: lines the sender wrote.
TaskHints ToShard(Relay& r, int to) {
  TaskHints h;
  const Relay::Part* p = r.PartOf(to);
  h.spans = {{{&r, sizeof(Relay)},
              {r.parts.data(), r.used * sizeof(Relay::Part)},
              {r.order.data(), r.order.size()},
              {p ? p->recs.data() : nullptr, p ? p->recs.size() - p->pos : 0}}};
  if (p) h.spans[3].p = p->recs.data() + p->pos;
  return h;
}
TaskHints ToHome(const Relay& r) {
  TaskHints h;
  h.spans = {{{&r, sizeof(Relay)},
              {r.replies.data(), r.replies.size()},
              {r.reply_lens.data(), r.reply_lens.size() * sizeof(uint32_t)}}};
  return h;
}

absl::AnyInvocable<void()> Carry(std::unique_ptr<Relay> r) {
  return [r = std::move(r)]() mutable { RunRelay(std::move(r), false); };
}

// Whether a command may run before an earlier command of its pipeline that waits on another
// shard, its keys locked until that one has run: its effects are on its keys alone. Not a
// script (it may publish) unless the call says its effects are on its keys (a catalogued lock
// script: CommandSpec::keys_only) and it has some, a command without keys or with computed key
// positions, a pub/sub or admin command. (A call that blocks never joins a relay.)
bool CanRunAhead(const CommandSpec* spec, CmdArgs args) {
  if (spec->keys_only != nullptr) {
    bool any = false;
    spec->ForEachKey(args, [&](int) { any = true; });
    return any && spec->keys_only(args);
  }
  return spec->first_key > 0 && !spec->movable_keys() && !(spec->flags & (kPubSub | kAdmin));
}

// Relays that came home, kept for the next ones of this reactor with their buffers' capacity
// (a relay is made and comes home on the same reactor): a remote command then costs no
// allocation for its arguments.
thread_local std::vector<std::unique_ptr<Relay>> spare;
constexpr size_t kMaxSpare = 64;
constexpr size_t kMaxSpareBytes = 16 * 1024;  // larger buffers go back to the allocator
thread_local uint64_t relay_locks_made = 0;
thread_local std::vector<Relay::Names> spare_names;  // name lists back from their unlocks

Relay::Names TakeNames() {
  if (spare_names.empty()) return std::make_unique<std::vector<std::string>>();
  Relay::Names n = std::move(spare_names.back());
  spare_names.pop_back();
  return n;
}

void GiveNames(Relay::Names n) {
  if (spare_names.size() >= kMaxSpare || n->capacity() > kMaxSpareBytes / sizeof(std::string)) {
    return;
  }
  n->clear();
  spare_names.push_back(std::move(n));
}

std::unique_ptr<Relay> NewRelay() {
  if (spare.empty()) return std::make_unique<Relay>();
  std::unique_ptr<Relay> r = std::move(spare.back());
  spare.pop_back();
  // A shard read these on the relay's last trip; the commands to come are written into them.
  PrefetchLines<true>(r->order.data(), r->order.capacity());
  for (const Relay::Part& p : r->parts) PrefetchLines<true>(p.recs.data(), p.recs.capacity());
  return r;
}

void Recycle(std::unique_ptr<Relay> r) {
  size_t rec_capacity = 0;
  for (const Relay::Part& p : r->parts) rec_capacity += p.recs.capacity();
  if (spare.size() >= kMaxSpare || rec_capacity > kMaxSpareBytes ||
      r->order.capacity() > kMaxSpareBytes / 8) {
    return;
  }
  if (r->replies.capacity() > kMaxSpareBytes) std::string().swap(r->replies);
  for (size_t k = 0; k < r->used; k++) {
    Relay::Part& p = r->parts[k];
    p.recs.clear();
    p.count = p.pos = p.ran = 0;
  }
  r->used = r->last = r->rec_bytes = 0;
  r->order.clear();
  r->replies.clear();
  r->reply_lens.clear();
  r->slow.clear();
  r->held.clear();
  r->next = r->segment = r->segment_reply = 0;
  r->resumed = r->in_order = r->discard = r->may_pause = r->paused = r->ahead = r->mixed = false;
  r->done.clear();
  r->tagged = r->writes = r->tx_changed = r->waited = false;
  r->commit_ns = 0;
  r->acks_due = 0;
  r->home_part = false;
  r->home_batch = 0;
  r->participants.clear();
  r->fail_error.clear();
  r->reply_idx.clear();
  r->delivered = r->kept = 0;
  r->lock_id = 0;
  r->max_replies = 0;
  r->reply_fd = -1;
  r->written = 0;
  spare.push_back(std::move(r));
}

// The replies written from `segment` on, by a shard whose journal could not take its part,
// become errors, one for each (ascending, each with its length).
void FailSegment(Relay& r, const std::string& error) {
  if (r.segment >= r.replies.size()) return;
  if (r.in_order && !r.mixed) {
    r.replies.replace(r.segment, std::string::npos,
                      FailHeldReplies(std::string_view(r.replies).substr(r.segment), error));
    return;
  }
  std::string tail;
  size_t at = r.segment;
  for (size_t i = r.segment_reply; i < r.reply_lens.size(); i++) {
    std::string one =
        FailHeldReplies(std::string_view(r.replies).substr(at, r.reply_lens[i]), error);
    at += r.reply_lens[i];
    r.reply_lens[i] = static_cast<uint32_t>(one.size());
    tail += one;
  }
  r.replies.replace(r.segment, std::string::npos, tail);
}

// Replies written in the order the commands ran, put in pipeline order: those of the commands
// before `end` go to the front of `replies`, in pipeline order; the others (commands run ahead of
// one not run yet: PauseHere) stay after them, in the order they ran, with their lengths and
// places. Returns the front's size. Built in buffers kept for the next time, then swapped with
// the relay's: none allocates once all have grown. A command not run (the relay stopped at the
// client's output limit) has no reply.
size_t ToPipelineOrder(Relay& r, size_t end) {
  constexpr uint64_t kNone = ~uint64_t{0};
  thread_local std::vector<uint64_t> at;  // by place from `delivered`: offset << 32 | length
  thread_local std::string ordered;
  thread_local std::vector<uint32_t> kept_lens;
  thread_local std::vector<uint16_t> kept_idx;
  at.assign(end - r.delivered, kNone);
  kept_lens.clear();
  kept_idx.clear();
  uint64_t off = 0;
  for (size_t k = 0; k < r.reply_lens.size(); k++) {
    const uint32_t len = r.reply_lens[k];
    const size_t i = r.reply_idx[k];
    if (i < end) {
      at[i - r.delivered] = off << 32 | len;
    } else {
      kept_lens.push_back(len);
      kept_idx.push_back(r.reply_idx[k]);
    }
    off += len;
  }
  ordered.clear();
  for (uint64_t a : at) {
    if (a != kNone) ordered.append(r.replies, a >> 32, a & 0xffffffff);
  }
  const size_t front = ordered.size();
  if (!kept_lens.empty()) [[unlikely]] {
    off = 0;
    size_t j = 0;
    for (size_t k = 0; k < r.reply_lens.size(); k++) {
      if (j < kept_idx.size() && r.reply_idx[k] == kept_idx[j]) {
        ordered.append(r.replies, off, r.reply_lens[k]);
        j++;
      }
      off += r.reply_lens[k];
    }
  }
  r.replies.swap(ordered);
  r.reply_lens.swap(kept_lens);
  r.reply_idx.swap(kept_idx);
  if (ordered.capacity() > kMaxSpareBytes) std::string().swap(ordered);
  return front;
}

// Releases the locks of `h` (on its shard, from here). A tagged relay's part there is settled
// with them: a rewrite's scan may pass its keys (it renames its file only once what it wrote is
// on disk, the part included). `parts_on_disk`: the relay came home in a message that waited
// for the last of its parts, so the unlocks need not wait for this journal; otherwise its part
// here may not be on disk yet, and a reader of its keys elsewhere must not see them before.
// (Here, a reader's reply waits for this journal anyway.)
void Release(const Relay& r, Relay::Held& h, Reactor* re, bool parts_on_disk) {
  const bool settle = r.tagged && r.tx_changed;
  if (h.shard == re->id()) {
    re->locks().Unlock(r.lock_id, *h.names, false);
    GiveNames(std::move(h.names));
    if (settle) re->journal()->SettleTx(r.lock_id);
  } else {
    auto unlock = [id = r.lock_id, names = std::move(h.names), settle]() mutable {
      Reactor* at = Reactor::Current();
      at->locks().Unlock(id, *names, false);
      GiveNames(std::move(names));
      if (settle) at->journal()->SettleTx(id);
    };
    if (r.tagged && parts_on_disk) {
      // This journal has nothing to do with it, and the client's next pipeline would wait for
      // these keys.
      re->SendUnheld(h.shard, std::move(unlock));
    } else {
      re->Send(h.shard, std::move(unlock));
    }
  }
}

// On the origin: the relay is done. Its locks go, then its replies go to the connection's slot.
// `by_message`: it came from its last shard (not the origin), which sent it once its writes
// were in the journal, as every shard before sent it on: its replies need no hold here.
void Home(std::unique_ptr<Relay> r, bool by_message) {
  PrefetchLines<false>(r.get(), sizeof(Relay));
  if (const std::string* e = Reactor::FailedReplyError()) {
    // The last shard's part waited for a journal batch that could not be written.
    if (r->tagged && !r->participants.empty() && r->fail_error.empty()) r->fail_error = *e;
    if (r->fail_error.empty()) FailSegment(*r, *e);
  }
  if (r->acks_due > 0) {  // tagged: its other parts' acks (StartCommit)
    Connection* c = r->conn;
    if (!c->TaggedAcksIn(r, by_message)) return;  // c keeps it until the last ack
    std::string e = c->TakeTaggedAckError();
    if (!e.empty() && r->fail_error.empty()) r->fail_error = std::move(e);
    r->acks_due = 0;
  }
  if (r->home_part) {
    // Tagged, with a part here: every other part is on disk (the acks); once this one is too,
    // the replies and the unlocks leave at once, as for a relay home by message. (Held for this
    // journal instead, they would wait for its newest batch, and a client's next pipeline could
    // overtake the unlocks.)
    const uint64_t batch = r->home_batch;  // (0: nothing here waits for the disk)
    r->home_part = false;
    Journal* j = Reactor::Current()->journal();
    if (batch != 0 && j->durable_batch() < batch) {
      j->WhenDurable(batch, [r = std::move(r)](bool failed) mutable {
        if (failed && r->fail_error.empty()) {
          Journal* jf = Reactor::Current()->journal();
          r->fail_error = errors::AofWriteError(jf->error() ? jf->error() : EIO);
        }
        Reactor* here = Reactor::Current();
        here->Send(here->id(), [r = std::move(r)]() mutable { Home(std::move(r), true); });
      });
      return;
    }
    by_message = true;
  }
  if (!r->fail_error.empty()) [[unlikely]] {
    // A part of a tagged relay: whether its commands are on disk is unknown.
    r->segment = r->segment_reply = 0;
    FailSegment(*r, r->fail_error);
  }
  PrefetchLines<false>(r->replies.data(), r->replies.size());  // written on the shards
  PrefetchLines<false>(r->reply_lens.data(), r->reply_lens.size() * sizeof(uint32_t));
  Reactor* re = Reactor::Current();
  Connection* c = r->conn;
  for (SlowlogEntry& e : r->slow) [[unlikely]] re->AddSlow(std::move(e), c);
  r->slow.clear();
  if (r->paused) [[unlikely]] {
    // Home early (PauseHere), with no locks: the replies of the commands before `next` go out.
    const size_t front = r->ahead ? ToPipelineOrder(*r, r->next) : r->replies.size();
    if (!r->ahead) {
      r->reply_lens.clear();
      r->reply_idx.clear();
    }
    c->OnRelayPaused(std::unique_ptr<Relay, RelayDeleter>(r.release()), front);
    return;
  }
  for (Relay::Held& h : r->held) Release(*r, h, re, by_message);
  if (r->tagged) tagged_backoff.Note(r->waited, re->now_ms());
  // Commands ran ahead exactly when their keys were locked: replies go back in pipeline order.
  if (r->ahead) ToPipelineOrder(*r, r->order.size());
  // The relay keeps its replies buffer (and its capacity, for the next relay's replies on the
  // shards): the connection copies them out before the relay is recycled, and only then runs
  // what waited for them (perhaps making its next relay, out of the spare ones).
  c->OnRelayReplies(r->seq, std::string_view(r->replies).substr(r->written), by_message);
  Recycle(std::move(r));
  c->OnRelayDone();
}

// A command of a part, read out of its record: its specification and arguments (views into the
// record), the record's size and the command's place.
struct RecArgs {
  const CommandSpec* spec;
  CmdArgs args;
  uint32_t size;
  uint32_t idx;
  uint32_t flags;
};

// The commands of a part not run yet, each read out of its record once for a visit (asking for
// their keys, naming their locks and running them all use them), as far as the visit needs.
// Each header field is read from the record itself: a copy of the header on the stack, read back
// at once, would stall on its own stores.
class PartView {
 public:
  void Reset(const Relay::Part& p) {
    part_ = &p;
    read_to_ = p.pos;
    cmds_.clear();
    views_.clear();
  }
  // Whether the part has an `i`th command from its `pos` at Reset.
  bool Has(size_t i) {
    while (cmds_.size() <= i && read_to_ < part_->recs.size()) ReadOne();
    return i < cmds_.size();
  }
  // (Its arguments are views into the record, valid until the next Has.)
  RecArgs Get(size_t i) const {
    const Cmd& c = cmds_[i];
    return RecArgs{c.spec, CmdArgs(views_.data() + c.first, c.argc), c.size, c.idx, c.flags};
  }

 private:
  struct Cmd {
    const CommandSpec* spec;
    uint32_t argc, first, size, idx, flags;
  };
  void ReadOne() {
    const char* rec = part_->recs.data() + read_to_;
    Cmd c;
    std::memcpy(&c.spec, rec + offsetof(Relay::Rec, spec), sizeof(c.spec));
    std::memcpy(&c.argc, rec + offsetof(Relay::Rec, argc), sizeof(c.argc));
    std::memcpy(&c.size, rec + offsetof(Relay::Rec, size), sizeof(c.size));
    std::memcpy(&c.idx, rec + offsetof(Relay::Rec, idx), sizeof(c.idx));
    std::memcpy(&c.flags, rec + offsetof(Relay::Rec, flags), sizeof(c.flags));
    c.first = static_cast<uint32_t>(views_.size());
    const char* lens = rec + sizeof(Relay::Rec);
    const char* bytes = lens + c.argc * sizeof(uint32_t);
    for (uint32_t k = 0; k < c.argc; k++) {
      uint32_t n;
      std::memcpy(&n, lens + k * sizeof(uint32_t), sizeof(n));
      views_.emplace_back(bytes, n);
      bytes += n;
    }
    cmds_.push_back(c);
    read_to_ += c.size;
  }
  const Relay::Part* part_ = nullptr;
  size_t read_to_ = 0;
  std::vector<Cmd> cmds_;
  std::vector<std::string_view> views_;
};

// One PartView for each RunRelay on the stack: releasing locks may run another relay from inside
// one (LockTable::Unlock runs what waited for them).
class PartViewScope {
 public:
  PartViewScope() {
    if (depth_ == pool_.size()) pool_.push_back(std::make_unique<PartView>());
    view_ = pool_[depth_++].get();
  }
  ~PartViewScope() { depth_--; }
  PartView& operator*() { return *view_; }

 private:
  static thread_local std::vector<std::unique_ptr<PartView>> pool_;
  static thread_local size_t depth_;
  PartView* view_;
};
thread_local std::vector<std::unique_ptr<PartView>> PartViewScope::pool_;
thread_local size_t PartViewScope::depth_ = 0;

// Runs the command of `p` at its `pos` here, its reply appended to the relay's replies, and
// moves `pos` past it.
void RunOne(Relay& r, Relay::Part& p, const RecArgs& c) {
  Reactor* re = Reactor::Current();
  CommandStats& cs = re->stats().commands[c.spec->stats_slot];
  cs.calls++;
  const size_t start = r.replies.size();
  protocol::ReplyBuilder rb(&r.replies, r.resp);
  ShardCtx ctx{re->shard(), re->shard().db(r.db), r.db, re->now_ms(), re->config(), rb};
  ctx.acl_user = r.acl_user.get();
  if (r.track_client != 0) [[unlikely]] {
    ctx.track = {r.track_client, r.origin, (c.flags & Relay::kRemember) != 0};
  }
  re->BeginCall(c.spec);
  RunShardHandler(c.spec, c.args, ctx);
  if (r.discard) [[unlikely]]
    r.replies.resize(start);  // a client closed at its limit
  if (!r.in_order || r.mixed) {
    r.reply_lens.push_back(static_cast<uint32_t>(r.replies.size() - start));
    r.reply_idx.push_back(static_cast<uint16_t>(c.idx));
    if (r.mixed) r.done[c.idx] = 1;
  }
  p.pos += c.size;
  p.ran++;
  if (!re->JoinRun(cs, c.spec) && re->ChargeCall(cs, re->Lap())) [[unlikely]] {
    if (auto e = re->NoteSlowCall(c.spec, c.args, re->last_lap_ticks())) {
      r.slow.push_back(std::move(*e));
    }
  }
}

// Asks for the keyspace lines the next commands to run here will look up: their lookups then
// take their cache misses together rather than one by one. At most kMaxKeys, so that a relay
// that waits again and again before its commands does not ask for the same lines each time.
void PrefetchKeys(const Relay& r, PartView& v) {
  constexpr size_t kMaxKeys = 64;
  thread_local std::vector<std::string_view> keys;
  keys.clear();
  for (size_t i = 0; keys.size() < kMaxKeys && v.Has(i); i++) {
    const RecArgs c = v.Get(i);
    c.spec->ForEachKey(c.args, [&](int k) { keys.push_back(c.args[k]); });
  }
  if (!keys.empty()) Reactor::Current()->shard().db(r.db).PrefetchKeys(keys.data(), keys.size());
}

// At the client's output limit the client is closed at home, and a relay stops there if what
// ran is a prefix of the pipeline. If commands ran ahead of ones not run yet, it cannot: a later
// command's effect would stay without an earlier one's, which Redis never shows (it runs a
// closed client's commands up to the limit, in order). So it runs the rest, dropping their
// replies (`discard`): the commands that ran are then the whole relay, and its replies stay at
// the limit.
bool OverReplyLimit(const Relay& r) { return r.max_replies && r.replies.size() >= r.max_replies; }

// The hold on unread replies (Connection::kMaxUnsentBeforeRunning), for a relay: once its
// replies reach it, it goes home with those of the commands before `next`, and waits there
// until the client has read them, then goes on with the rest (Connection::OnRelayPaused). Only
// when its slot is the connection's first, so that they can go out at once, and when it holds
// no locks: a relay waiting for a client that may never read must not keep keys locked. Locks
// whose commands now have every earlier command run behind them are released here to that end
// (otherwise they go when the relay is home); if others are still held (commands run ahead of
// one not run yet), it goes on. So that those stay few, a shard stops running commands ahead at
// the hold (StopAhead).
bool PauseHere(Relay& r, Reactor* re) {
  if (!r.may_pause || r.next >= r.order.size() ||
      r.replies.size() - r.kept < Connection::kMaxUnsentBeforeRunning) {
    return false;  // (those kept from its last pause cannot go before their turn)
  }
  // Tagged, its locks stay until every part is on disk: it goes on to the end (within
  // kMaxRelayCommands), as Redis would for any pipeline.
  if (r.tagged && !r.held.empty()) return false;
  size_t still = 0;
  for (size_t k = 0; k < r.held.size(); k++) {
    if (r.held[k].last < r.next) {
      Release(r, r.held[k], re, false);
    } else {
      r.held[still++] = std::move(r.held[k]);
    }
  }
  r.held.resize(still);
  if (!r.held.empty()) return false;
  r.paused = true;
  return true;
}

// Whether a shard running commands ahead stops there: its relay's replies reached the hold.
// The rest of its commands then run in order, when the relay comes back for them: it visits the
// shard of each next command not yet run from now on (`mixed`), skipping those run ahead, and
// on coming back to a shard releases the locks it holds there (all the commands run ahead there
// precede the one it came for). It waits then only while holding locks on lower shards, as in
// ascending order, so it cannot deadlock for the same reason.
bool StopAhead(const Relay& r) {
  return r.may_pause && !r.tagged && !r.discard &&
         r.replies.size() >= Connection::kMaxUnsentBeforeRunning;
}

void EnterMixed(Relay& r) {
  r.mixed = true;
  r.in_order = true;
  r.done.assign(r.order.size(), 0);
  std::fill(r.done.begin(), r.done.begin() + r.next, 1);
  for (uint16_t i : r.reply_idx) r.done[i] = 1;  // run ahead, replies not sent home yet
}

// Mixed: past the commands run ahead.
void SkipDone(Relay& r) {
  while (r.next < r.order.size() && r.done[r.next]) r.next++;
}

// From the relay's last shard (not its origin): home with the replies, or, `lazy`, only to be
// recycled (its replies went to the socket from here).
void SendHome(std::unique_ptr<Relay> r, bool lazy) {
  int origin = r->origin;
  TaskHints h = ToHome(*r);
  // (Sent to itself when its last part ran on the origin: those replies wait for its journal.)
  const bool by_message = origin != Reactor::Current()->id();
  Reactor::Current()->Send(
      origin, [r = std::move(r), by_message]() mutable { Home(std::move(r), by_message); }, h,
      lazy);
}

// The send's completion: the relay goes home, lazily if all of its replies went.
void RepliesSent(Reactor::IoCall* call, int res) {
  std::unique_ptr<Relay> r(static_cast<Relay::SendCall*>(call)->relay);
  if (res > 0) {
    r->written = static_cast<size_t>(res);
    Reactor::Current()->stats().net_output_bytes += r->written;
  }
  // Short or failed: home sends the rest, or sees to the error as its own send would.
  const bool all = r->written == r->replies.size();
  SendHome(std::move(r), all);
}

void DropUnsent(Reactor::IoCall* call) { delete static_cast<Relay::SendCall*>(call)->relay; }

// On the relay's last shard, not its origin: sends its replies to the client's socket from here,
// if its origin allowed it (reply_fd) and nothing else needs them at home first (no locks to
// release, no journal the reply must wait for, no client over its output limit). The send goes
// in this turn's submission, as the origin's would; once it is done the relay goes home only to
// be recycled and let the connection go on. If all of it went, nobody waits for that message
// (the connection's next input, or whatever else would, says so: WaitForRelayHome), so it need
// not wake the origin: one wake-up fewer for each such command. Returns whether the send is on.
//
// The origin writes nothing to the socket meanwhile: the relay's slot is its first and holds the
// rest back until the relay is home. Its Ref keeps the descriptor open until then.
bool SendRepliesHere(std::unique_ptr<Relay>& r, Reactor* re) {
  if (r->reply_fd < 0 || !r->held.empty() || re->journal() != nullptr || OverReplyLimit(*r) ||
      r->paused || r->ahead || Reactor::FailedReplyError() != nullptr || r->replies.empty()) {
    return false;
  }
  r->send_call.done = &RepliesSent;
  r->send_call.drop = &DropUnsent;
  r->send_call.relay = r.get();
  re->SubmitSendCall(r->reply_fd, r->replies, &r->send_call);
  re->stats().relay_replies_from_shard++;
  r.release();  // the ring's until RepliesSent
  return true;
}

// Tagged, home on the origin, which has a part: the part is committed here, after the top's
// (the message that brought the relay left at once). Home waits for the other parts' acks and
// for this part's batch to be on disk; then the replies and the unlocks leave at once.
void CommitAtOrigin(std::unique_ptr<Relay> r) {
  Journal* j = Reactor::Current()->journal();
  if (r->tx_changed) j->CommitTx(r->lock_id, r->participants, r->commit_ns, /*writes=*/true);
  r->home_part = true;
  r->home_batch = j->TurnBatch();
  Home(std::move(r), false);
}

// Tagged, on the last shard: its part (perhaps empty) stamps commit_ns, after every change of
// the relay was made, as Transaction's last part does. Every other part is committed at once too,
// each by a message of its own that leaves now (the origin's by the relay itself), so that the
// parts' fsyncs overlap: each participant but the origin then sends the origin an ack that
// leaves once its part is on disk (held), and home waits for all of them (acks_due) before the
// replies or the unlocks go. A crash between the parts' writes keeps none of the relay: start-up
// replays a part only if every part is on disk (journal_load.cc). (Nothing is committed if
// nothing changed; the acks still wait for each journal, for what the relay read there.)
void StartCommit(std::unique_ptr<Relay> r) {
  Reactor* re = Reactor::Current();
  const int me = re->id();
  r->participants.clear();
  for (const Relay::Held& h : r->held) r->participants.push_back(static_cast<uint32_t>(h.shard));
  r->participants.push_back(static_cast<uint32_t>(me));
  std::sort(r->participants.begin(), r->participants.end());
  r->participants.erase(std::unique(r->participants.begin(), r->participants.end()),
                        r->participants.end());
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  r->commit_ns = int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
  if (r->tx_changed) {
    re->stats().relay_tagged++;
    re->journal()->CommitTx(r->lock_id, r->participants, r->commit_ns, /*writes=*/true);
  }
  const int origin = r->origin;
  Connection* conn = r->conn;  // dereferenced on the origin only
  uint32_t acks = 0;
  bool origin_part = false;
  for (uint32_t p : r->participants) {
    const int s = static_cast<int>(p);
    if (s == me) continue;
    if (s == origin) {
      origin_part = true;
      continue;
    }
    acks++;
    re->SendUnheld(s, [id = r->lock_id, parts = r->participants, ns = r->commit_ns,
                       changed = r->tx_changed, conn, origin] {
      Reactor* at = Reactor::Current();
      if (changed) at->journal()->CommitTx(id, parts, ns, /*writes=*/true);
      at->Send(origin, [conn] { conn->OnTaggedAck(); });  // once this part is on disk
    });
  }
  if (origin_part) {
    acks++;
    re->Send(origin, [conn] { conn->OnTaggedAck(); });  // once this part is on disk
    r->acks_due = acks;
    TaskHints h = ToHome(*r);
    re->SendUnheld(
        origin, [r = std::move(r)]() mutable { CommitAtOrigin(std::move(r)); }, h);
    return;
  }
  r->acks_due = acks;
  if (origin == me) {
    r->home_part = true;
    r->home_batch = re->journal()->TurnBatch();
    Home(std::move(r), false);  // (waits for the acks and for this part on disk)
  } else {
    SendHome(std::move(r), false);  // once this part is on disk
  }
}

// `direct`: called by the connection on its own reactor rather than from a message, so it must
// not come home here (the connection is in the middle of its input).
void RunRelay(std::unique_ptr<Relay> r, bool direct) {
  PrefetchLines<true>(r.get(), sizeof(Relay));  // its fields' lines, together, not one by one
  Reactor* re = Reactor::Current();
  const int me = re->id();
  if (const std::string* e = Reactor::FailedReplyError()) {
    // The shard that sent it here could not put its part in its journal: that part's replies
    // become errors (its later commands still run, as a client's next command would).
    FailSegment(*r, *e);
  }
  r->segment = r->replies.size();
  r->segment_reply = r->reply_lens.size();
  Relay::Part* part = r->PartOf(me);  // (the relay came here for its commands)
  if (r->mixed) [[unlikely]] {  // back for a command after those it ran ahead here (StopAhead)
    for (size_t k = 0; k < r->held.size(); k++) {
      if (r->held[k].shard != me) continue;
      Release(*r, r->held[k], re, false);
      r->held.erase(r->held.begin() + k);
      break;
    }
  }
  // Written on another core: ask for all of it at once.
  PrefetchLines<false>(r->order.data() + r->next, r->order.size() - r->next);
  PrefetchLines<false>(part->recs.data() + part->pos, part->recs.size() - part->pos);
  // Read by the origin on the relay's last trip, written with this shard's replies now.
  PrefetchLines<true>(r->replies.data() + r->segment, r->replies.capacity() - r->segment);
  if (!r->in_order) {
    PrefetchLines<true>(r->reply_lens.data() + r->segment_reply,
                        (r->reply_lens.capacity() - r->segment_reply) * sizeof(uint32_t));
  }
  re->StartTiming();
  PartViewScope scope;
  PartView& view = *scope;
  view.Reset(*part);
  size_t at = 0;  // view's command at part->pos
  LockTable& locks = re->locks();
  const size_t n = r->order.size();
  // Direct, the connection's look-ahead (PrefetchPipeline) has just asked for this shard's keys
  // among these commands, as it read them: asked again, each would be hashed and its bucket read
  // a second time for nothing.
  if (!direct) PrefetchKeys(*r, view);
  bool stop = false;
  // The commands every earlier one of which has run: in order, each waiting for a transaction
  // that holds its key (the rest of the relay waits with it).
  while (r->next < n) {
    const int shard = r->order[r->next];
    // Ran on its own shard, earlier on the way (or ahead: StopAhead).
    if (r->mixed ? r->done[r->next] != 0 : shard < me && !r->in_order) {
      r->next++;
      continue;
    }
    if (shard != me) break;
    view.Has(at);  // (it is this shard's)
    if (r->tagged) break;  // all of this shard's commands run under locks, in its part (below)
    const RecArgs c = view.Get(at++);
    if (!r->resumed && MustWait(c.spec, c.args, r->db, r->client_id, locks)) {
      std::vector<std::string> names = LockNames(c.spec, c.args, r->db);
      uint64_t owner = r->client_id;
      r->resumed = true;
      re->EndTiming(nullptr);
      locks.Park(std::move(names), owner, Carry(std::move(r)));
      return;
    }
    r->resumed = false;
    RunOne(*r, *part, c);
    r->next++;
    if (OverReplyLimit(*r) && !r->discard) {  // a client not reading
      if (r->held.empty()) {  // what ran is a prefix of the pipeline: the rest need not run
        stop = true;
        break;
      }
      r->discard = true;  // commands ran ahead of those still to run: see OverReplyLimit
    } else if (PauseHere(*r, re)) {
      stop = true;
      break;
    }
  }
  if (!stop && !r->in_order && part->ran < part->count) {
    // The rest of this shard's commands run ahead of r->next, under locks on their keys.
    // A list kept from an earlier relay's unlock, with room for one key for each command left
    // (most have one): it goes with the relay, and on to the unlock.
    Relay::Names list = TakeNames();
    std::vector<std::string>& names = *list;
    names.reserve(part->count - part->ran);
    for (size_t i = at; view.Has(i); i++) {
      const RecArgs c = view.Get(i);
      c.spec->ForEachKey(c.args,
                         [&](int k) { names.push_back(LockTable::Name(r->db, c.args[k])); });
    }
    if (r->lock_id == 0) {  // unique: this reactor's id and its own count
      r->lock_id = kRelayLockBit | (static_cast<uint64_t>(me) << 40) |
                   (++relay_locks_made & ((uint64_t{1} << 40) - 1));
    }
    if (!locks.TryLock(r->lock_id, names, false)) {
      // Waits as a transaction does, holding locks on lower shards only; TryLock for the same
      // names succeeds when it is run again.
      uint64_t id = r->lock_id;
      std::sort(names.begin(), names.end());  // a waiter is queued once per name
      names.erase(std::unique(names.begin(), names.end()), names.end());
      if (locks.AnyHeldByMask(names, kRelayLockBit)) r->waited = true;
      re->EndTiming(nullptr);
      locks.ParkTx(id, names, false, Carry(std::move(r)));
      GiveNames(std::move(list));
      return;
    }
    r->held.push_back(Relay::Held{me, std::move(list)});
    Relay::Held& held = r->held.back();
    size_t ran_ahead = 0;
    bool stopped = false;
    Journal* tx_journal = r->tagged ? re->journal() : nullptr;
    uint64_t outer_tx = 0;
    if (tx_journal) outer_tx = tx_journal->EnterTx(r->lock_id);
    while (part->pos < part->recs.size()) {
      if (StopAhead(*r)) [[unlikely]] {
        stopped = true;
        break;
      }
      view.Has(at);
      const RecArgs c = view.Get(at++);
      RunOne(*r, *part, c);
      held.last = c.idx;
      ran_ahead++;
      if (OverReplyLimit(*r)) r->discard = true;  // (these ran ahead: OverReplyLimit)
    }
    if (tx_journal) {
      tx_journal->LeaveTx(outer_tx);
      if (tx_journal->HasTxChanges(r->lock_id)) r->tx_changed = true;
    }
    if (ran_ahead > 0) r->ahead = true;
    re->stats().relay_cmds_ahead += ran_ahead;
    if (stopped) {
      EnterMixed(*r);
      re->stats().relay_ahead_stops++;
    }
  }
  re->EndTiming(nullptr);
  if (r->mixed && !stop) SkipDone(*r);
  if (r->tagged && !stop) {
    // Every command of this shard has run, `next`'s too.
    while (r->next < n && r->order[r->next] <= me) r->next++;
  }
  if (!stop && r->next < n) {
    int to = r->order[r->next];
    if (!r->in_order) {  // the lowest shard above this one
      for (size_t i = r->next; i < n; i++) {
        if (r->order[i] > me) to = std::min<int>(to, r->order[i]);
      }
    }
    TaskHints h = ToShard(*r, to);
    if (r->tagged) {
      re->SendUnheld(to, Carry(std::move(r)), h);  // nothing of it is in this journal yet
    } else {
      re->Send(to, Carry(std::move(r)), h);
    }
    return;
  }
  if (r->tagged && !stop) {
    StartCommit(std::move(r));
    return;
  }
  if (r->origin == me && !direct) {
    Home(std::move(r), false);  // its last commands ran here: their replies wait for this journal
  } else if (r->origin == me || !SendRepliesHere(r, re)) {
    SendHome(std::move(r), false);
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
    relay_->track_client = cur_track_.client;
    relay_->conn = this;
    relay_->acl_user = AclSnapshot();
    relay_->tally.Reset(relay_->origin);
    const OutputBufferLimits& limits = reactor_->config().client_output_buffer_limit;
    relay_->max_replies =
        static_cast<size_t>(subscribed() ? limits.pubsub.hard : limits.normal.hard);
    relay_->tagged =
        reactor_->journal() && reactor_->config().appendfsync == Config::Fsync::kAlways;
    Ref();
    inflight_++;
    inflight_shard_ = kRelayShard;
  }
  if (!relay_->in_order && !CanRunAhead(spec, args)) relay_->in_order = true;
  if (spec->flags & kWrite) relay_->writes = true;
  relay_->Add(spec, args, shard, cur_track_.remember ? Relay::kRemember : 0);
}

bool Connection::RelayFull() const {
  return relay_ && (relay_->size() >= kMaxRelayCommands || relay_->rec_bytes >= kMaxRelayBytes);
}

namespace {

// Ascending pays when the pipeline switches shards more often than it has shards: over 2 shards
// a pipeline of 16 random keys makes about 8 switches for 2 shards, over 64 shards about 15
// switches for 14 shards (and ascending then also needs a message to release each shard's
// locks). Takes the route of fewer messages, assuming nothing waits.
bool AscendingPays(const Relay& r) {
  relay_route::Messages m = r.tally.Done();
  return m.ascending < m.in_order;
}

}  // namespace

void Connection::SendRelay(bool run_here) {
  if (!relay_) return;
  std::unique_ptr<Relay> r(relay_.release());
  if (!r->in_order && !AscendingPays(*r)) r->in_order = true;
  // (Reads alone leave nothing on disk to keep in order.)
  if (r->in_order || !r->writes) r->tagged = false;
  if (r->tagged && tagged_backoff.InOrder(reactor_->now_ms())) {
    r->tagged = false;
    r->in_order = true;
    reactor_->stats().relay_tagged_backoffs++;
  }
  int first = r->order.front();
  if (!r->in_order) {
    first = r->tally.low();
    // Ascending: each shard's part, in the order they run.
    std::sort(r->parts.begin(), r->parts.begin() + r->used,
              [](const Relay::Part& a, const Relay::Part& b) { return a.shard < b.shard; });
  }
  r->may_pause = r->seq == pending_base_;
  if (RepliesMayLeaveFromShard()) {
    r->reply_fd = fd_;
    direct_reply_ = true;
    // Its slot is the only one (RepliesMayLeaveFromShard), so only input or a deferred command
    // can be waiting behind it.
    if (in_start_ < in_.size() || deferred_spec_) WaitForRelayHome();
  }
  if (run_here && first == reactor_->id()) {
    RunRelay(std::move(r), true);  // this shard's part now, no message to itself
  } else {
    TaskHints h = ToShard(*r, first);
    if (reactor_->journal() && NothingWaitsForJournal()) {
      // It has run nothing here yet: no reason to wait for this journal (appendfsync always).
      reactor_->SendUnheld(first, Carry(std::move(r)), h);
    } else {
      reactor_->Send(first, Carry(std::move(r)), h);
    }
  }
}

bool Connection::RepliesMayLeaveFromShard() const {
  // Not for a connection about to move: it moves once a send of its own has ended (OnSend).
  return !tls_ && !monitor_ && !subscribed() && reactor_->journal() == nullptr && fd_ >= 0 &&
         move_to_ < 0 && !moving_ && !closing_ && !close_after_reply_ && out_.empty() &&
         !send_in_flight_ && hold_marks_.empty() && pending_.size() == 1 &&
         !pending_.front().discard;
}

void Connection::StartLazyWait() {
  lazy_waiting_ = true;
  reactor_->AddLazyWaiter();
}

void Connection::EndDirectReply() {
  direct_reply_ = false;
  if (lazy_waiting_) {
    lazy_waiting_ = false;
    reactor_->RemoveLazyWaiter();
  }
}

void Connection::OnRelayReplies(uint64_t seq, std::string_view replies, bool from_shards) {
  if (direct_reply_) EndDirectReply();  // (a connection has one relay out at a time)
  CompleteSlotFrom(seq, replies, from_shards);
}

void Connection::OnRelayPaused(std::unique_ptr<Relay, RelayDeleter> relay, size_t front) {
  if (direct_reply_) EndDirectReply();
  std::unique_ptr<Relay> r(relay.release());
  if (closing_) {  // gone meanwhile: the rest is input never run
    Recycle(std::move(r));
    OnRelayDone();
    return;
  }
  // Its slot is the first (may_pause): the replies go out now, and the slot stays open.
  Journal* j = reactor_->journal();
  EmitSlot(std::string_view(r->replies).substr(0, front), j ? j->TurnBatch() : 0,
           pending_.front().discard);
  AfterOutput();
  reactor_->stats().relay_pauses++;
  // What went home is done with; the replies of commands run ahead stay, in the order they ran.
  r->replies.erase(0, front);
  r->kept = r->replies.size();
  r->delivered = r->next;
  r->segment = r->replies.size();
  r->segment_reply = r->reply_lens.size();
  r->paused = false;
  r->written = 0;
  r->reply_fd = -1;
  paused_relay_.reset(r.release());
}

void Connection::ResumeRelay() {
  std::unique_ptr<Relay> r(paused_relay_.release());
  if (r->mixed) SkipDone(*r);  // (none left but those run ahead: it would still hold locks)
  int first = r->order[r->next];
  if (!r->in_order) {  // ascending: from the lowest shard with a command left
    for (size_t i = r->next; i < r->order.size(); i++) first = std::min<int>(first, r->order[i]);
  }
  TaskHints h = ToShard(*r, first);
  reactor_->Send(first, Carry(std::move(r)), h);
}

void Connection::DropPausedRelay() {  // (closing: what waited for it never runs)
  Recycle(std::unique_ptr<Relay>(paused_relay_.release()));
  inflight_--;
  Unref();
}

bool Connection::TaggedAcksIn(std::unique_ptr<Relay>& r, bool by_message) {
  if (tagged_acks_ >= r->acks_due) {
    tagged_acks_ = 0;
    return true;
  }
  tagged_home_.reset(r.release());
  tagged_home_by_message_ = by_message;
  return false;
}

void Connection::OnTaggedAck() {
  if (const std::string* e = Reactor::FailedReplyError()) {
    if (tagged_ack_error_.empty()) tagged_ack_error_ = *e;  // that part may not be on disk
  }
  tagged_acks_++;
  if (tagged_home_ && tagged_acks_ >= tagged_home_->acks_due) {
    std::unique_ptr<Relay> r(tagged_home_.release());
    Home(std::move(r), tagged_home_by_message_);
  }
}

std::string Connection::TakeTaggedAckError() {
  std::string e;
  e.swap(tagged_ack_error_);
  return e;
}

void Connection::OnRelayDone() {
  OnForwardDone();
  Unref();
}

}  // namespace deadbolt::server

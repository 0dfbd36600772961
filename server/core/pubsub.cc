// Pub/sub delivery (declared in server/core/reactor.h) and the connection's pub/sub block: a
// PUBLISH delivers on every reactor that may have a receiver (server/pubsub/registry.h). Also
// the other output pushed to a connection unasked: MONITOR's lines.

#include <absl/container/flat_hash_set.h>

#include <functional>
#include <utility>

#include "server/base/error_strings.h"
#include "server/base/log.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/pubsub/registry.h"

namespace deadbolt::server {
namespace {

// A published message copied so that it can travel to other reactors.
struct OwnedMessage {
  OwnedMessage(std::string_view c, std::string_view p) : channel(c), payload(p) {}
  std::string channel;
  std::string payload;
};

}  // namespace

// --- delivery ---

int64_t DeliverHere(Reactor& r, PubSubKind kind, std::string_view channel, std::string_view payload,
                    Connection* self, protocol::ReplyBuilder* self_rb) {
  std::vector<Connection*> over_limit;
  int64_t n =
      r.pubsub().ForEachReceiver(kind, channel, [&](Connection* c, const std::string* pattern) {
        if (c->closing()) return false;
        if (c == self && self_rb && c->IsDirectReply(self_rb->out())) {
          EncodePubSubMessage(self_rb->out(), self_rb->resp(), kind, pattern, channel, payload);
        } else if (!c->WritePubSubMessage(kind, pattern, channel, payload)) {
          over_limit.push_back(c);
        }
        return true;
      });
  for (Connection* c : over_limit) {
    if (c->closing()) continue;  // listed twice (a channel and a pattern)
    c->CloseForOutputLimit();
  }
  return n;
}

int64_t PublishNoWait(Reactor& r, PubSubKind kind, std::string_view channel,
                      std::string_view payload) {
  size_t hash = PubSubRegistry::HintHash(channel);
  std::shared_ptr<const OwnedMessage> msg;
  Server& server = r.server();
  for (int i = 0; i < server.num_shards(); i++) {
    if (i == r.id() || !server.reactor(i).pubsub().MayHaveReceivers(kind, hash)) continue;
    if (!msg) msg = std::make_shared<const OwnedMessage>(channel, payload);
    r.Send(i, [msg, kind] { DeliverHere(*Reactor::Current(), kind, msg->channel, msg->payload); });
  }
  return DeliverHere(r, kind, channel, payload);
}

// --- Connection's pub/sub block (declared in server/core/connection.h) ---

PubSubClient& Connection::EnsurePubSubState() {
  if (!pubsub_) pubsub_ = std::make_unique<PubSubClient>();
  return *pubsub_;
}

bool Connection::subscribed() const { return pubsub_ && pubsub_->subscribed(); }

bool Connection::IsDirectReply(const std::string* target) const {
  return target == &out_ || (!pending_.empty() && target == &pending_.back().data);
}

bool Connection::WritePubSubMessage(PubSubKind kind, const std::string* pattern,
                                    std::string_view channel, std::string_view payload) {
  if (closing_ || close_after_reply_) return true;  // as Redis: nothing more after QUIT
  if (pending_.empty()) {
    EncodePubSubMessage(&out_, resp_, kind, pattern, channel, payload);
    AfterOutput();
  } else {
    // Behind replies still being computed elsewhere: a slot keeps the order.
    uint64_t seq = ReserveSlot();
    EncodePubSubMessage(&pending_.back().data, resp_, kind, pattern, channel, payload);
    CompleteSlot(seq, std::move(pending_.back().data));
  }
  return !OverOutputLimit();
}

bool Connection::PubSubFilter(const CommandSpec* spec, CmdArgs args) {
  static const CommandSpec* const kReset = CommandTable::Get().Find("reset");
  static const CommandSpec* const kPing = CommandTable::Get().Find("ping");
  static const CommandSpec* const kAllowed[] = {
      CommandTable::Get().Find("subscribe"),  CommandTable::Get().Find("unsubscribe"),
      CommandTable::Get().Find("psubscribe"), CommandTable::Get().Find("punsubscribe"),
      CommandTable::Get().Find("ssubscribe"), CommandTable::Get().Find("sunsubscribe"),
      CommandTable::Get().Find("quit"),       kReset,
  };
  if (spec == kReset) {
    // RESET leaves pub/sub silently, then runs as usual.
    reactor_->pubsub().UnsubscribeAll(this, *pubsub_);
    return false;
  }
  if (resp_ != 2 || !pubsub_->subscribed()) return false;
  for (const CommandSpec* a : kAllowed) {
    if (spec == a) return false;
  }
  if (spec == kPing) {
    // In RESP2 subscribed mode PING answers [pong, message] (an empty message by default).
    reactor_->stats().commands_processed++;
    reactor_->stats().commands[CommandTable::StatsSlot(spec, args)].calls++;
    std::string* target = ReplyTarget();
    protocol::ReplyBuilder rb(target, 2);
    rb.ArrayHeader(2);
    rb.Bulk("pong");
    rb.Bulk(args.size() > 1 ? args[1] : std::string_view(""));
    if (target != &out_) CompleteSlot(pending_base_ + pending_.size() - 1, std::move(*target));
    return true;
  }
  std::string name = spec->name;
  if (!spec->subcommands.empty() && args.size() > 1) {
    // Redis names the subcommand ("client|id"); an unknown subcommand or a subcommand's arity
    // error is reported first, so those run and fail as usual.
    std::string full = spec->name + "|" + AsciiLower(args[1]);
    const CommandSpec* sub = nullptr;
    for (const CommandSpec& s : spec->subcommands) {
      if (s.name == full) sub = &s;
    }
    if (!sub || !sub->ArityOk(args.size())) return false;
    name = std::move(full);
  }
  reactor_->stats().commands[CommandTable::StatsSlot(spec, args)].rejected_calls++;
  ReplyError(errors::PubSubNotAllowed(name));
  return true;
}

void Connection::PubSubTeardown() {
  if (!pubsub_) return;
  reactor_->pubsub().UnsubscribeAll(this, *pubsub_);
  pubsub_.reset();
}

void Connection::set_monitor(bool on) {
  if (monitor_ == on) return;
  monitor_ = on;
  reactor_->SetMonitor(this, on);
}

void Connection::WriteMonitorLine(std::string_view line) {
  if (closing_ || close_after_reply_) return;
  if (pending_.empty()) {
    out_.append(line);
    AfterOutput();
  } else {
    uint64_t seq = ReserveSlot();  // behind replies still being computed elsewhere
    CompleteSlot(seq, std::string(line));
  }
}

}  // namespace deadbolt::server

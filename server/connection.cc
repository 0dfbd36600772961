#include "server/connection.h"

#include <absl/strings/ascii.h>

#include <cstring>

#include "server/error_strings.h"
#include "server/log.h"
#include "server/reactor.h"
#include "server/server.h"
#include "server/str_util.h"

namespace deadbolt::server {
namespace {

// Arguments copied into one block so a command can travel to another reactor.
struct OwnedArgs {
  explicit OwnedArgs(CmdArgs args) {
    size_t total = 0;
    for (auto a : args) total += a.size();
    bytes.reserve(total);
    lens.reserve(args.size());
    for (auto a : args) {
      bytes.append(a);
      lens.push_back(a.size());
    }
  }
  std::vector<std::string_view> Views() const {
    std::vector<std::string_view> v;
    v.reserve(lens.size());
    size_t off = 0;
    for (size_t n : lens) {
      v.emplace_back(bytes.data() + off, n);
      off += n;
    }
    return v;
  }
  std::string bytes;
  std::vector<size_t> lens;
};

thread_local std::string NullSink;  // fan-out work writes no reply of its own

}  // namespace

Connection::Connection(Reactor* reactor, int fd, uint64_t id, std::string peer, std::string local)
    : reactor_(reactor),
      fd_(fd),
      id_(id),
      peer_(std::move(peer)),
      local_(std::move(local)),
      rb_(&out_, 2) {
  const Config& cfg = reactor_->config();
  protocol::ParserLimits limits;
  limits.max_bulk_len = cfg.proto_max_bulk_len;
  limits.max_multibulk_len = cfg.max_multibulk_len;
  parser_.set_limits(limits);
  authenticated_ = cfg.requirepass.empty();
  created_ms_ = last_interaction_ms_ = reactor_->now_ms();
}

Connection::~Connection() = default;

void Connection::Unref() {
  refs_--;
  if (closing_) reactor_->MaybeFree(this);
}

void Connection::Kill() { reactor_->CloseConnection(this); }

void Connection::OnRead(const char* data, size_t n) {
  reactor_->stats().net_input_bytes += n;
  if (close_after_reply_) return;  // input after QUIT or a protocol error is ignored
  in_.append(data, n);
  ProcessInput();
}

void Connection::ProcessInput() {
  if (processing_) return;
  processing_ = true;
  while (!closing_ && !close_after_reply_ && in_start_ < in_.size()) {
    size_t consumed = 0;
    std::string_view buf(in_.data() + in_start_, in_.size() - in_start_);
    protocol::ParseStatus st = parser_.Parse(buf, &consumed, &args_);
    if (st == protocol::ParseStatus::kIncomplete) {
      if (static_cast<int64_t>(buf.size()) > reactor_->config().client_query_buffer_limit) {
        LogWarning("closing client %s that reached max query buffer length (%zu bytes)",
                   peer_.c_str(), buf.size());
        Kill();
        break;
      }
      if (size_t want = parser_.BytesWanted(); want > buf.size()) in_.reserve(in_start_ + want);
      break;
    }
    if (st == protocol::ParseStatus::kError) {
      ReplyError(errors::ProtocolError(parser_.ErrorText()));
      CloseAfterReply();
      in_.clear();
      in_start_ = 0;
      break;
    }
    in_start_ += consumed;
    if (args_.empty()) continue;
    Dispatch(CmdArgs(args_.data(), args_.size()));
  }
  if (in_start_ == in_.size()) {
    in_.clear();
    in_start_ = 0;
    if (in_.capacity() > (4 << 20)) std::string().swap(in_);
  } else if (in_start_ > 0 && (in_start_ >= 65536 || in_start_ * 2 >= in_.size())) {
    in_.erase(0, in_start_);
    in_start_ = 0;
  }
  processing_ = false;
  AfterOutput();
}

void Connection::AfterOutput() {
  if (!out_.empty() || close_after_reply_) reactor_->MarkForFlush(this);
}

void Connection::ReplyError(std::string_view msg) {
  reactor_->stats().total_error_replies++;
  std::string* target = ReplyTarget();
  protocol::ReplyBuilder rb(target, resp_);
  rb.Error(msg);
  if (target != &out_) CompleteSlot(pending_base_ + pending_.size() - 1, std::move(*target));
}

std::string* Connection::ReplyTarget() {
  if (pending_.empty()) return &out_;
  ReserveSlot();
  return &pending_.back().data;
}

uint64_t Connection::ReserveSlot() {
  pending_.emplace_back();
  return pending_base_ + pending_.size() - 1;
}

void Connection::CompleteSlot(uint64_t seq, std::string data) {
  Slot& s = pending_[seq - pending_base_];
  if (&s.data != &data) s.data = std::move(data);
  s.done = true;
  while (!pending_.empty() && pending_.front().done) {
    out_.append(pending_.front().data);
    pending_.pop_front();
    pending_base_++;
  }
  AfterOutput();
}

void Connection::Dispatch(CmdArgs args) {
  last_interaction_ms_ = reactor_->now_ms();
  const CommandSpec* spec = CommandTable::Get().Find(args[0]);
  if (!spec) {
    ReplyError(errors::UnknownCommand(args[0], args.data() + 1, args.size() - 1));
    return;
  }
  CommandStats& cs = reactor_->stats().commands[CommandTable::Get().IndexOf(spec)];
  if (!spec->ArityOk(args.size())) {
    cs.rejected_calls++;
    ReplyError(errors::WrongArity(spec->name));
    return;
  }
  if (!authenticated_ && !(spec->flags & kNoAuth)) {
    cs.rejected_calls++;
    ReplyError(errors::kNoAuth);
    return;
  }
  last_spec_ = spec;
  if (!spec->subcommands.empty() && args.size() > 1 && args[1].size() <= 32) {
    last_sub_ = AsciiLower(args[1]);
  } else {
    last_sub_.clear();
  }
  Execute(spec, args);
}

std::string Connection::last_command() const {
  if (!last_spec_) return "NULL";
  if (last_sub_.empty()) return last_spec_->name;
  return last_spec_->name + "|" + last_sub_;
}

void Connection::Execute(const CommandSpec* spec, CmdArgs args) {
  reactor_->stats().commands_processed++;
  if (spec->conn_handler) {
    reactor_->stats().commands[CommandTable::Get().IndexOf(spec)].calls++;
    bool slotted = !pending_.empty();
    uint64_t seq = 0;
    if (slotted) {
      seq = ReserveSlot();
      rb_.set_out(&pending_.back().data);
    } else {
      rb_.set_out(&out_);
    }
    rb_.set_resp(resp_);
    spec->conn_handler(args, *this, rb_);
    if (slotted) CompleteSlot(seq, std::move(pending_[seq - pending_base_].data));
    return;
  }
  int shard = spec->has_keys() ? reactor_->server().ShardOf(args[spec->first_key])
                               : reactor_->id();
  if (shard != reactor_->id()) {
    Forward(spec, args, shard);
    return;
  }
  reactor_->stats().commands[CommandTable::Get().IndexOf(spec)].calls++;
  bool slotted = !pending_.empty();
  uint64_t seq = 0;
  if (slotted) {
    seq = ReserveSlot();
    rb_.set_out(&pending_.back().data);
  } else {
    rb_.set_out(&out_);
  }
  rb_.set_resp(resp_);
  ShardCtx ctx{reactor_->shard(), reactor_->shard().db(db_index_), db_index_, reactor_->now_ms(),
               reactor_->config(), rb_};
  spec->shard_handler(args, ctx);
  if (slotted) CompleteSlot(seq, std::move(pending_[seq - pending_base_].data));
}

void Connection::Forward(const CommandSpec* spec, CmdArgs args, int shard) {
  uint64_t seq = ReserveSlot();
  Ref();
  auto owned = std::make_unique<OwnedArgs>(args);
  int origin = reactor_->id();
  int db = db_index_;
  int resp = resp_;
  reactor_->Send(shard, [spec, owned = std::move(owned), origin, db, resp, conn = this, seq] {
    Reactor* r = Reactor::Current();
    r->stats().commands[CommandTable::Get().IndexOf(spec)].calls++;
    std::string reply;
    protocol::ReplyBuilder rb(&reply, resp);
    std::vector<std::string_view> views = owned->Views();
    ShardCtx ctx{r->shard(), r->shard().db(db), db, r->now_ms(), r->config(), rb};
    spec->shard_handler(CmdArgs(views.data(), views.size()), ctx);
    r->Send(origin, [conn, seq, reply = std::move(reply)]() mutable {
      conn->CompleteSlot(seq, std::move(reply));
      conn->Unref();
    });
  });
}

void Connection::FanOut(const std::vector<int>& shards, ShardFn per_shard,
                        absl::AnyInvocable<void(protocol::ReplyBuilder&)> finish) {
  struct State {
    size_t remaining;
    absl::AnyInvocable<void(protocol::ReplyBuilder&)> finish;
    int resp;
    uint64_t seq;
  };
  uint64_t seq = ReserveSlot();
  auto* st = new State{shards.size(), std::move(finish), resp_, seq};
  Ref();
  auto done_one = [this, st] {
    if (--st->remaining > 0) return;
    std::string data;
    protocol::ReplyBuilder rb(&data, st->resp);
    st->finish(rb);
    uint64_t s = st->seq;
    delete st;
    CompleteSlot(s, std::move(data));
    Unref();
  };
  if (shards.empty()) {
    st->remaining = 1;
    done_one();
    return;
  }
  int origin = reactor_->id();
  int db = db_index_;
  for (int s : shards) {
    if (s == origin) {
      protocol::ReplyBuilder sink(&NullSink, resp_);
      ShardCtx ctx{reactor_->shard(), reactor_->shard().db(db), db, reactor_->now_ms(),
                   reactor_->config(), sink};
      per_shard(ctx);
      done_one();
    } else {
      reactor_->Send(s, [per_shard, db, origin, done_one] {
        Reactor* r = Reactor::Current();
        protocol::ReplyBuilder sink(&NullSink, 2);
        ShardCtx ctx{r->shard(), r->shard().db(db), db, r->now_ms(), r->config(), sink};
        per_shard(ctx);
        r->Send(origin, done_one);
      });
    }
  }
}

}  // namespace deadbolt::server

// A reactor's sockets: the io_uring operations it arms (accept, recv into provided buffers,
// batched sends), what their completions do, and a connection's life from accept to close; also
// a connection's output limits, and its input held back while its replies are not taken. The
// loop, messages between reactors and the tick are in reactor.cc.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "server/base/error_strings.h"
#include "server/base/log.h"
#include "server/cmdtable/peer_policy.h"
#include "server/cmdtable/script_busy.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/tls/tls.h"

namespace deadbolt::server {
namespace {

// Output of a connection with commands out on other shards waits for their replies up to this
// size, so that a pipeline's replies leave in one send (FlushConnections).
constexpr size_t kCoalesceBytes = 64 * 1024;

std::string AddrToString(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

}  // namespace

io_uring_sqe* Reactor::GetSqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (!sqe) {
    io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
  }
  return sqe;
}

void Reactor::ArmAccept() {
  for (Listener& l : listeners_) {
    if (l.fd < 0 || l.armed) continue;
    l.armed = true;
    io_uring_sqe* sqe = GetSqe();
    io_uring_prep_multishot_accept(sqe, l.fd, nullptr, nullptr, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(sqe, Encode(AcceptTag(l), kOpAccept));
  }
}

void Reactor::ArmEventfd() {
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_read(sqe, event_fd_, &event_buf_, sizeof(event_buf_), 0);
  io_uring_sqe_set_data64(sqe, Encode(nullptr, kOpEvent));
}

void Reactor::ArmRecv(Connection* c) {
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_recv_multishot(sqe, c->fd(), nullptr, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = kBufGroup;
  io_uring_sqe_set_data64(sqe, Encode(c, kOpRecv));
  c->recv_armed_ = true;
}

void Reactor::RecycleBuffer(uint16_t bid) {
  io_uring_buf_ring_add(buf_ring_, buf_base_ + size_t{bid} * kBufSize, kBufSize, bid,
                        io_uring_buf_ring_mask(kBufCount), 0);
  io_uring_buf_ring_advance(buf_ring_, 1);
}

void Reactor::SubmitSend(Connection* c) {
  if (c->sending_.empty()) {
    if (c->tls_ && !c->tls_->handshake_done()) [[unlikely]] {
      // Replies wait in out_ until the handshake is done; its own records go now.
    } else if (c->hold_marks_.empty()) {
      c->sending_.swap(c->out_);
      c->unheld_end_ = std::string::npos;
    } else {
      // Only the output whose journal batch is on disk may leave.
      uint64_t durable = journal_ ? journal_->durable_batch() : UINT64_MAX;
      size_t n = 0;
      while (!c->hold_marks_.empty() && c->hold_marks_.front().second <= durable) {
        n = c->hold_marks_.front().first;
        c->hold_marks_.pop_front();
      }
      if (c->hold_marks_.empty()) n = c->out_.size();
      if (n == 0) {
        HoldConnection(c);
        return;
      }
      if (!c->hold_marks_.empty()) HoldConnection(c);
      c->sending_.assign(c->out_, 0, n);
      c->out_.erase(0, n);
      for (auto& m : c->hold_marks_) m.first -= n;
      c->unheld_end_ = c->unheld_end_ != std::string::npos && c->unheld_end_ >= n
                           ? c->unheld_end_ - n
                           : std::string::npos;
    }
    c->sending_off_ = 0;
    if (c->tls_) [[unlikely]] {
      // TLS: the plaintext taken becomes the records to send (after any the session made).
      if (!c->tls_->Seal(&c->sending_)) {
        c->LogTlsFailure();
        CloseConnection(c);
        return;
      }
      if (c->sending_.empty()) return;
    }
  }
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_send(sqe, c->fd(), c->sending_.data() + c->sending_off_,
                     c->sending_.size() - c->sending_off_, MSG_NOSIGNAL);
  io_uring_sqe_set_data64(sqe, Encode(c, kOpSend));
  c->send_in_flight_ = true;
}

void Reactor::SubmitSendCall(int fd, std::string_view data, IoCall* call) {
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_send(sqe, fd, data.data(), data.size(), MSG_NOSIGNAL);
  io_uring_sqe_set_data64(sqe, Encode(call, kOpCall));
  call->prev = &calls_;
  call->next = calls_.next;
  calls_.next->prev = call;
  calls_.next = call;
}

void Reactor::MarkForFlush(Connection* c) {
  if (c->in_flush_list_) return;
  c->in_flush_list_ = true;
  flush_list_.push_back(c);
}

void Reactor::FailHeldOutput(Connection* c, uint64_t failed, const std::string& error) {
  if (c->hold_marks_.empty()) return;
  uint64_t durable = journal_->durable_batch();
  // out_[0, begin) may leave as it is (its batches are on disk); out_[begin, end) waited for a
  // batch that failed: its replies become errors. Marks are in batch order.
  size_t begin = 0, end = 0;
  size_t i = 0;
  for (; i < c->hold_marks_.size() && c->hold_marks_[i].second <= durable; i++) {
    begin = end = c->hold_marks_[i].first;
  }
  size_t first_failed = i;
  for (; i < c->hold_marks_.size() && c->hold_marks_[i].second <= failed; i++) {
    end = c->hold_marks_[i].first;
  }
  if (i == first_failed) return;
  // A RESP2 subscriber's output is messages (it can run no write): they leave as they are.
  std::string_view held = std::string_view(c->out_).substr(begin, end - begin);
  std::string replaced =
      c->subscribed() && c->resp() == 2 ? std::string(held) : FailHeldReplies(held, error);
  c->out_.replace(begin, end - begin, replaced);
  // The errors leave with what precedes them (batch 0 is always "on disk").
  const size_t new_end = begin + replaced.size();
  c->hold_marks_.erase(c->hold_marks_.begin() + static_cast<long>(first_failed),
                       c->hold_marks_.begin() + static_cast<long>(i));
  c->hold_marks_.insert(c->hold_marks_.begin() + static_cast<long>(first_failed),
                        {new_end, uint64_t{0}});
  for (size_t k = first_failed + 1; k < c->hold_marks_.size(); k++) {
    c->hold_marks_[k].first = c->hold_marks_[k].first - end + new_end;
  }
}

void Reactor::FlushConnections() {
  uint64_t hold = 0;
  if (journal_) {
    if (journal_failed_) {
      // A journal write failed: output that waited for the batches it held leaves now, as
      // errors, rather than wait for a disk that may stay full (new output is not held for
      // them: HoldBatch). Rare, so every connection is looked at.
      journal_failed_ = false;
      journal_moved_ = true;
      const std::string error = errors::AofWriteError(journal_->error() ? journal_->error() : EIO);
      for (auto& [id, c] : conns_) {
        if (!c->closing_) FailHeldOutput(c, journal_->failed_batch(), error);
      }
    }
    if (journal_moved_) {
      journal_moved_ = false;
      std::vector<uint64_t> ids;
      ids.swap(held_conns_);
      for (uint64_t id : ids) {
        auto it = conns_.find(id);
        if (it == conns_.end()) continue;
        it->second->held_ = false;
        MarkForFlush(it->second);
      }
    }
    hold = journal_->HoldBatch();
  }
  for (size_t i = 0; i < flush_list_.size(); i++) {
    Connection* c = flush_list_[i];
    c->in_flush_list_ = false;
    if (c->closing_ || c->moving_) continue;  // a moving one's output leaves from its new home
    if (c->input_ended_ && c->block_state_) [[unlikely]] {
      CloseConnection(c);  // blocked after its EOF (a command it sent before): Redis frees it
      continue;
    }
    if (c->OverOutputLimit()) {  // replies that came from other shards, pub/sub messages
      c->CloseForOutputLimit();
      continue;
    }
    if (hold && !c->out_.empty() && c->out_.size() != c->unheld_end_ &&
        (c->hold_marks_.empty() || c->hold_marks_.back().first != c->out_.size())) {
      // Written while a journal batch is not on disk yet: leaves once it is (always).
      c->hold_marks_.emplace_back(c->out_.size(), hold);
    }
    if (c->inflight_ > 0 && !c->block_state_ && !c->close_after_reply_ &&
        c->out_.size() < kCoalesceBytes) {
      // Replies to commands still out on other shards come within a turn or two: the replies
      // before them wait and leave in the same send (the connection is marked again when they
      // come). A blocking call may wait long, so what precedes it leaves now.
      continue;
    }
    if (!c->send_in_flight_ && (!c->out_.empty() || c->tls_wire_pending())) {
      SubmitSend(c);
    } else if (!c->send_in_flight_ && c->out_.empty() && c->pending_.empty() &&
               (c->close_after_reply_ || (c->input_ended_ && c->inflight_ == 0 && !c->paused_ &&
                                          !c->deferred_spec_ && !c->input_held_))) {
      CloseConnection(c);
    }
  }
  flush_list_.clear();
}

void Reactor::CloseConnection(Connection* c) {
  if (c->closing_) return;
  c->closing_ = true;
  c->OnClose();
  shutdown(c->fd(), SHUT_RDWR);
  if (c->recv_armed_) CancelRecv(c);
  server_->connected_clients().fetch_sub(1, std::memory_order_relaxed);
  MaybeFree(c);
}

void Reactor::CancelRecv(Connection* c) {
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_cancel64(sqe, Encode(c, kOpRecv), 0);
  io_uring_sqe_set_data64(sqe, Encode(nullptr, kOpIgnore));
}

void Reactor::MaybeFree(Connection* c) {
  // Freed at the end of the loop turn: the caller may still be inside one of c's methods.
  if (c->CanFree() && !c->in_free_list_) {
    c->in_free_list_ = true;
    free_list_.push_back(c);
  }
}

void Reactor::OnAccept(bool tls, int res, uint32_t flags) {
  if (!(flags & IORING_CQE_F_MORE)) listeners_[tls ? 1 : 0].armed = false;
  if (res == -EMFILE || res == -ENFILE || res == -ENOBUFS || res == -ENOMEM) {
    // Out of descriptors (or memory): accepting again at once would fail again at once, and
    // spin. Pause instead; the connections waiting meanwhile stay in the listen backlog.
    PauseAccept(-res);
    return;
  }
  if (!accept_backoff_.paused() && !stop_.load(std::memory_order_relaxed)) ArmAccept();
  if (res < 0) {
    if (res != -ECANCELED) LogWarning("accept failed: %s", strerror(-res));
    return;
  }
  static thread_local unsigned next = 0;
  int target = static_cast<int>(next++ % server_->num_shards());
  int fd = res;
  // While a script is busy, a reactor may not read its inbox for long: the new client (say,
  // redis-cli sending SCRIPT KILL) stays here, and is served even if this reactor is the busy one.
  if (target == id_ || ScriptBusy::Get().any()) {
    Adopt(fd, tls);
  } else {
    Send(target, [fd, tls] { Reactor::Current()->Adopt(fd, tls); });
  }
}

void Reactor::PauseAccept(int err) {
  std::string line = accept_backoff_.OnExhausted(now_ms_, err);
  if (!line.empty()) LogWarning("%s", line.c_str());
  for (Listener& l : listeners_) {
    if (!l.armed) continue;
    // A multishot accept that is still armed would go on failing: cancel it.
    io_uring_sqe* sqe = GetSqe();
    io_uring_prep_cancel64(sqe, Encode(AcceptTag(l), kOpAccept), 0);
    io_uring_sqe_set_data64(sqe, Encode(nullptr, kOpIgnore));
  }
  AddTimer(accept_backoff_.resume_at_ms(), [this] { ResumeAccept(); });
}

void Reactor::ResumeAccept() {
  if (!accept_backoff_.paused()) return;
  accept_backoff_.Resume();
  if (!stop_.load(std::memory_order_relaxed)) ArmAccept();
}

void Reactor::Adopt(int fd, bool tls) {
  if (server_->connected_clients().load(std::memory_order_relaxed) >= config_.maxclients) {
    static const char kMsg[] = "-ERR max number of clients reached\r\n";
    if (!tls) {  // a TLS client could not read plain text: it sees the connection close
      ssize_t ignored = write(fd, kMsg, sizeof(kMsg) - 1);
      (void)ignored;
    }
    close(fd);
    stats_.rejected_connections++;
    return;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_storage peer{}, local{};
  socklen_t plen = sizeof(peer), llen = sizeof(local);
  getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen);
  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen);
  if (ProtectedModeRefuses(config_, peer)) {
    // As Redis: the reason, written at once on the fresh socket (it fits its buffer), then close.
    static const std::string kMsg = "-" + std::string(errors::kProtectedModeDenied) + "\r\n";
    if (!tls) {  // a TLS client sees the connection close
      ssize_t ignored = write(fd, kMsg.data(), kMsg.size());
      (void)ignored;
    }
    close(fd);
    stats_.rejected_connections++;
    return;
  }
  auto* c =
      new Connection(this, fd, server_->NextClientId(), AddrToString(peer), AddrToString(local));
  if (tls) c->tls_ = std::make_unique<TlsSession>(*tls_context_);
  conns_[c->id()] = c;
  server_->connected_clients().fetch_add(1, std::memory_order_relaxed);
  stats_.connections_received++;
  ArmRecv(c);
}

void Reactor::OnRecv(Connection* c, int res, uint32_t flags) {
  bool more = flags & IORING_CQE_F_MORE;
  if (!more) c->recv_armed_ = false;
  if (res > 0) {
    uint16_t bid = flags >> IORING_CQE_BUFFER_SHIFT;
    if (!c->closing_) c->OnRead(buf_base_ + size_t{bid} * kBufSize, res);
    RecycleBuffer(bid);
    if (!more && !c->closing_ && !c->recv_armed_) {
      if (c->moving_) {
        FinishMove(c);
      } else {
        ArmRecv(c);
      }
    }
  } else if (res == -ENOBUFS) {
    // Every buffer was in use; they are back now.
    if (!c->closing_ && !c->recv_armed_) {
      if (c->moving_) {
        FinishMove(c);
      } else {
        ArmRecv(c);
      }
    }
  } else if (!more) {
    if (res == -ECANCELED && c->moving_ && !c->closing_) {
      FinishMove(c);  // StartMove's cancel: the socket goes to its new reactor
    } else if (res == 0 && !c->closing_ && !c->moving_ && !c->block_state_) {
      // EOF: the client may have only shut its writing side (`printf 'PING\r\n' | nc -N`). As
      // Redis, what it sent is run and answered, then it is closed (FlushConnections).
      c->input_ended_ = true;
      MarkForFlush(c);
    } else {
      CloseConnection(c);  // EOF (0) or an error
    }
  }
  MaybeFree(c);
}

void Reactor::OnSend(Connection* c, int res) {
  c->send_in_flight_ = false;
  if (res < 0) {
    if (res == -EINTR || res == -EAGAIN) {
      if (!c->closing_) SubmitSend(c);
    } else {
      CloseConnection(c);
    }
    MaybeFree(c);
    return;
  }
  stats_.net_output_bytes += res;
  c->sending_off_ += res;
  if (c->closing_) {
    MaybeFree(c);
    return;
  }
  if (c->sending_off_ < c->sending_.size()) {
    SubmitSend(c);
  } else {
    c->sending_.clear();
    if (c->sending_.capacity() > (1 << 20)) std::string().swap(c->sending_);
    if (c->move_to_ >= 0) [[unlikely]]
      StartMove(c);  // moves now if it is idle, else after a later send
    MarkForFlush(c);
  }
  if (c->input_held_ || c->relay_paused()) [[unlikely]]
    c->ResumeHeldInput();  // its replies were too many to run more of its input
}

void Reactor::HandleCqe(Completion cqe) {
  uint64_t ud = cqe.user_data;
  auto kind = static_cast<OpKind>(ud & 7);
  auto* c = reinterpret_cast<Connection*>(ud & ~uint64_t{7});
  switch (kind) {
    case kOpCall:
      if (c != nullptr) {
        auto* call = reinterpret_cast<IoCall*>(c);
        call->prev->next = call->next;
        call->next->prev = call->prev;
        call->done(call, cqe.res);
      }
      break;
    case kOpAccept:
      OnAccept(c != nullptr, cqe.res, cqe.flags);  // AcceptTag
      break;
    case kOpRecv:
      OnRecv(c, cqe.res, cqe.flags);
      break;
    case kOpSend:
      OnSend(c, cqe.res);
      break;
    case kOpMsg:
      if (c == nullptr) {
        stats_.wakeups_received++;  // another reactor woke this one
      } else if (cqe.res < 0) {
        // Our MSG_RING to that reactor failed (a kernel without it for this ring): wake it the
        // old way, and use the eventfd from now on.
        if (msg_ring_ok_.exchange(false, std::memory_order_relaxed)) {
          LogWarning("IORING_OP_MSG_RING refused (%s): reactors wake each other through eventfds",
                     strerror(-cqe.res));
        }
        Reactor* target = reinterpret_cast<Reactor*>(c);
        uint64_t one = 1;
        ssize_t ignored = write(target->event_fd_, &one, sizeof(one));
        (void)ignored;
      }
      break;
    case kOpEvent:
      stats_.wakeups_received++;
      if (!stop_.load(std::memory_order_relaxed)) ArmEventfd();
      break;
    case kOpIgnore:
      break;
    case kOpJournal:
      if (journal_) journal_->OnCompletion(reinterpret_cast<Journal::Op*>(c), cqe.res);
      break;
  }
}

void Reactor::TakeCompletions() {
  unsigned head, count = 0;
  io_uring_cqe* cqe;
  io_uring_for_each_cqe(&ring_, head, cqe) {
    completions_.push_back({cqe->user_data, cqe->res, cqe->flags});
    count++;
  }
  io_uring_cq_advance(&ring_, count);
}

// --- a Lua script past busy-reply-threshold (ServeWhileBusy) ---

void Reactor::ServeWhileBusy() {
  if (serving_busy_) return;
  serving_busy_ = true;
  // The script's own call is being timed: what runs here is timed apart, then its mark is back.
  const uint64_t lap_start = lap_start_, last_lap = last_lap_;
  const bool lap_fresh = lap_fresh_;
  io_uring_submit_and_get_events(&ring_);
  // The rest of the batch the script was started from (if it was), then what is new: in order.
  TakeCompletions();
  std::vector<Connection*> served;
  while (completion_pos_ < completions_.size()) {
    HandleWhileBusy(completions_[completion_pos_++], &served);
  }
  EndTiming(nullptr);
  lap_start_ = lap_start;
  last_lap_ = last_lap;
  lap_fresh_ = lap_fresh;
  // Their replies leave now, behind any of theirs that waits for the journal (the marks set in
  // HandleWhileBusy); the rest of the flush is the turn's, once the script is done.
  for (Connection* c : served) {
    if (!c->closing_ && !c->send_in_flight_ && !c->out_.empty()) SubmitSend(c);
  }
  io_uring_submit(&ring_);
  serving_busy_ = false;
}

void Reactor::HandleWhileBusy(Completion cqe, std::vector<Connection*>* served) {
  const auto kind = static_cast<OpKind>(cqe.user_data & 7);
  auto* c = reinterpret_cast<Connection*>(cqe.user_data & ~uint64_t{7});
  switch (kind) {
    case kOpRecv:
      if (!c->ServesWhileBusy()) {
        c->busy_kept_ = true;  // and so is every later input of it, until the next turn
        busy_kept_.push_back(cqe);
        return;
      }
      if (const uint64_t hold = journal_ ? journal_->HoldBatch() : 0;
          hold && !c->out_.empty() &&
          (c->hold_marks_.empty() || c->hold_marks_.back().first != c->out_.size())) {
        c->hold_marks_.emplace_back(c->out_.size(), hold);  // as FlushConnections would
      }
      HandleCqe(cqe);
      if (std::find(served->begin(), served->end(), c) == served->end()) served->push_back(c);
      return;
    case kOpSend:  // (a send that ends resumes no move meanwhile: StartMove)
    case kOpAccept:
    case kOpMsg:
    case kOpEvent:
    case kOpIgnore:
      HandleCqe(cqe);
      return;
    case kOpCall:
    case kOpJournal:
      busy_kept_.push_back(cqe);
      return;
  }
}

// Nothing of it is under way or waits: its next command would run at once, and it is not the
// one whose command runs the script (processing_).
bool Connection::ServesWhileBusy() const {
  return !busy_kept_ && !processing_ && !closing_ && !close_after_reply_ && !moving_ && !paused_ &&
         !pause_held_ && !input_held_ && !input_ended_ && inflight_ == 0 && pending_.empty() &&
         !relay_ && !deferred_spec_ && !block_state_ && !exec_ && !exec_releasing_ &&
         fan_outs_.empty() && !tls_;
}

bool Connection::BusyRefuses(const CommandSpec* spec, CmdArgs args) {
  const CommandSpec* cmd = last_cmd_ ? last_cmd_ : spec;
  // WATCH would look its keys up in the shard the script is using.
  if ((cmd->flags & kAllowBusy) && !spec->has_keys()) return false;
  reactor_->stats().commands[CommandTable::StatsSlot(spec, args)].rejected_calls++;
  Reject(spec, ScriptBusy::Get().busy_error());
  return true;
}

// A connection's output: what its limits do, and holding its input back while its replies are
// not taken (Reactor::OnSend resumes it).

void Connection::CloseUnauthenticated() {
  reactor_->stats().unauth_clients_closed++;
  static thread_local LogRateLimiter limiter(60 * 1000, 10);
  uint64_t left_out = 0;
  if (limiter.Allow(reactor_->now_ms(), &left_out)) {
    std::string more = left_out ? " (" + std::to_string(left_out) + " more not logged)" : "";
    LogWarning(
        "closing unauthenticated client id=%llu addr=%s: %zu bytes of replies unread, "
        "over the %zu allowed before AUTH%s",
        static_cast<unsigned long long>(id_), peer_.c_str(), unsent_output(),
        kUnauthMaxUnsentOutput, more.c_str());
  }
  Kill();
}

bool Connection::OverOutputLimitSlow() {
  if (reactor_->client_mem_limit() > 0) reactor_->NoteClientGrowth(this);
  const OutputBufferLimits& limits = reactor_->config().client_output_buffer_limit;
  const OutputBufferLimit& limit = subscribed() ? limits.pubsub : limits.normal;
  if (limit.hard == 0 && limit.soft == 0) return false;
  // Replies done but waiting in their slots behind one still out on another shard count too.
  return output_limit_.Over(limit, unsent_output() + done_slot_bytes_, reactor_->now_ms());
}

bool Connection::ThrottledByOutputLimit() const {
  if (inflight_reads_ >= kMaxInflightReads) return true;
  if (inflight_ < kMaxInflightUnderOutputLimit) return false;
  const OutputBufferLimit& limit = reactor_->config().client_output_buffer_limit.normal;
  return limit.hard > 0 || limit.soft > 0 || reactor_->client_mem_limit() > 0;
}

void Connection::CloseForOutputLimit() {
  reactor_->stats().output_limit_disconnections++;
  LogWarning(
      "closing client id=%llu addr=%s for overcoming of output buffer limits (%zu bytes "
      "of replies unread)",
      static_cast<unsigned long long>(id_), peer_.c_str(), unsent_output());
  Kill();  // leaves its subscriptions too (OnClose)
}

void Connection::ResumeHeldInput() {
  if (unsent_output() + done_slot_bytes_ >= kMaxUnsentBeforeRunning) return;
  if (paused_relay_) {  // (input waits for it: the relay is still out)
    ResumeRelay();
    return;
  }
  input_held_ = false;
  if (!closing_ && !moving_ && !paused_ && !deferred_spec_) ProcessInput();
}

}  // namespace deadbolt::server

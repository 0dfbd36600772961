// The journal at run time: gathering changes, writing and fsyncing through the reactor's
// io_uring, holding output until it is durable, and rewriting in the background. See journal.h.

#include "server/core/journal.h"

#include <absl/container/flat_hash_set.h>
#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "server/base/log.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "shard/journal_format/journal_format.h"

namespace deadbolt::server {

namespace {

// A rewrite scans this many buckets per turn, and pauses while this much of its output waits.
constexpr size_t kScanStep = 256;
constexpr size_t kRewriteBacklog = 4 << 20;
// A turn's changes go in one frame up to this size (frames are limited to kMaxFrameLength).
constexpr size_t kSplitFrameBytes = 256u << 20;
// After a failed write, try again this much later (Redis retries once a second too).
constexpr int64_t kRetryMs = 1000;

int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

struct alignas(8) Journal::Op {
  enum Kind : uint8_t { kWrite, kFsync, kOpen, kRename, kDirSync };
  Kind kind;
  File* file = nullptr;
};

// One file being appended to: bytes gathered, bytes in flight, and how far each has got.
struct Journal::File {
  int fd = -1;
  std::string path;
  uint64_t offset = 0;          // bytes written (completed)
  std::string pending;          // gathered, not yet submitted
  std::string inflight;         // submitted (the part not yet written, after a short write)
  uint64_t appended_batch = 0;  // newest batch in pending or earlier
  uint64_t inflight_batch = 0;  // newest batch in inflight or earlier
  uint64_t written_batch = 0;   // newest batch whose bytes are all written
  uint64_t synced_batch = 0;    // newest batch on disk
  uint64_t synced_offset = 0;   // bytes on disk
  uint64_t fsync_batch = 0;     // what the fsync in flight covers
  uint64_t fsync_offset = 0;
  bool fsync_wanted = false;  // an fsync was asked for (everysec, WAITAOF, rewrite)
  bool write_inflight = false;
  int outstanding = 0;        // operations in flight (a write linked to an fsync counts 2)
  int64_t retry_at_ms = 0;
  Op write_op{Op::kWrite, nullptr};
  Op fsync_op{Op::kFsync, nullptr};

  uint64_t size() const { return offset + inflight.size() + pending.size(); }
  bool idle() const { return outstanding == 0 && inflight.empty() && pending.empty(); }
};

// Hears of one db's key changes.
class Journal::Observer : public shard::KeyObserver {
 public:
  Observer(Journal* j, int db) : j_(j), db_(db) {}
  void OnKeyChanged(std::string_view key) override { j_->NoteChanged(db_, key); }
  void OnKeyEdited(std::string_view key, const shard::KeyEdit& edit) override {
    j_->NoteEdited(db_, key, edit);
  }
  void OnKeyExpired(std::string_view) override {}
  bool OnFlush() override {
    j_->NoteFlush(db_);
    return false;
  }

 private:
  Journal* j_;
  int db_;
};

std::string JournalPath(const std::string& dir, int shard, int num_shards) {
  return dir + "/deadbolt-journal-" + std::to_string(shard) + "-of-" + std::to_string(num_shards) +
         ".aof";
}

Journal::Journal(Reactor* reactor, shard::Shard* shard, int shard_index, int num_shards)
    : reactor_(reactor), shard_(shard), shard_index_(shard_index), num_shards_(num_shards) {
  rw_op_ = std::make_unique<Op>();
}

Journal::~Journal() {
  for (size_t d = 0; d < observers_.size(); d++) {
    shard_->db(static_cast<int>(d)).RemoveObserver(observers_[d].get());
  }
  if (main_ && main_->fd >= 0) close(main_->fd);
  if (rewrite_ && rewrite_->fd >= 0) close(rewrite_->fd);
  for (auto& f : retired_) {
    if (f->fd >= 0) close(f->fd);
  }
  if (dir_fd_ >= 0) close(dir_fd_);
}

std::optional<std::string> Journal::Open(int64_t now_ms) {
  const Config& config = reactor_->config();
  now_ms_ = now_ms;
  path_ = JournalPath(config.dir, shard_index_, num_shards_);
  followed_policy_ = config.appendfsync;
  main_ = std::make_unique<File>();
  main_->path = path_;
  main_->fd = open(path_.c_str(), O_WRONLY | O_CLOEXEC);
  if (main_->fd < 0) return "cannot open the journal " + path_ + ": " + strerror(errno);
  struct stat st {};
  fstat(main_->fd, &st);
  main_->offset = main_->synced_offset = static_cast<uint64_t>(st.st_size);
  ReadDataSet();
  main_->write_op.file = main_->fsync_op.file = main_.get();
  dir_fd_ = open(config.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) return "cannot open the directory " + config.dir + ": " + strerror(errno);
  stats_.base_size = main_->offset;
  for (int d = 0; d < shard_->num_dbs(); d++) {
    observers_.push_back(std::make_unique<Observer>(this, d));
    shard_->db(d).AddObserver(observers_.back().get());
    journalled_tokens_.push_back(shard_->db(d).last_fencing_token());
  }
  next_sync_ms_ = now_ms + 1000;
  return std::nullopt;
}

// The data set named in the first frame of the file LoadJournals wrote (see journal_load.cc);
// a rewrite writes it into the file that replaces this one.
void Journal::ReadDataSet() {
  const std::string& path = main_->path;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::string head(256, '\0');
  ssize_t got = pread(fd, head.data(), head.size(), 0);
  close(fd);
  head.resize(got > 0 ? static_cast<size_t>(got) : 0);
  shard::ScanJournal(head, [&](const shard::JournalRecord& r) {
    if (r.kind == shard::RecordKind::kDataSet) set_id_ = r.set_id;
    return r.kind == shard::RecordKind::kHeader;  // the first frame: the header, then this
  });
}

void Journal::NoteChanged(int db, std::string_view key) {
  std::vector<Dirty>& list = cur_tx_ ? tx_dirty_[cur_tx_] : dirty_;
  // The same key changed twice in a row (one command touching it twice) is written once.
  if (!list.empty() && !list.back().flush && list.back().edit.empty() && list.back().db == db &&
      list.back().key == key) {
    return;
  }
  list.push_back(Dirty{db, false, std::string(key), {}});
}

void Journal::NoteEdited(int db, std::string_view key, const shard::KeyEdit& edit) {
  // A key that an unsettled transaction changed (other than the one running) is written whole:
  // a replay drops a transaction whose parts are not all on disk, and an edit made after it
  // would then apply to the state before it. A whole state does not depend on it. An edit
  // inside a transaction goes in its frame, and is dropped with it.
  if (edit.size_after < kEditMinElements || InOtherTx(db, key)) {
    NoteChanged(db, key);
    return;
  }
  std::vector<Dirty>& list = cur_tx_ ? tx_dirty_[cur_tx_] : dirty_;
  Dirty d{db, false, std::string(key), {}};
  shard::EncodeEdit(&d.edit, static_cast<uint32_t>(db), key, edit);
  list.push_back(std::move(d));
}

bool Journal::InOtherTx(int db, std::string_view key) const {
  for (const auto& [id, list] : tx_dirty_) {
    if (id == cur_tx_) continue;
    for (const Dirty& d : list) {
      if (d.db == db && (d.flush || d.key == key)) return true;
    }
  }
  return false;
}

void Journal::NoteFlush(int db) {
  std::vector<Dirty>& list = cur_tx_ ? tx_dirty_[cur_tx_] : dirty_;
  list.push_back(Dirty{db, true, {}, {}});
}

namespace {
// Names this run's transactions in the journal (with Transaction ids, unique within a run).
uint64_t RunNonce() {
  static const uint64_t nonce = [] {
    std::random_device rd;
    return (uint64_t{rd()} << 32) ^ rd();
  }();
  return nonce;
}
}  // namespace

uint64_t Journal::EnterTx(uint64_t id) {
  // What changed before belongs to earlier commands: it goes in a frame of its own first, with
  // the state it has now (the transaction's keys are locked, so none of them is in it).
  Materialize(now_ms_);
  uint64_t prev = cur_tx_;
  cur_tx_ = id;
  return prev;
}

void Journal::LeaveTx(uint64_t prev) { cur_tx_ = prev; }

void Journal::CommitTx(uint64_t id, const std::vector<uint32_t>& participants, int64_t commit_ns,
                       bool writes) {
  auto it = tx_dirty_.find(id);
  std::vector<Dirty> none;
  // The list stays until SettleTx: the rewrite's scan waits for those keys.
  std::vector<Dirty>& dirty = it != tx_dirty_.end() ? it->second : none;
  if (dirty.empty() && !writes) return;
  Materialize(now_ms_);  // keep the order: what came before the commit, first
  if (!writes) {
    // A transaction not expected to write changed something here (the other shards, expecting
    // nothing, write no part): journalled untagged, as it would be outside a transaction.
    WriteFrame(dirty, nullptr, /*even_if_empty=*/false, now_ms_);
    return;
  }
  shard::TxTag tag{RunNonce(), id, commit_ns, participants};
  WriteFrame(dirty, &tag, /*even_if_empty=*/true, now_ms_);
}

void Journal::SettleTx(uint64_t id) { tx_dirty_.erase(id); }

bool Journal::ScanBlockedByTx(int db, const std::vector<std::string>& keys) const {
  for (const auto& [id, list] : tx_dirty_) {
    for (const Dirty& d : list) {
      if (d.db != db) continue;
      if (d.flush) return true;
      if (std::find(keys.begin(), keys.end(), d.key) != keys.end()) return true;
    }
  }
  return false;
}

void Journal::Materialize(int64_t now_ms) {
  if (dirty_.empty()) return;
  std::vector<Dirty> dirty;
  dirty.swap(dirty_);
  WriteFrame(dirty, nullptr, false, now_ms);
  dirty_.swap(dirty);  // keep the capacity
  dirty_.clear();
}

bool Journal::WriteFrame(std::vector<Dirty>& dirty, const shard::TxTag* tag, bool even_if_empty,
                         int64_t now_ms) {
  // Written straight into the file's pending bytes (and copied to a rewrite's, if one runs).
  std::string& out = main_->pending;
  const size_t start = out.size();
  shard::JournalWriter w(&out);
  w.BeginFrame();
  if (tag) w.Tx(*tag);
  // The keys written whole in this frame: their state includes their edits, which are dropped.
  absl::flat_hash_set<std::pair<int, std::string_view>> whole;
  if (std::any_of(dirty.begin(), dirty.end(), [](const Dirty& d) { return !d.edit.empty(); })) {
    for (const Dirty& d : dirty) {
      if (!d.flush && d.edit.empty()) whole.emplace(d.db, d.key);
    }
  }
  for (const Dirty& d : dirty) {
    auto db = static_cast<uint32_t>(d.db);
    if (d.flush) {
      w.FlushDb(db);
      continue;
    }
    if (!d.edit.empty()) {
      if (!whole.contains({d.db, std::string_view(d.key)})) {
        w.Append(d.edit);
        stats_.edit_records++;
      }
      continue;
    }
    // The key's state now (the last change of the turn wins; expired reads as gone).
    if (shard_->db(d.db).View(d.key, now_ms, &view_)) {
      w.Put(db, d.key, view_);
    } else {
      w.Del(db, d.key);
    }
    if (!tag && w.frame_bytes() > kSplitFrameBytes) {
      // A turn that wrote huge values: more than one frame (each still whole on its own).
      w.EndFrame();
      w.BeginFrame();
    }
  }
  for (int d = 0; d < shard_->num_dbs(); d++) {
    uint64_t t = shard_->db(d).last_fencing_token();
    if (t != journalled_tokens_[d]) {
      w.Token(static_cast<uint32_t>(d), t);
      journalled_tokens_[d] = t;
    }
  }
  if (!tag && !even_if_empty && w.records_in_frame() == 0) {
    w.EndFrame();
    return false;
  }
  if (!w.EndFrame()) return false;
  appended_batch_++;
  stats_.batches++;
  main_->appended_batch = appended_batch_;
  if (rewrite_ && rw_state_ != RewriteState::kOpening) {
    rewrite_->pending.append(out, start, std::string::npos);
    rewrite_->appended_batch = appended_batch_;
  }
  return true;
}

void Journal::FollowPolicy() {
  // CONFIG SET appendfsync: the new policy applies from this turn on. Whatever it is, what was
  // written before is fsynced once: output held under `always` must not wait for an fsync that
  // no longer comes, and under `always` nothing may look durable that was written without one.
  Config::Fsync p = reactor_->config().appendfsync;
  if (p == followed_policy_ || !main_) return;
  followed_policy_ = p;
  main_->fsync_wanted = true;
  if (rewrite_ && rewrite_->fd >= 0) rewrite_->fsync_wanted = true;
}

void Journal::EndTurn(int64_t now_ms) {
  now_ms_ = now_ms;
  FollowPolicy();
  Materialize(now_ms);
  if (rewrite_) RewriteStep(now_ms);
  Pump(*main_);
  if (rewrite_ && rewrite_->fd >= 0) Pump(*rewrite_);
}

io_uring_sqe* Journal::Sqe() { return reactor_->GetSqe(); }

// CONFIG SET appendfsync reaches every reactor's copy of the config; the next write follows it.
Config::Fsync Journal::policy() const { return reactor_->config().appendfsync; }

void Journal::Pump(File& f) {
  if (f.fd < 0 || f.write_inflight) return;
  // Without `always` a write may start while everysec's fsync runs (replies wait for writes,
  // not for that fsync); with it, each write is linked to its own fsync.
  if (f.outstanding > 0 && policy() == Config::Fsync::kAlways) return;
  if (f.retry_at_ms && now_ms_ < f.retry_at_ms) return;
  f.retry_at_ms = 0;
  if (f.inflight.empty() && !f.pending.empty()) {
    f.inflight.swap(f.pending);
    f.pending.clear();
    f.inflight_batch = f.appended_batch;
  }
  if (!f.inflight.empty()) {
    SubmitWrite(f);
    return;
  }
  if (f.outstanding > 0) return;  // an fsync is in flight
  if (f.fsync_wanted && (f.synced_batch < f.written_batch || f.synced_offset < f.offset)) {
    SubmitFsync(f, f.written_batch);
    return;
  }
  if (f.fsync_wanted) {
    f.fsync_wanted = false;
    Durable();
  }
}

bool Journal::SubmitWrite(File& f) {
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_write(sqe, f.fd, f.inflight.data(),
                      static_cast<unsigned>(std::min<size_t>(f.inflight.size(), 1u << 30)),
                      f.offset);
  io_uring_sqe_set_data64(sqe, Reactor::JournalTag(&f.write_op));
  f.outstanding++;
  f.write_inflight = true;
  if (policy() == Config::Fsync::kAlways) {
    sqe->flags |= IOSQE_IO_LINK;
    SubmitFsync(f, f.inflight_batch);
    f.fsync_offset = f.offset + f.inflight.size();
  }
  return true;
}

void Journal::SubmitFsync(File& f, uint64_t batch) {
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_fsync(sqe, f.fd, IORING_FSYNC_DATASYNC);
  io_uring_sqe_set_data64(sqe, Reactor::JournalTag(&f.fsync_op));
  f.outstanding++;
  f.fsync_batch = batch;
  f.fsync_offset = f.offset;
  f.fsync_wanted = false;
}

void Journal::OnCompletion(Op* op, int res) {
  switch (op->kind) {
    case Op::kWrite:
      OnWrite(*op->file, res);
      break;
    case Op::kFsync:
      OnFsync(*op->file, res);
      break;
    case Op::kOpen:
      if (res < 0) {
        RewriteFail(std::string("cannot create ") + rewrite_->path + ": " + strerror(-res));
        return;
      }
      rewrite_->fd = res;
      {
        // The new file starts with its header and the fencing counters, then the scan.
        std::string head;
        shard::JournalWriter w(&head);
        w.BeginFrame();
        shard::JournalHeader h;
        h.shard = static_cast<uint32_t>(shard_index_);
        h.num_shards = static_cast<uint32_t>(num_shards_);
        // Every part committed before this moment is missing here as a frame but copied by
        // the scan, which starts now: start-up counts it present (journal_load.cc). A fresh
        // reading in ns, not the turn's cached ms, so that it is later than a commit made
        // before and earlier than one made after (Transaction::Release reads the clock too).
        h.created_ns = RealtimeNs();
        w.Header(h);
        if (set_id_) w.DataSet(set_id_);  // the manifest's data set, as in the file it replaces
        w.EndFrame();
        w.BeginFrame();
        for (int d = 0; d < shard_->num_dbs(); d++) {
          uint64_t t = shard_->db(d).last_fencing_token();
          if (t) w.Token(static_cast<uint32_t>(d), t);
        }
        w.EndFrame();
        rewrite_->pending = std::move(head);
        rewrite_->appended_batch = rewrite_->written_batch = rewrite_->synced_batch =
            appended_batch_;
        rewrite_->inflight_batch = appended_batch_;
      }
      scan_db_ = 0;
      scan_cursor_ = 0;
      rw_state_ = RewriteState::kScanning;
      break;
    case Op::kRename:
      if (res < 0) {
        RewriteFail(std::string("cannot rename the rewritten journal: ") + strerror(-res));
        return;
      }
      rw_state_ = RewriteState::kDirSync;
      {
        io_uring_sqe* sqe = Sqe();
        io_uring_prep_fsync(sqe, dir_fd_, 0);
        rw_op_->kind = Op::kDirSync;
        io_uring_sqe_set_data64(sqe, Reactor::JournalTag(rw_op_.get()));
      }
      break;
    case Op::kDirSync:
      if (res < 0)
        LogWarning("fsync of directory %s failed: %s", reactor_->config().dir.c_str(),
                   strerror(-res));
      FinishRewrite();
      break;
  }
}

void Journal::OnWrite(File& f, int res) {
  f.outstanding--;
  f.write_inflight = false;
  if (res < 0) {
    if (res != -EINTR && res != -EAGAIN) {
      if (FailRewriteFile(f, res)) return;  // f may be gone
      f.retry_at_ms = now_ms_ + kRetryMs;
      NoteFailure(-res, false);
    }
  } else {
    size_t n = static_cast<size_t>(res);
    f.offset += n;
    if (n < f.inflight.size()) {
      f.inflight.erase(0, n);  // a short write: the rest goes next (its linked fsync is cancelled)
    } else {
      f.inflight.clear();
      f.written_batch = f.inflight_batch;
      if (&f == main_.get()) NoteSuccess(false);
      if (policy() != Config::Fsync::kAlways) Durable();  // replies wait for this
    }
    if (f.inflight.capacity() > (8u << 20)) std::string().swap(f.inflight);
  }
  if (f.outstanding == 0 && CloseIfRetired(f)) return;
  Pump(f);
}

bool Journal::FailRewriteFile(File& f, int res) {
  if (!rewrite_ || &f != rewrite_.get()) return false;
  if (rw_state_ != RewriteState::kScanning && rw_state_ != RewriteState::kSyncing) return false;
  RewriteFail(std::string("cannot write ") + f.path + ": " + strerror(-res));
  return true;
}

void Journal::NoteFailure(int err, bool fsync) {
  if (error() == 0) {
    LogWarning(
        "shard %d: error %s the journal %s: %s (writes are refused until it works again; "
        "retrying every second)",
        shard_index_, fsync ? "fsyncing" : "writing", path_.c_str(), strerror(err));
  }
  (fsync ? fsync_errno_ : write_errno_) = err;
  stats_.last_write_ok = false;
  // Every batch gathered so far may be missing from the file: output held for it must not leave
  // as it is, and must not wait for a disk that may stay full.
  failed_upto_ = appended_batch_;
  reactor_->server().journal_health().SetFailed(shard_index_, err);
  reactor_->OnJournalFailed();
}

void Journal::NoteSuccess(bool fsync) {
  int before = error();
  (fsync ? fsync_errno_ : write_errno_) = 0;
  if (before == 0 || error() != 0) return;
  LogNotice("shard %d: the journal %s can be written again; writes are accepted again",
            shard_index_, path_.c_str());
  stats_.last_write_ok = true;
  reactor_->server().journal_health().SetHealthy(shard_index_);
}

bool Journal::CloseIfRetired(File& f) {
  for (size_t i = 0; i < retired_.size(); i++) {
    if (retired_[i].get() == &f) {
      close(f.fd);
      retired_.erase(retired_.begin() + static_cast<long>(i));
      return true;
    }
  }
  return false;
}

void Journal::OnFsync(File& f, int res) {
  f.outstanding--;
  if (res == 0) {
    f.synced_batch = std::max(f.synced_batch, f.fsync_batch);
    f.synced_offset = std::max(f.synced_offset, f.fsync_offset);
    stats_.fsyncs++;
    Durable();
    if (&f == main_.get()) NoteSuccess(true);
  } else if (res != -ECANCELED) {
    if (FailRewriteFile(f, res)) return;  // f may be gone
    f.fsync_wanted = true;
    f.retry_at_ms = now_ms_ + kRetryMs;
    NoteFailure(-res, true);
  }
  if (f.outstanding == 0 && CloseIfRetired(f)) return;
  Pump(f);
}

uint64_t Journal::synced_everywhere() const {
  uint64_t s = main_ ? main_->synced_batch : 0;
  if (rewrite_ && rewrite_->fd >= 0) s = std::min(s, rewrite_->synced_batch);
  return s;
}

uint64_t Journal::written_everywhere() const {
  uint64_t s = main_ ? main_->written_batch : 0;
  if (rewrite_ && rewrite_->fd >= 0) s = std::min(s, rewrite_->written_batch);
  return s;
}

uint64_t Journal::durable_batch() const {
  return policy() == Config::Fsync::kAlways ? synced_everywhere() : written_everywhere();
}

uint64_t Journal::HoldBatch() const {
  if (!main_) return 0;
  return std::max(durable_batch(), failed_upto_) >= appended_batch_ ? 0 : appended_batch_;
}

uint64_t Journal::TurnBatch() const {
  if (main_ && !dirty_.empty()) return appended_batch_ + 1;
  return HoldBatch();
}

void Journal::Durable() {
  uint64_t d = synced_everywhere();
  if (!sync_waiters_.empty()) {
    std::vector<std::pair<uint64_t, absl::AnyInvocable<void()>>> still;
    for (auto& [batch, fn] : sync_waiters_) {
      if (batch <= d) {
        fn();
      } else {
        still.emplace_back(batch, std::move(fn));
      }
    }
    sync_waiters_.swap(still);
  }
  RunDurableWaiters();
  reactor_->OnJournalDurable();
}

void Journal::WhenDurable(uint64_t batch, absl::AnyInvocable<void(bool failed)> fn) {
  durable_waiters_.emplace_back(batch, std::move(fn));
  RunDurableWaiters();
}

void Journal::RunDurableWaiters() {
  if (durable_waiters_.empty()) return;
  const uint64_t durable = durable_batch();
  const uint64_t failed = failed_upto_;
  std::vector<std::pair<bool, absl::AnyInvocable<void(bool)>>> ready;
  size_t still = 0;
  for (size_t i = 0; i < durable_waiters_.size(); i++) {
    auto& w = durable_waiters_[i];
    if (w.first <= durable || w.first <= failed) {
      ready.emplace_back(w.first > durable, std::move(w.second));
    } else {
      if (still != i) durable_waiters_[still] = std::move(w);  // (not onto itself)
      still++;
    }
  }
  durable_waiters_.resize(still);
  for (auto& [failed_here, fn] : ready) fn(failed_here);  // (one may add a waiter)
}

void Journal::WhenSynced(absl::AnyInvocable<void()> fn) {
  Materialize(now_ms_);
  if (synced_everywhere() >= appended_batch_) {
    fn();
    return;
  }
  sync_waiters_.emplace_back(appended_batch_, std::move(fn));
  main_->fsync_wanted = true;
  if (rewrite_ && rewrite_->fd >= 0) rewrite_->fsync_wanted = true;
  Pump(*main_);
  if (rewrite_ && rewrite_->fd >= 0) Pump(*rewrite_);
}

void Journal::Tick(int64_t now_ms) {
  now_ms_ = now_ms;
  if (!main_) return;
  RunDurableWaiters();  // (those whose batch failed)
  FollowPolicy();
  if (now_ms >= next_sync_ms_) {
    next_sync_ms_ = now_ms + 1000;
    if (policy() == Config::Fsync::kEverySec) {
      if (main_->synced_batch < main_->appended_batch || main_->synced_offset < main_->size()) {
        main_->fsync_wanted = true;
      }
      if (rewrite_ && rewrite_->fd >= 0) rewrite_->fsync_wanted = true;
    }
  }
  Pump(*main_);
  if (rewrite_ && rewrite_->fd >= 0) Pump(*rewrite_);
  // Grown enough since the last rewrite?
  const Config& c = reactor_->config();
  uint64_t size = main_->size();
  if (rw_state_ == RewriteState::kIdle && c.auto_aof_rewrite_percentage > 0 &&
      now_ms >= next_rewrite_try_ms_ &&
      size >= static_cast<uint64_t>(c.auto_aof_rewrite_min_size) &&
      size * 100 >= stats_.base_size * static_cast<uint64_t>(100 + c.auto_aof_rewrite_percentage)) {
    std::string why;
    StartRewrite(&why);
  }
}

bool Journal::StartRewrite(std::string* why) {
  if (!main_) {
    *why = "the journal is off";
    return false;
  }
  if (rw_state_ != RewriteState::kIdle) {
    *why = "Background append only file rewriting already in progress";
    return false;
  }
  rewrite_ = std::make_unique<File>();
  rewrite_->path = path_ + ".rewrite";
  rewrite_->write_op.file = rewrite_->fsync_op.file = rewrite_.get();
  rw_state_ = RewriteState::kOpening;
  stats_.rewrite_started_ms = MonotonicMs();
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_openat(sqe, AT_FDCWD, rewrite_->path.c_str(),
                       O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  rw_op_->kind = Op::kOpen;
  io_uring_sqe_set_data64(sqe, Reactor::JournalTag(rw_op_.get()));
  LogNotice("shard %d: journal rewrite started (%llu bytes)", shard_index_,
            static_cast<unsigned long long>(main_->size()));
  return true;
}

void Journal::RewriteStep(int64_t now_ms) {
  if (rw_state_ == RewriteState::kScanning) {
    if (rewrite_->pending.size() + rewrite_->inflight.size() > kRewriteBacklog) return;
    frame_.clear();
    shard::JournalWriter w(&frame_);
    w.BeginFrame();
    // About kScanStep keys per turn; a db that ends early (an empty one, most of the 16) hands
    // the rest of the step to the next, so an idle rewrite does not take a turn per db.
    size_t copied = 0;
    while (copied < kScanStep) {
      shard::ScanResult r = shard_->db(scan_db_).Scan(scan_cursor_, "*", kScanStep,
                                                      shard::ValueType::kNone, now_ms);
      // A transaction still in flight holds some of these keys: their state may yet be dropped
      // at start-up with the transaction, so it must not be copied untagged. Try again next
      // turn.
      if (!tx_dirty_.empty() && ScanBlockedByTx(scan_db_, r.keys)) break;
      for (const std::string& key : r.keys) {
        if (auto snap = shard_->db(scan_db_).Snapshot(key, now_ms)) {
          w.Put(static_cast<uint32_t>(scan_db_), key, *snap);
        }
      }
      copied += r.keys.size();
      scan_cursor_ = r.cursor;
      if (scan_cursor_ != 0) break;  // this db goes on next turn
      if (++scan_db_ >= shard_->num_dbs()) {
        if (w.EndFrame()) rewrite_->pending += frame_;
        // The base is complete: a file cut before this point is damage (journal_load.cc).
        frame_.clear();
        w.BeginFrame();
        w.BaseEnd();
        w.EndFrame();
        rewrite_->pending += frame_;
        rw_state_ = RewriteState::kSyncing;
        // A transaction in flight during the scan may have left its uncommitted changes in it,
        // and the keys it deleted out of it: the new file takes over only once it has settled
        // (its frame, in both files, then says what became of those keys). One that settled
        // before now has; those still unsettled are these.
        scan_txs_.clear();
        for (const auto& [id, list] : tx_dirty_) scan_txs_.push_back(id);
        scan_end_offset_ = rewrite_->size();
        rewrite_->fsync_wanted = true;
        return;
      }
    }
    if (w.EndFrame()) rewrite_->pending += frame_;
    return;
  }
  if (rw_state_ == RewriteState::kSyncing) {
    if (rewrite_->synced_offset < scan_end_offset_) {
      if (rewrite_->outstanding == 0 && rewrite_->inflight.empty() && rewrite_->pending.empty()) {
        rewrite_->fsync_wanted = true;
      }
      return;
    }
    if (!ScanTxsSettled()) return;  // checked again at the end of each turn
    rw_state_ = RewriteState::kRenaming;
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_renameat(sqe, AT_FDCWD, rewrite_->path.c_str(), AT_FDCWD, path_.c_str(), 0);
    rw_op_->kind = Op::kRename;
    io_uring_sqe_set_data64(sqe, Reactor::JournalTag(rw_op_.get()));
  }
}

bool Journal::ScanTxsSettled() {
  scan_txs_.erase(std::remove_if(scan_txs_.begin(), scan_txs_.end(),
                                 [&](uint64_t id) { return !tx_dirty_.contains(id); }),
                  scan_txs_.end());
  return scan_txs_.empty();
}

void Journal::FinishRewrite() {
  // The new file has every key's latest state and is under the journal's name: it takes over.
  // The old one (already unlinked by the rename) closes once nothing is in flight on it.
  std::unique_ptr<File> old = std::move(main_);
  main_ = std::move(rewrite_);
  main_->path = path_;
  if (old->outstanding > 0) {
    old->pending.clear();
    retired_.push_back(std::move(old));
  } else {
    close(old->fd);
  }
  rw_state_ = RewriteState::kIdle;
  stats_.rewrites++;
  stats_.last_rewrite_ok = true;
  stats_.last_rewrite_ms = MonotonicMs() - stats_.rewrite_started_ms;
  stats_.base_size = main_->size();
  LogNotice("shard %d: journal rewrite done (%llu bytes, %lld ms)", shard_index_,
            static_cast<unsigned long long>(stats_.base_size),
            static_cast<long long>(stats_.last_rewrite_ms));
  reactor_->server().NoteSaved(shard_index_, reactor_->now_ms() / 1000);
  Durable();
  RewriteEnded(true);
}

void Journal::WhenRewritten(absl::AnyInvocable<void(bool)> fn) {
  rewrite_waiters_.push_back(std::move(fn));
}

void Journal::RewriteEnded(bool ok) {
  std::vector<absl::AnyInvocable<void(bool)>> waiters;
  waiters.swap(rewrite_waiters_);
  for (auto& fn : waiters) fn(ok);
}

void Journal::RewriteFail(const std::string& why) {
  LogWarning("shard %d: journal rewrite failed: %s", shard_index_, why.c_str());
  stats_.last_rewrite_ok = false;
  rw_state_ = RewriteState::kIdle;
  next_rewrite_try_ms_ = now_ms_ + 5000;
  if (rewrite_) {
    if (rewrite_->fd >= 0) {
      unlink(rewrite_->path.c_str());
      if (rewrite_->outstanding > 0) {
        rewrite_->pending.clear();
        retired_.push_back(std::move(rewrite_));
      } else {
        close(rewrite_->fd);
      }
    }
    rewrite_.reset();
  }
  Durable();
  RewriteEnded(false);
}

JournalStats Journal::Stats() const {
  JournalStats s = stats_;
  s.rewrite_in_progress = rw_state_ != RewriteState::kIdle;
  if (main_) {
    s.current_size = main_->size();
    s.buffer_length = main_->pending.size() + main_->inflight.size();
    s.pending_fsync = appended_batch_ - std::min(appended_batch_, main_->synced_batch);
  }
  return s;
}

void Journal::Shutdown() {
  if (!main_) return;
  // Let what is in flight finish (the loop has stopped: reap completions here).
  io_uring* ring = reactor_->ring();
  auto busy = [&] {
    bool b = main_->outstanding > 0 || rw_state_ == RewriteState::kOpening ||
             rw_state_ == RewriteState::kRenaming || rw_state_ == RewriteState::kDirSync ||
             (rewrite_ && rewrite_->outstanding > 0);
    for (auto& f : retired_) b = b || f->outstanding > 0;
    return b;
  };
  while (busy()) {
    io_uring_submit(ring);
    io_uring_cqe* cqe = nullptr;
    if (io_uring_wait_cqe(ring, &cqe) < 0) break;
    reactor_->HandleCqeDuringShutdown(cqe);
    io_uring_cqe_seen(ring, cqe);
  }
  if (rewrite_) RewriteFail("the server is shutting down");
  // The completions reaped above include reads from clients, whose commands ran (and whose
  // replies leave after this): their changes go in too.
  Materialize(now_ms_);
  // The rest, written and synced in place.
  File& f = *main_;
  std::string rest = f.inflight + f.pending;
  size_t done = 0;
  while (done < rest.size()) {
    ssize_t n =
        pwrite(f.fd, rest.data() + done, rest.size() - done, static_cast<off_t>(f.offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      LogWarning("error writing the journal %s at shutdown: %s", f.path.c_str(), strerror(errno));
      break;
    }
    done += static_cast<size_t>(n);
  }
  const int write_err = done == rest.size() ? 0 : errno;
  f.offset += done;
  f.inflight.clear();
  f.pending.clear();
  if (write_err == 0) f.written_batch = appended_batch_;
  if (fdatasync(f.fd) != 0) {
    NoteFailure(errno, true);
  } else if (write_err == 0) {
    f.synced_batch = appended_batch_;
    f.synced_offset = f.offset;
  }
  // What did not reach the file is never acknowledged: its held replies leave as errors.
  if (write_err != 0) NoteFailure(write_err, false);
  Durable();
}

}  // namespace deadbolt::server

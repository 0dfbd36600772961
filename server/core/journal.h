#pragma once
// A shard's journal: the append-only file that brings its keys back after a crash or a restart
// (--appendonly yes). The bytes are shard/journal_format/journal_format.h's; this file does the
// I/O.
//
// How a write becomes durable:
//  1. The Db tells the journal's observer which keys changed (never expiry: a replay skips
//     expired keys by itself).
//  2. At the end of each reactor turn, before any reply leaves, EndTurn() writes each changed
//     key's whole state (or its deletion) into one frame, numbered as a "batch", and starts an
//     io_uring write of everything gathered so far. With --appendfsync always the write is linked
//     to an fdatasync, and only one write+fsync is in flight per file, so one fsync covers every
//     turn that gathered while the previous one ran (group commit).
//  3. With `always`, the reactor holds back output produced while a batch is not yet on disk:
//     replies to its clients and messages to other reactors (a reply to a forwarded command is
//     one). They leave once durable_batch() reaches the batch they waited for. So no client sees
//     a write, or anything that read it, before it is on disk. `everysec` fsyncs once a second,
//     `no` leaves it to the kernel; neither holds output.
//
// A collection of kEditMinElements or more changed in place (RPUSH, LPOP, HSET, SREM, ...; the
// Db tells the observer through KeyObserver::OnKeyEdited) is written as the change instead, a
// kEdit record encoded when the change happens, unless the key also changed otherwise in the
// same frame (its whole state then includes the edit) or an unsettled transaction other than
// the running one changed it (NoteEdited says why).
//
// A transaction (Transaction) writes its changes on each shard as one frame opened by a kTx
// record, so that a crash cannot bring back part of it (see EnterTx and journal_load.cc).
//
// Rewrite (BGREWRITEAOF, or when the file has grown past auto-aof-rewrite-min-size and by
// auto-aof-rewrite-percentage since the last one): a new file is written beside the old one from
// a SCAN of the live keyspace, a few hundred keys per turn, while every new frame goes to both
// files. Because each record is a key's whole state and both files receive frames in the order
// they happen, the new file ends up with the latest state of every key. (An edit of a key the
// scan has not reached applies, on replay, to the key's state in the new file so far: exact, if
// a whole state was written since the rewrite began, or else missing, and the edit is skipped;
// the scan's kPut of the key, later in the file, includes it.) Once the scan's bytes are
// on disk it is renamed over the old file, the directory is fsynced, and the new file takes over.
// While the two files are both written, a batch counts as durable only once it is on disk in
// both, so a crash at any point finds every acknowledged write under the journal's name. The new
// file's header says when it started receiving frames (created_ns, a fresh clock reading when
// the open completes): a transaction part committed before then is not in it as a frame, but
// the scan, which starts after, copies its effects; start-up counts such a part as present.
// A transaction still in flight while the scan runs may have deleted a key the scan has not
// reached: the scan never sees it, so the new file has neither the key's old state nor, until
// the transaction commits, its deletion. The new file therefore replaces the old one only once
// every transaction with changes here that was unsettled when the scan ended has settled (its
// tagged frame is on disk in both files, and so are its other parts).

#include <absl/container/flat_hash_map.h>
#include <absl/functional/any_invocable.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/base/config.h"
#include "shard/db.h"
#include "shard/journal_format/journal_format.h"
#include "shard/shard.h"

struct io_uring;
struct io_uring_sqe;

namespace deadbolt::server {

class Reactor;

// <dir>/deadbolt-journal-<shard>-of-<num_shards>.aof
std::string JournalPath(const std::string& dir, int shard, int num_shards);

// Start-up, main thread, before any reactor runs: replays every journal file found in
// config.dir into `shards` (one thread per shard), whatever the number of shards that wrote
// them, then writes each shard a fresh journal for the current layout and removes the others.
// Keys whose time has passed are skipped. Returns a message for the user when the server must
// not start (a damaged file, an unreadable directory).
std::optional<std::string> LoadJournals(const Config& config,
                                        const std::vector<shard::Shard*>& shards);

// INFO persistence's view of one journal (copied on its reactor's thread).
struct JournalStats {
  bool rewrite_in_progress = false;
  bool rewrite_scheduled = false;
  uint64_t current_size = 0;  // bytes in the file, plus those waiting to be written
  uint64_t base_size = 0;     // size after the last rewrite (or at start)
  uint64_t buffer_length = 0;
  uint64_t rewrites = 0;
  int64_t last_rewrite_ms = -1;  // how long the last rewrite took
  int64_t rewrite_started_ms = 0;
  bool last_write_ok = true;
  bool last_rewrite_ok = true;
  uint64_t fsyncs = 0;
  uint64_t batches = 0;
  uint64_t pending_fsync = 0;  // batches written but not yet on disk
  uint64_t edit_records = 0;   // kEdit records written (collections changed in place)
};

// Owned by its reactor's thread, which alone calls it (its io_uring completions come back
// through Reactor::HandleCqe).
class Journal {
 public:
  // An operation in flight; its address (8-aligned) is the io_uring user_data.
  struct Op;
  struct File;

  Journal(Reactor* reactor, shard::Shard* shard, int shard_index, int num_shards);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Reactor thread, at start: opens the file LoadJournals wrote. Returns an error for the user.
  std::optional<std::string> Open(int64_t now_ms);

  // End of a turn: the turn's changes become a frame; writes and fsyncs are started.
  void EndTurn(int64_t now_ms);
  // Once a second (and on the reactor's tick): everysec's fsync, rewrite triggers, retries.
  void Tick(int64_t now_ms);
  // A completion for one of this journal's operations.
  void OnCompletion(Op* op, int res);

  // The batch that output produced now must wait for, or 0 when nothing is waiting. A reply
  // may tell of a write only once that write is in the journal: on disk with `always`, written
  // to the file (the kernel has it) with `everysec` and `no`, so that a write whose journal write
  // fails is never acknowledged. Batches that failed (failed_batch()) hold nothing more.
  uint64_t HoldBatch() const;
  // The same during a turn: the batch the turn's changes so far will be written in (EndTurn
  // makes it), for output that may leave in a later turn (a reply slot behind earlier ones).
  uint64_t TurnBatch() const;
  // The newest batch output may be released for (on disk with `always`, written otherwise).
  uint64_t durable_batch() const;
  // When the journal cannot be written (its last write or fsync failed): the errno, else 0.
  // The reactor refuses writes meanwhile (JournalHealth) and retries every second.
  int error() const { return write_errno_ ? write_errno_ : fsync_errno_; }
  // Every batch up to this one was pending when a write or fsync failed: output held for them
  // leaves with its replies turned into errors (Reactor::FailHeldOutput), never as they were.
  uint64_t failed_batch() const { return failed_upto_; }
  // Calls fn once everything journalled so far is on disk (WAITAOF), starting an fsync if
  // needed (whatever the policy).
  void WhenSynced(absl::AnyInvocable<void()> fn);
  // Calls fn(false) once `batch` is on disk as output needs it (durable_batch()), or fn(true)
  // once a write or fsync failed while it was pending (failed_batch(); noticed on the next
  // Tick). Called from the journal's completions: fn should only post work for the loop.
  void WhenDurable(uint64_t batch, absl::AnyInvocable<void(bool failed)> fn);

  // A transaction's work on this shard (Transaction::Hop, EXEC's local commands): the changes
  // made between EnterTx and LeaveTx are kept apart, and CommitTx (Transaction::Release) writes
  // them as one frame opened by a kTx record naming the transaction, its participants and
  // commit_ns. A replay applies that frame only if every participant's part is on disk or was
  // absorbed by a rewrite of that participant's file (journal_load.cc). With `writes`, CommitTx
  // writes the frame even if this shard changed nothing, so the others' parts count as
  // complete. EnterTx returns what LeaveTx restores (a fan-out inside EXEC enters the same id
  // again). Until SettleTx (every part on disk, the locks released) a rewrite's scan does not
  // pass the transaction's keys: it must not copy, untagged, a state that a replay may still
  // drop.
  uint64_t EnterTx(uint64_t id);
  void LeaveTx(uint64_t prev);
  uint64_t current_tx() const { return cur_tx_; }
  void CommitTx(uint64_t id, const std::vector<uint32_t>& participants, int64_t commit_ns,
                bool writes);
  void SettleTx(uint64_t id);
  // Whether the transaction changed anything here so far (its changes wait for CommitTx).
  bool HasTxChanges(uint64_t id) const { return tx_dirty_.contains(id); }

  // BGREWRITEAOF, BGSAVE, SAVE. False (with a reason in *why) when one is already running.
  bool StartRewrite(std::string* why);
  bool rewriting() const { return rw_state_ != RewriteState::kIdle; }
  // SAVE: fn(true) once the running rewrite has replaced the journal, fn(false) if it fails.
  // Only while rewriting(); dropped uncalled at shutdown.
  void WhenRewritten(absl::AnyInvocable<void(bool)> fn);
  JournalStats Stats() const;

  // Loop exit: waits for operations in flight, writes and fsyncs what is left. Blocking.
  void Shutdown();

 private:
  class Observer;
  friend class Observer;
  enum class RewriteState : uint8_t { kIdle, kOpening, kScanning, kSyncing, kRenaming, kDirSync };
  struct Dirty {
    int db;
    bool flush;  // FLUSHDB of db (key unused)
    std::string key;
    // Non-empty: an element-level change (KeyEdit), as its encoded kEdit record, written as it
    // is unless the key changed otherwise in the same frame. Empty: the key's state is written.
    std::string edit;
  };
  // A collection smaller than this after a change is written whole (a kPut): an edit record
  // pays only where the whole collection would cost many times its bytes.
  static constexpr size_t kEditMinElements = 32;

  void ReadDataSet();   // set_id_ from the file's first frame
  void FollowPolicy();  // picks up CONFIG SET appendfsync
  void NoteChanged(int db, std::string_view key);
  void NoteEdited(int db, std::string_view key, const shard::KeyEdit& edit);
  // Whether a transaction other than the running one, not yet settled, changed the key.
  bool InOtherTx(int db, std::string_view key) const;
  void NoteFlush(int db);
  void Materialize(int64_t now_ms);
  // Writes `dirty` (and moved fencing counters) as one frame into the pending bytes, opened by
  // a kTx record when `tag` is given. False if the frame came out empty.
  bool WriteFrame(std::vector<Dirty>& dirty, const shard::TxTag* tag, bool even_if_empty,
                  int64_t now_ms);
  void Pump(File& f);
  bool SubmitWrite(File& f);
  void SubmitFsync(File& f, uint64_t batch);
  void OnWrite(File& f, int res);
  void OnFsync(File& f, int res);
  // A replaced file is closed once nothing is in flight on it. True if f was one (and is gone).
  bool CloseIfRetired(File& f);
  void Durable();  // durable_batch() may have moved: release waiters
  void RunDurableWaiters();
  std::vector<std::pair<uint64_t, absl::AnyInvocable<void(bool)>>> durable_waiters_;
  void RewriteStep(int64_t now_ms);
  void RewriteFail(const std::string& why);
  void FinishRewrite();
  io_uring_sqe* Sqe();
  uint64_t synced_everywhere() const;
  uint64_t written_everywhere() const;
  // A write or fsync of the journal failed with err / succeeded: health, INFO, the log.
  void NoteFailure(int err, bool fsync);
  void NoteSuccess(bool fsync);
  // A write or fsync error on the file a rewrite is writing: abandons the rewrite, as long as
  // it has not started replacing the journal. False if it has (the error is the journal's).
  bool FailRewriteFile(File& f, int res);
  Config::Fsync policy() const;
  Config::Fsync followed_policy_ = Config::Fsync::kEverySec;  // FollowPolicy's last look

  Reactor* reactor_;
  shard::Shard* shard_;
  int shard_index_;
  int num_shards_;
  std::string path_;
  uint64_t set_id_ = 0;  // the data set (journal manifest) the file belongs to; 0: none
  int dir_fd_ = -1;
  int64_t now_ms_ = 0;

  std::vector<std::unique_ptr<Observer>> observers_;  // one per db
  std::vector<Dirty> dirty_;
  uint64_t cur_tx_ = 0;  // EnterTx..LeaveTx: changes go to tx_dirty_[cur_tx_]
  absl::flat_hash_map<uint64_t, std::vector<Dirty>> tx_dirty_;  // until SettleTx
  bool ScanBlockedByTx(int db, const std::vector<std::string>& keys) const;
  // Transactions with changes here still unsettled when the rewrite's scan ended: the new file
  // replaces the old one only once each has settled (RewriteStep).
  std::vector<uint64_t> scan_txs_;
  bool ScanTxsSettled();
  std::vector<uint64_t> journalled_tokens_;  // per db: last fencing token written
  std::string frame_;                        // scratch
  shard::KeyView view_;                      // scratch

  uint64_t appended_batch_ = 0;  // batches numbered from 1
  std::unique_ptr<File> main_;
  std::unique_ptr<File> rewrite_;
  std::vector<std::unique_ptr<File>> retired_;  // replaced files with operations still in flight
  std::vector<std::pair<uint64_t, absl::AnyInvocable<void()>>> sync_waiters_;
  std::vector<absl::AnyInvocable<void(bool)>> rewrite_waiters_;
  void RewriteEnded(bool ok);  // calls rewrite_waiters_

  RewriteState rw_state_ = RewriteState::kIdle;
  std::unique_ptr<Op> rw_op_;  // open / rename / dir fsync
  int scan_db_ = 0;
  uint64_t scan_cursor_ = 0;
  uint64_t scan_end_offset_ = 0;
  int64_t next_rewrite_try_ms_ = 0;

  JournalStats stats_;
  int64_t next_sync_ms_ = 0;
  int write_errno_ = 0;  // the last write failed with this
  int fsync_errno_ = 0;  // the last fsync failed with this
  uint64_t failed_upto_ = 0;
};

}  // namespace deadbolt::server

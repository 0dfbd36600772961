#pragma once
// The bytes of a shard's journal (append-only file): how changes are framed, encoded and read
// back. Pure functions over memory; server/core/journal* does the file I/O.
//
// A journal file is a sequence of frames. A frame is
//
//   [u32 length][u32 length ^ kFrameLengthCheck][u32 checksum][payload: `length` bytes]
//
// little endian, with checksum = the low 32 bits of XXH3-64 of the payload. A payload holds
// one or more records written together: one reactor turn's changes, so that the effects of one
// command (or one transaction) on a shard come back whole or not at all. The first frame of a
// file holds a single kHeader record.
//
// Records mostly say what a key IS after a change, not how it got there: a kPut carries the
// key's whole value with its expiry as an absolute unix time, so a replay never extends a lease.
// Expiry itself is not journalled: a key whose time has passed is skipped on load. The one
// exception is kEdit, an element-level change to a large collection (the elements pushed, the
// fields set), which a replay applies to the key's state before it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shard/db.h"
#include "shard/shard.h"

namespace deadbolt::shard {

inline constexpr uint32_t kJournalVersion = 1;
inline constexpr uint32_t kFrameLengthCheck = 0x5a17db0cu;
inline constexpr size_t kFrameHeaderSize = 12;
// A frame longer than this is damage (no single record comes near it: values are limited to
// proto-max-bulk-len, 512 MB by default, and a frame holds one turn's changes).
inline constexpr uint32_t kMaxFrameLength = 0x7fffffffu;

enum class RecordKind : uint8_t {
  kHeader = 1,   // which shard of how many wrote this file
  kPut = 2,      // db, key, its value, expiry and lock record
  kDel = 3,      // db, key: gone
  kToken = 4,    // db, the last fencing token handed out (Db::last_fencing_token)
  kFlushDb = 5,  // db: every key of the db is gone
  // Opens a frame holding one shard's part of a transaction: (run nonce, id) names it,
  // `participants` are the shards (of the writing layout) that took part, `commit_ns` is when
  // the coordinator started committing it (unix ns, before any part was written). A replay
  // applies the frame only if every participant's part is on disk, or was absorbed by a rewrite
  // of that participant's file that began receiving frames at or after commit_ns (see
  // server/core/journal_load.cc). A `carried` record (written at start-up into a shard's fresh
  // journal, alone in its frame) says that the shard's part of that transaction was replayed
  // and is in the file's keys: it counts as the part for the others, and changes nothing.
  kTx = 6,
  // In a file's first frame, after kHeader: the data set (a random id kept for the life of a
  // --dir, also in the manifest) that the file belongs to. Files written before the manifest
  // existed have none.
  kDataSet = 7,
  // Alone in its frame: everything before it is the file's base (a start-up's fresh file, or a
  // rewrite's scan), complete. A file with a kDataSet record but no kBaseEnd was cut inside its
  // base: not a crash (a base is fsynced before the file takes the journal's name) but damage.
  kBaseEnd = 8,
  // db, key, an element-level change to the collection the key holds (KeyEdit): written for
  // large collections instead of a kPut of all their elements. Applied to the key's state
  // before it, it gives the state after it, so unlike kPut it must be applied exactly once, in
  // order. A replay that meets one for a missing key skips it: the key's time has passed (a
  // later kPut would bring it back whole), or, in a file a rewrite wrote, the rewrite's scan
  // had not reached the key yet and its kPut follows.
  kEdit = 9,
};

// A kEdit record's change, decoded (KeyEdit's fields, with the items' bytes in the record).
struct JournalEdit {
  KeyEdit::Op op = KeyEdit::Op::kListPush;
  ListEnd end = ListEnd::kRight;
  uint64_t first = 0;
  uint64_t last = 0;
  std::vector<std::string_view> items;
  std::vector<double> scores;  // kZSetSet
};

struct TxTag {
  uint64_t nonce = 0;  // random per server run
  uint64_t id = 0;     // unique within the run
  int64_t commit_ns = 0;
  std::vector<uint32_t> participants;  // shard indexes, ascending
  bool carried = false;
};

struct JournalHeader {
  uint32_t version = kJournalVersion;
  uint32_t shard = 0;
  uint32_t num_shards = 1;
  int64_t created_ns = 0;  // unix ns (ms in files written before kTx existed: smaller)
};

// One decoded record. For kPut, `value` owns a copy of the key's state (including the lock
// record, KeySnapshot::lock_token / lock_holds); `key` points into the parsed bytes.
struct JournalRecord {
  RecordKind kind = RecordKind::kHeader;
  JournalHeader header;         // kHeader
  uint32_t db = 0;              // kPut, kDel, kToken, kFlushDb, kEdit
  std::string_view key;         // kPut, kDel, kEdit
  KeySnapshot value;            // kPut
  JournalEdit edit;             // kEdit
  uint64_t token = 0;           // kToken
  uint64_t set_id = 0;          // kDataSet
  TxTag tx;                     // kTx
  bool first_in_frame = false;  // set by ScanJournal on each frame's first record
};

// Builds frames at the end of a string. Single-threaded; reusable.
//
//   JournalWriter w(&buf);
//   w.BeginFrame(); w.Put(0, "lock:1", snap); w.Del(0, "lock:2"); w.EndFrame();
//
// EndFrame of a frame with no record removes the frame again and returns false.
class JournalWriter {
 public:
  explicit JournalWriter(std::string* out) : out_(out) {}
  void BeginFrame();
  bool EndFrame();
  bool in_frame() const { return frame_start_ != kNoFrame; }
  size_t records_in_frame() const { return records_; }
  // Bytes in the open frame so far (a writer splits a turn's changes before kMaxFrameLength).
  size_t frame_bytes() const { return in_frame() ? out_->size() - frame_start_ : 0; }

  void Header(const JournalHeader& h);
  void Put(uint32_t db, std::string_view key, const KeySnapshot& value);
  void Put(uint32_t db, std::string_view key, const KeyView& value);
  void Del(uint32_t db, std::string_view key);
  // A record EncodeEdit wrote earlier.
  void Append(std::string_view record);
  void Token(uint32_t db, uint64_t token);
  void FlushDb(uint32_t db);
  void Tx(const TxTag& tag);
  void DataSet(uint64_t set_id);
  void BaseEnd();

 private:
  static constexpr size_t kNoFrame = ~size_t{0};
  std::string* out_;
  size_t frame_start_ = kNoFrame;
  size_t records_ = 0;
};

// The outcome of reading a journal's bytes.
struct JournalScan {
  enum class Status : uint8_t {
    kOk,        // every byte belonged to a whole, valid frame
    kTornTail,  // the last frame is cut short at the end of the file (a crash in mid-write)
    kDamaged,   // a bad frame that is not a cut (see ScanJournal): nothing from bad_offset on
                // was delivered
    kStopped,   // the callback returned false
  };
  Status status = Status::kOk;
  size_t good_bytes = 0;  // the prefix made of whole valid frames (all delivered)
  size_t bad_offset = 0;  // kTornTail / kDamaged: where the bad frame starts
  size_t frames = 0;      // frames delivered
  size_t records = 0;     // records delivered
  std::string error;      // kDamaged / kTornTail: what was wrong, for the log
};

// Reads frames from `bytes` and calls `on_record` for each record of each valid frame, in order.
// A frame's records are delivered only once the whole frame has been checked. Zero bytes at the
// end of the file count as never written (a crash can leave the size on disk ahead of the data).
// Classification of a bad frame starting at offset o:
//   - kTornTail when the frame is cut short by the end of the file: nothing but zeros is left,
//     fewer than kFrameHeaderSize bytes are left, the header is bad but only its first bytes are
//     non-zero, or a valid header's payload runs past the end. Also when the checksum fails and
//     the frame's end is zeros from a sector boundary (kZeroFillAlign) to the end of the file:
//     a write whose size reached the disk before its data;
//   - kDamaged otherwise: a frame whose length is whole but whose checksum fails (a bit flip
//     in the last frame too), a bad header with data after it, an unknown record kind, a
//     record cut short inside a frame whose checksum holds.
// With kStopped, good_bytes and frames include the frame whose record stopped the scan.
JournalScan ScanJournal(std::string_view bytes,
                        const std::function<bool(const JournalRecord&)>& on_record);

// Unwritten sectors read back as zeros from a multiple of this.
inline constexpr size_t kZeroFillAlign = 512;

// Appends a kEdit record of `edit` to the key to *out (for JournalWriter::Append): the journal
// encodes an edit when it happens, as its items are views valid only then.
void EncodeEdit(std::string* out, uint32_t db, std::string_view key, const KeyEdit& edit);

// Bytes that Put would write for the key (for sizing buffers and rewrite triggers).
size_t JournalPutSize(std::string_view key, const KeySnapshot& value);

// Applies one record to a shard's databases (replay). kPut replaces the key (a put whose expiry
// is at or before now_ms deletes it instead); kToken advances the db's fencing counter; a kPut
// with a lock record restores it and advances the counter past its token; kEdit changes the
// key's collection in place (a missing key: skipped; kEdit's comment says why); kHeader is
// ignored.
// A db index the shard does not have is ignored (returns false).
bool ApplyJournalRecord(const JournalRecord& r, Shard& shard, int64_t now_ms);

// The journal manifest, <dir>/deadbolt-journal.manifest: which files make up the data, so that
// a missing, emptied or replaced file refuses the start instead of losing its keys (see
// server/core/journal_load.cc). Text, one item a line, ending in a checksum of the lines before it:
//
//   deadbolt-journal-manifest 1
//   set 9f0c3a5e61d2b7a4
//   layout 2
//   file 0 deadbolt-journal-0-of-2.aof
//   file 1 deadbolt-journal-1-of-2.aof
//   check 5d0e8b9a0c1f2e3d
struct JournalManifest {
  uint64_t set_id = 0;             // every listed file's kDataSet record names it
  uint32_t num_shards = 0;         // the layout
  std::vector<std::string> files;  // shard i's file name at i
};

std::string FormatJournalManifest(const JournalManifest& m);
// nullopt, with the reason in *error, when the text is not one whole manifest.
std::optional<JournalManifest> ParseJournalManifest(std::string_view text, std::string* error);

}  // namespace deadbolt::shard

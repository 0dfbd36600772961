#pragma once
// One logical database (SELECT n) of one shard: keys, values and expiry.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shard/base/op_status.h"
#include "shard/types/stream_value.h"
#include "shard/types/value_type.h"

namespace deadbolt::shard {

// Options of SET (and of SETNX, SETEX, PSETEX, GETSET, MSET, which are SETs with fixed options).
struct SetOptions {
  // kIfEq..kIfDne: compare-and-set on the current string value (Redis 8.4): IFEQ/IFDEQ need the
  // key to hold `cond_value` (or a value whose digest is `cond_value`) and never create it;
  // IFNE/IFDNE need it to hold something else and create a missing key. Digests are compared
  // as text, ignoring ASCII case, with the 16 lower-case hex digits of StringDigest.
  enum class Cond : uint8_t { kNone, kNX, kXX, kIfEq, kIfNe, kIfDeq, kIfDne };
  enum class Expire : uint8_t { kClear, kKeep, kAt };  // kClear: a plain SET drops the old TTL
  Cond cond = Cond::kNone;
  bool get = false;  // GET: hand back the old value
  Expire expire = Expire::kClear;
  int64_t expire_at_ms = 0;  // absolute unix ms, with Expire::kAt
  // With kIfEq..kIfDne: the value or the digest compared (a view; not owned).
  std::string_view cond_value;
};

// DIGEST of a string value: its XXH3-64 hash (seed 0). DIGEST shows it as 16 lower-case hex
// digits.
uint64_t StringDigest(std::string_view value);

// A hash's pairs as (field, value) views (valid until the next mutating call on the Db).
using HashPairs = std::vector<std::pair<std::string_view, std::string_view>>;

// One HSCAN step.
struct HScanResult {
  uint64_t cursor = 0;  // 0 when the scan is complete
  HashPairs pairs;
};

// --- sorted sets (db_zset.cc) ---

// ZADD's flags (ZINCRBY is ZADD INCR). The caller has refused Redis's bad combinations.
struct ZAddOptions {
  bool nx = false;
  bool xx = false;
  bool gt = false;
  bool lt = false;
  bool incr = false;
};

struct ZAddResult {
  int64_t added = 0;
  int64_t updated = 0;  // members whose score changed (CH counts them)
  // INCR: the new score; nullopt when NX/XX/GT/LT stopped it (ZADD then replies nil).
  std::optional<double> score;
};

// A range of a sorted set, as ZRANGE and its relatives name one.
struct ZRangeSpec {
  enum class By : uint8_t { kRank, kScore, kLex };
  // One end of a BYLEX range: "-", "+", "[member" or "(member".
  struct LexBound {
    enum class Kind : uint8_t { kMinusInf, kPlusInf, kInclusive, kExclusive };
    Kind kind = Kind::kMinusInf;
    std::string_view member;  // a view: the caller keeps it alive
  };
  By by = By::kRank;
  bool rev = false;  // walk from the highest; a BYSCORE/BYLEX range is still given as min, max
  int64_t start = 0;  // kRank: Redis's indexes (negative from the end)
  int64_t stop = -1;
  double min = 0;  // kScore
  double max = 0;
  bool min_exclusive = false;
  bool max_exclusive = false;
  LexBound lex_min;  // kLex
  LexBound lex_max;
  int64_t offset = 0;  // LIMIT (kScore, kLex): a negative offset selects nothing
  int64_t limit = -1;  // negative: no limit
};

// Members with their scores, as views into the sorted set (valid until the next mutating call).
// Copies: a packed set rebuilds a UUID member's text as it reads it (shard/types/packed_growth.h).
using ZMembers = std::vector<std::pair<std::string, double>>;
// The same, owned (members that have left the set: ZPOPMIN, a store's input).
using ZOwnedMembers = std::vector<std::pair<std::string, double>>;

// One ZSCAN step.
struct ZScanResult {
  uint64_t cursor = 0;  // 0 when the scan is complete
  ZMembers members;
  // True when the set is packed: Redis 7.0 then replies scores as its listpack holds them
  // (integers as integers, else %.17g); a large set's as %.17Lf without trailing zeros.
  bool packed = true;
};

struct SetResult {
  bool written = false;
  std::optional<std::string> old_value;  // with SetOptions::get, if the key held a string
};

// NX | XX | GT | LT of EXPIRE and friends.
enum class ExpireCond : uint8_t { kNone, kNX, kXX, kGT, kLT };

// GETEX's change to the TTL.
struct ExpireChange {
  enum class Kind : uint8_t { kNone, kPersist, kAt };
  Kind kind = Kind::kNone;
  int64_t at_ms = 0;
};

// A score as KeySnapshot keeps it (8 bytes, little endian), and back.
std::string ZScoreBytes(double score);
double ZScoreFromBytes(std::string_view bytes);  // bytes.size() == 8
// One SSCAN step.
struct SScanResult {
  uint64_t cursor = 0;  // 0 when the scan is complete
  std::vector<std::string> members;
};

// --- streams (db_stream.cc) ---
// One entry read out of a stream: its ID and its fields and values (field, value, ...).
struct StreamEntryOut {
  StreamId id;
  std::vector<std::string> fields;
  bool deleted = false;  // a pending entry read from a PEL whose entry is gone (XREADGROUP)
};
// XPENDING's summary, and one pending entry.
struct XPendingSummary {
  uint64_t count = 0;
  StreamId first, last;
  std::vector<std::pair<std::string, uint64_t>> consumers;  // with entries pending, by name
};
struct XPendingEntry {
  StreamId id;
  std::string consumer;
  int64_t idle_ms = 0;
  uint64_t deliveries = 0;
};
// XCLAIM's options, checked by the caller. delivery_ms: the new delivery time (unix ms), or -1
// for now; retry_count -1: counted up unless justid.
struct XClaimOptions {
  int64_t min_idle_ms = 0;
  int64_t delivery_ms = -1;
  int64_t retry_count = -1;
  bool force = false;
  bool justid = false;
  StreamId last_id;
};
struct XAutoClaimResult {
  StreamId cursor;                      // where the next call starts; 0-0 at the end
  std::vector<StreamEntryOut> claimed;  // (just the IDs with justid)
  std::vector<StreamId> deleted;        // pending entries whose entry was gone: dropped
};
// XINFO STREAM, XINFO GROUPS, XINFO CONSUMERS.
struct XStreamInfo {
  uint64_t length = 0, groups = 0, entries_added = 0;
  StreamId last_id, max_deleted, first_recorded;
  std::optional<StreamEntryOut> first, last;
};
struct XGroupInfo {
  std::string name;
  uint64_t consumers = 0, pending = 0;
  StreamId last_id;
  int64_t entries_read = -1;  // -1: not known
  std::optional<int64_t> lag;
};
// XINFO STREAM FULL: entries and every group with its PEL and consumers (at most `count` of
// each list; 0: all).
struct XStreamFull {
  XStreamInfo info;
  std::vector<StreamEntryOut> entries;
  struct Group {
    XGroupInfo info;
    std::vector<std::pair<StreamId, StreamNack>> pending;
    struct Consumer {
      std::string name;
      int64_t seen_ms = 0;
      uint64_t pel_count = 0;
      std::vector<std::pair<StreamId, StreamNack>> pending;
    };
    std::vector<Consumer> consumers;
  };
  std::vector<Group> groups;
};
struct XConsumerInfo {
  std::string name;
  uint64_t pending = 0;
  int64_t idle_ms = 0;
};
// XADD's and XTRIM's trimming: by length or by the lowest ID kept, at most `limit` entries
// removed (0: no limit). "~" trims as "=" does here (exactly; Redis keeps whole nodes of about
// 100 entries), with Redis's default limit.
struct StreamTrim {
  enum class By : uint8_t { kNone, kMaxLen, kMinId };
  By by = By::kNone;
  uint64_t maxlen = 0;
  StreamId minid;
  size_t limit = 0;
};
struct XAddSpec {
  enum class IdMode : uint8_t { kAuto, kExplicit, kAutoSeq };  // *, ms-seq, ms or ms-*
  IdMode id_mode = IdMode::kAuto;
  StreamId id;
  bool nomkstream = false;
  StreamTrim trim;
};

// Where LMOVE / BLMOVE take from and put to.
enum class ListEnd : uint8_t { kLeft, kRight };

struct ScanResult {
  uint64_t cursor = 0;  // 0 when the scan is complete
  std::vector<std::string> keys;
};

// Owned by one shard's reactor thread; never touched by another thread. Every operation takes
// the current time `now_ms` (unix ms) as a parameter: an expired key is removed lazily when an
// operation meets it and is never visible. ActiveExpire() removes expired keys that nobody touches.
// String views handed out stay valid until the next mutating call on this Db.
// A key's value and TTL copied out of a Db, so that it can be recreated in another one (RENAME,
// COPY and MOVE across shards).
struct KeySnapshot {
  ValueType type = ValueType::kNone;
  std::string str;                                         // kString
  // kHash: (field, value). kZSet: (member, score) in order, the score as the 8 bytes of the
  // double, little endian (ZScoreBytes / ZScoreFromBytes).
  std::vector<std::pair<std::string, std::string>> fields;
  std::vector<std::string> members;  // kList (head to tail), kSet
  std::string stream;                // kStream: StreamValue::Serialize()
  int64_t expire_at_ms = -1;                                // -1: no TTL
  // The LockAcquire record of a string key (fencing token, hold count); 0 when there is none.
  // Snapshot fills them; Restore applies them only when asked (a journal replay does, RENAME
  // and COPY do not: the copy is a new key, not the same holding).
  uint64_t lock_token = 0;
  int64_t lock_holds = 0;
};

// A live key seen in place (Db::View): views valid until the next mutating call on the Db.
struct KeyView {
  ValueType type = ValueType::kNone;
  std::string_view str;  // kString
  HashPairs fields;      // kHash, as (field, value) views; kZSet as KeySnapshot::fields says
  std::vector<double> zscores;  // kZSet: backs the score bytes in `fields`
  std::vector<std::string_view> members;  // kList (head to tail), kSet
  std::string_view stream;                // kStream, as KeySnapshot::stream
  int64_t expire_at_ms = -1;  // -1: no TTL
  uint64_t lock_token = 0;    // the LockAcquire record, as in KeySnapshot
  int64_t lock_holds = 0;
};

// An element-level change to a collection that existed before it and still exists after it,
// told to observers that can record it instead of the collection's whole state (the journal,
// for large collections; KeyObserver::OnKeyEdited). Applied to the state before it, through the
// Db call it names, it gives the state after it. Views valid during the call only.
struct KeyEdit {
  enum class Op : uint8_t {
    kListPush = 1,  // ListPush(items, end): pushed one by one at `end`
    kListPop = 2,   // ListPop(end, first): `first` elements popped at `end`
    kListTrim = 3,  // ListTrim(first, last): kept [first, last], both within the list
    kHashSet = 4,   // HSet(items): field, value, field, value, ...
    kHashDel = 5,   // HDel(items): fields
    kSetAdd = 6,    // SetAdd(items): members
    kSetRem = 7,    // SetRem(items): members
    kZSetSet = 8,   // ZAdd of items with scores: each member's score (added or changed)
    kZSetRem = 9,   // ZRem(items): members
    kStream = 10,   // XApplyChanges(items[0]): StreamValue::TakeChanges' bytes
  };
  static constexpr uint8_t kLastOp = 10;
  Op op = Op::kListPush;
  ListEnd end = ListEnd::kRight;  // the list ops'
  uint64_t first = 0;
  uint64_t last = 0;
  std::span<const std::string_view> items = {};
  std::span<const double> scores = {};  // kZSetSet: items[i]'s score
  size_t size_after = 0;                // elements in the collection after the change
};

// Told of every change to a key: added, overwritten, modified, deleted or expired. Implemented
// by server/ (WATCH, lock waiters); called on the Db's own thread, while the change happens, so
// it must not call back into the Db (nor add or remove observers): it notes the key and acts
// later.
class KeyObserver {
 public:
  virtual ~KeyObserver() = default;
  virtual void OnKeyChanged(std::string_view key) = 0;
  // A change that `edit` describes (a collection modified in place). By default a change like
  // any other.
  virtual void OnKeyEdited(std::string_view key, const KeyEdit& edit) {
    (void)edit;
    OnKeyChanged(key);
  }
  // The key was removed because its TTL passed (lazily or by active expiry). By default that is
  // a change like any other; the journal ignores it (a replay skips expired keys by itself).
  virtual void OnKeyExpired(std::string_view key) { OnKeyChanged(key); }
  // FLUSHDB is about to remove every key. Return true to hear of each key as well (the
  // default), false when the flush as a whole is enough (the journal writes one record).
  virtual bool OnFlush() { return true; }
};

// LOCK.ACQUIRE's outcome (Db::LockAcquire).
struct LockGrant {
  bool acquired = false;   // false: busy, the key holds another owner (or `reentrant` was not set)
  bool reentered = false;  // the owner held it already: one more hold, same token
  uint64_t token = 0;      // the holding's fencing token
  int64_t holds = 0;       // holds after the call
};

// LOCK.INFO's view of a key (Db::LockInfo).
struct LockState {
  bool held = false;       // false: the key is missing (the lock is free)
  std::string_view owner;  // the key's value (valid until the next mutating call)
  int64_t pttl_ms = -1;    // -1: no TTL
  uint64_t token = 0;      // 0: not taken through LockAcquire (e.g. by SET NX), so none known
  int64_t holds = 0;       // 1 for a key held without LockAcquire's record
};

class Db {
 public:
  Db();
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // --- strings ---
  OpResult<std::string_view> Get(std::string_view key, int64_t now_ms);
  // NX/XX not met: ok, written == false (old_value still filled with GET). With GET on a
  // non-string: kWrongType and nothing written. An expire time at or before now_ms: written,
  // and the key ends up deleted (never visible), as EXPIRE does with such a time.
  OpResult<SetResult> Set(std::string_view key, std::string_view value, const SetOptions& opts,
                          int64_t now_ms);
  OpResult<std::string> GetDel(std::string_view key, int64_t now_ms);
  // With Kind::kAt at or before now_ms the key is deleted and its value returned.
  OpResult<std::string_view> GetEx(std::string_view key, const ExpireChange& change,
                                   int64_t now_ms);
  // New length. kStringTooLong beyond max_string_len.
  OpResult<int64_t> Append(std::string_view key, std::string_view value, int64_t now_ms,
                           int64_t max_string_len);
  OpResult<int64_t> StrLen(std::string_view key, int64_t now_ms);  // 0 when missing
  // Redis GETRANGE semantics (negative indexes from the end); "" when missing.
  OpResult<std::string> GetRange(std::string_view key, int64_t start, int64_t end, int64_t now_ms);
  // LCS: the longest common subsequence of two values, by the plain dynamic program over a table
  // of (a.size() + 1) * (b.size() + 1) 32-bit lengths (the caller bounds it: LcsTableBytes).
  // With `walk`, the subsequence itself and its matching ranges (byte offsets in a and b, both
  // ends included) are found walking the table back from the end, as Redis does, so the ranges
  // come last first; those shorter than min_match_len are left out.
  struct LcsMatch {
    uint32_t a_start, a_end, b_start, b_end;
  };
  struct LcsResult {
    uint32_t len = 0;
    std::string lcs;
    std::vector<LcsMatch> matches;
  };
  static LcsResult Lcs(std::string_view a, std::string_view b, bool walk, int64_t min_match_len);
  static uint64_t LcsTableBytes(std::string_view a, std::string_view b) {
    return (uint64_t{a.size()} + 1) * (uint64_t{b.size()} + 1) * sizeof(uint32_t);
  }
  // New length. offset < 0 is rejected by the caller; kStringTooLong when offset+len is too big.
  OpResult<int64_t> SetRange(std::string_view key, int64_t offset, std::string_view value,
                             int64_t now_ms, int64_t max_string_len);
  OpResult<int64_t> IncrBy(std::string_view key, int64_t delta, int64_t now_ms);
  // The new value formatted as Redis does (%.17Lg style, no trailing zeros).
  OpResult<std::string> IncrByFloat(std::string_view key, long double delta, int64_t now_ms);

  // --- bitmaps (db_bitmap.cc): a string read as bits, bit 0 the first byte's highest ---
  // GETBIT: 0 for a missing key or a bit past the end. kWrongType.
  OpResult<int> GetBit(std::string_view key, uint64_t offset, int64_t now_ms);
  // SETBIT: the bit's old value. Creates the key, or pads it with zero bytes, to hold the bit
  // (the caller keeps offset / 8 under proto-max-bulk-len). Setting a bit to the value it had
  // in place changes nothing (no journal record, no WATCH touched). kWrongType.
  OpResult<int> SetBit(std::string_view key, uint64_t offset, bool on, int64_t now_ms);
  // BITCOUNT's and BITPOS's range: in bytes (or bits), negative from the end, ends included.
  struct BitRange {
    bool given = false;      // start given (else the whole string)
    bool end_given = false;  // end given (BITPOS may leave it out)
    bool bits = false;       // BIT rather than BYTE
    int64_t start = 0;
    int64_t end = 0;
  };
  // BITCOUNT: the set bits in the range; 0 for a missing key. kWrongType.
  OpResult<int64_t> BitCount(std::string_view key, const BitRange& range, int64_t now_ms);
  // BITPOS: the first bit equal to `bit` in the range, or -1. A missing key is zero bits
  // without end (-1 for a set bit, 0 for a clear one); with no end given, a string is read as
  // padded with zero bits on the right. kWrongType.
  OpResult<int64_t> BitPos(std::string_view key, int bit, const BitRange& range, int64_t now_ms);
  // BITOP's result over its sources' values (a missing key is ""), as long as the longest, the
  // shorter ones read as padded with zero bytes. kNot takes one source.
  enum class BitOp { kAnd, kOr, kXor, kNot };
  static std::string BitOpResult(BitOp op, const std::vector<std::string_view>& sources);
  // One BITFIELD operation on a field of `bits` bits (signed: 1-64, unsigned: 1-63) at bit
  // `offset`. A write overflows as `overflow` says: WRAP (two's complement), SAT (clamped to the
  // type's range) or FAIL (no write, a null reply).
  struct BitFieldOp {
    enum class Kind { kGet, kSet, kIncrBy };
    enum class Overflow { kWrap, kSat, kFail };
    Kind kind = Kind::kGet;
    bool is_signed = false;
    int bits = 0;
    uint64_t offset = 0;
    int64_t value = 0;  // SET's value, INCRBY's increment
    Overflow overflow = Overflow::kWrap;
  };
  // BITFIELD: a reply per operation, in order (GET: the value; SET: the old value; INCRBY: the
  // new one; nullopt: FAIL overflowed). With a write among them the key is created, or padded
  // with zero bytes, to hold every field written first, whatever the writes then do (as Redis);
  // without, a missing key reads as zero bits. kWrongType.
  OpResult<std::vector<std::optional<int64_t>>> BitField(std::string_view key,
                                                         const std::vector<BitFieldOp>& ops,
                                                         int64_t now_ms);

  // --- HyperLogLog (PFADD PFCOUNT PFMERGE PFDEBUG; db_hll.cc) ---
  // String values in Redis's HLL format (shard/base/hyperloglog.h). Every call: kWrongType for
  // another type, kNotHll for a string that is not an HLL, kCorruptHll for a sparse one whose
  // runs are damaged (nothing is changed then).
  // PFADD: creates the key if missing; 1 if it was created or a register grew (the cached count
  // goes stale), else 0.
  OpResult<int> PfAdd(std::string_view key, const std::string_view* elements, size_t n,
                      int64_t now_ms);
  // PFCOUNT of one key: 0 if missing; the cached count, else the estimate, which is then cached
  // (a change of the value, as in Redis).
  OpResult<int64_t> PfCount(std::string_view key, int64_t now_ms);
  // Raises regs[i] (hll::kRegisters) to the key's registers; nothing for a missing key. Sets
  // *dense when the value is dense.
  OpStatus PfMaxInto(std::string_view key, int64_t now_ms, uint8_t* regs, bool* dense);
  // PFMERGE's write: the key (created if missing, dense first if `dense`) gets every register
  // raised to regs[i], and its cached count goes stale. Checked with PfMaxInto before.
  OpStatus PfStore(std::string_view key, const uint8_t* regs, bool dense, int64_t now_ms);
  // PFDEBUG: the value (made dense when `to_dense`; *converted says whether it was sparse).
  OpResult<std::string> PfDebugValue(std::string_view key, bool to_dense, bool* converted,
                                     int64_t now_ms);

  // --- compare-and-set (DELEX, DELIFEQ, DIGEST; SET's IF* conditions are in SetOptions) ---
  // DELEX / DELIFEQ: true if the key was deleted. kNone deletes a key of any type (DEL of one
  // key). kIfEq..kIfDne delete only a string whose value meets the condition (kWrongType for a
  // key of another type; false for a missing key). kNX / kXX: kSyntax.
  OpResult<bool> DelEx(std::string_view key, SetOptions::Cond cond, std::string_view cond_value,
                       int64_t now_ms);
  // DIGEST: StringDigest of the value. kKeyNotFound, kWrongType.
  OpResult<uint64_t> Digest(std::string_view key, int64_t now_ms);

  // --- native locks (LOCK.ACQUIRE, LOCK.RELEASE, LOCK.EXTEND, LOCK.INFO; db_lock.cc) ---
  // A lock is an ordinary string key holding its owner, its lease the key's TTL, so every other
  // command sees and acts on it. Beside the key the Db keeps, for a lock taken by LockAcquire,
  // the holding's fencing token and hold count; that record lives exactly as long as the key
  // holds the same owner (a delete, an expiry or a write of another value drops it). Every call
  // is kWrongType on a key that is not a string.
  //
  // Acquire: on a missing key, creates it holding `owner` with a TTL of lease_ms (> 0) and hands
  // out a new fencing token, greater than every token this Db gave before (for any key, across
  // deletes, expiries and FLUSHDB). On a key holding `owner` with `reentrant`: one more hold,
  // the TTL set to lease_ms again, the same token. Otherwise busy (acquired == false).
  OpResult<LockGrant> LockAcquire(std::string_view key, std::string_view owner, int64_t lease_ms,
                                  bool reentrant, int64_t now_ms);
  // Release: -1 if the key does not hold `owner` (missing, expired, another owner), or if
  // `token` is not 0 and is not the holding's token. Otherwise drops one hold and returns how
  // many are left; at 0 the key is deleted.
  OpResult<int64_t> LockRelease(std::string_view key, std::string_view owner, int64_t now_ms,
                                uint64_t token = 0);
  // Extend: if the key holds `owner`, sets its TTL to lease_ms (> 0) and returns true.
  OpResult<bool> LockExtend(std::string_view key, std::string_view owner, int64_t lease_ms,
                            int64_t now_ms);
  OpResult<LockState> LockInfo(std::string_view key, int64_t now_ms);
  // The last fencing token handed out (0 before the first). A journal persists it and, on
  // load, calls AdvanceFencingToken(saved) so that tokens keep growing across restarts.
  uint64_t last_fencing_token() const;
  void AdvanceFencingToken(uint64_t at_least);
  // Keys that have a LockAcquire record (for tests and memory reports).
  size_t LockRecords() const;
  // The key's LockAcquire record, if it has one (no expiry check: the caller has just looked).
  bool LockRecordOf(std::string_view key, uint64_t* token, int64_t* holds) const;
  // Gives a live string key a LockAcquire record for its current value (journal replay), and
  // moves the fencing counter past `token`. Ignored for a missing or non-string key, token 0 or
  // holds <= 0.
  void SetLockRecord(std::string_view key, uint64_t token, int64_t holds);

  // --- keys ---
  // Asks the CPU for what looking up these keys will read (a hint: changes nothing). A batch of
  // commands about to run calls it first, so their lookups' cache misses overlap.
  void PrefetchKeys(const std::string_view* keys, size_t n) const;
  bool Del(std::string_view key, int64_t now_ms);
  // Exists, Type, Pttl, ExpireTime and Object leave the key's access clock alone, as Redis's
  // EXISTS, TYPE, TTL and OBJECT do; every other call on a key is an access.
  bool Exists(std::string_view key, int64_t now_ms);
  bool Touch(std::string_view key, int64_t now_ms);  // TOUCH: whether it exists; an access
  ValueType Type(std::string_view key, int64_t now_ms);
  // EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT with an absolute time: 1 if set, 0 if not (missing key or
  // condition not met). A time at or before now deletes the key (and counts as set).
  int64_t ExpireAt(std::string_view key, int64_t at_ms, ExpireCond cond, int64_t now_ms);
  int64_t Pttl(std::string_view key, int64_t now_ms);        // -2 missing, -1 no TTL, else ms left
  int64_t ExpireTime(std::string_view key, int64_t now_ms);  // -2 missing, -1 no TTL, else abs ms
  bool Persist(std::string_view key, int64_t now_ms);        // true if a TTL was removed
  // Calls fn for every live key matching the glob pattern (Redis syntax; "*" matches all).
  void Keys(std::string_view pattern, int64_t now_ms,
            const std::function<void(std::string_view)>& fn);
  // One SCAN step. type_filter: kNone for no filter. count is a hint, as in Redis.
  ScanResult Scan(uint64_t cursor, std::string_view pattern, size_t count, ValueType type_filter,
                  int64_t now_ms);
  std::optional<std::string> RandomKey(int64_t now_ms);
  // OBJECT / MEMORY USAGE (db_snapshot.cc): what a live key's value looks like, named as Redis
  // 7.0 names its equivalent encodings. nullopt for a missing key.
  struct ObjectInfo {
    const char* encoding;  // "int" "embstr" "raw" "listpack" "hashtable" "quicklist" "intset"
                           // "skiplist"
    size_t bytes;          // the key's allocation and everything its value owns
    bool shared_int;       // a string Redis would keep as a shared integer (0..9999)
    uint16_t lru;          // the access clock (Entry::ClockAt of the last access)
    int64_t idle_seconds;  // since the last access (modulo the clock's wrap, 18.2 hours)
  };
  std::optional<ObjectInfo> Object(std::string_view key, int64_t now_ms);
  // RESTORE ... IDLETIME: the key's access clock set as if last accessed idle_seconds ago (at
  // most the clock's wrap, 18.6 hours). Nothing for a missing key.
  void SetIdle(std::string_view key, int64_t idle_seconds, int64_t now_ms);
  size_t Size() const;         // keys, including expired ones not yet removed
  size_t ExpiresSize() const;  // keys with a TTL
  void Flush();
  // RENAME/COPY building blocks. Snapshot: nullopt when the key is missing. Restore: creates
  // `key` from the snapshot with its TTL; without `replace` it does nothing and returns false when
  // the key exists. A snapshot whose TTL has passed restores nothing (and returns true).
  std::optional<KeySnapshot> Snapshot(std::string_view key, int64_t now_ms);
  // The same without copies, in one lookup (the journal, at the end of every turn): false when
  // the key is missing (or has expired; it is then removed). The views are valid until the next
  // mutating call or the next View (an intset's members and packed UUIDs are rebuilt as text
  // into the Db's own storage, which the next View reuses).
  bool View(std::string_view key, int64_t now_ms, KeyView* out);
  // With `with_lock_record`, a string snapshot's lock_token/lock_holds (when lock_token != 0)
  // become the key's LockAcquire record again, and the fencing counter moves past the token.
  bool Restore(std::string_view key, const KeySnapshot& snap, bool replace, int64_t now_ms,
               bool with_lock_record = false);

  // --- eviction (maxmemory-policy; Shard::Evict) ---
  // What orders eviction candidates, lowest first: the expire time in ms (volatile-ttl), or the
  // second of the last access (the *-lru policies: now's second less the idle seconds, so that
  // ranks taken at different times compare).
  enum class EvictRank : uint8_t { kExpireAt, kLastAccess };
  struct EvictSample {
    std::string key;
    int64_t rank;
  };
  // Adds to *out up to `count` keys (only those with a TTL when volatile_only), with their
  // ranks, from a random place in the table: consecutive scan steps, looking at 10 * count
  // buckets at most, or on until one is found while the Db has any (so a Db whose TTL keys are
  // sparse still yields one). Keys already expired count too; nothing is removed or touched.
  void SampleForEviction(bool volatile_only, EvictRank by, size_t count, int64_t now_ms,
                         std::vector<EvictSample>* out);
  // A random key (with a TTL when volatile_only) for the *-random policies, as Redis's
  // dictGetRandomKey: a random bucket, then a random entry of its chain. nullopt when the Db has
  // none. Expired keys may be drawn; nothing is removed or touched.
  std::optional<std::string> RandomForEviction(bool volatile_only);
  // The key's rank now, without touching it: nullopt when it is missing (an expired key is
  // removed), or has no TTL and `by` is kExpireAt.
  std::optional<int64_t> EvictionRank(std::string_view key, EvictRank by, int64_t now_ms);
  // Removes the key as DEL does (watchers, lock waiters and the journal hear of a deletion)
  // and returns its bytes as MEMORY USAGE counts them; nullopt when it is missing or expired.
  std::optional<size_t> Evict(std::string_view key, int64_t now_ms);

  // Who hears of key changes (WATCH, lock waiters). A Db nobody observes pays one emptiness
  // check per change. An observer is added once and removed before it is destroyed.
  void AddObserver(KeyObserver* o);
  void RemoveObserver(KeyObserver* o);
  // Removes expired keys, visiting at most `max_visits` slots from where the last call stopped.
  // Returns the number of keys removed.
  size_t ActiveExpire(int64_t now_ms, size_t max_visits);
  // The same, adding the number of slots (hash buckets) visited to *visited. A call visits
  // nothing when the Db has no key with a TTL, and stops early once it has walked the whole
  // table. While the table is being resized one step looks at 1 + (large/small) buckets; a step
  // that would go past the budget is not started, except as the first step of a call.
  // While a resize is under way the call also moves up to max(1, max_visits/16) buckets of it.
  size_t ActiveExpire(int64_t now_ms, size_t max_visits, size_t* visited);

  // --- hashes (the minimum that HSET-based locks and type checks need; the hash commands
  // extend this) ---
  // HSET of one field: 1 if the field is new, 0 if it was updated. kWrongType on a string key.
  OpResult<int64_t> HSet(std::string_view key, std::string_view field, std::string_view value,
                         int64_t now_ms);
  // HGET: kKeyNotFound when the key or the field is missing.
  OpResult<std::string_view> HGet(std::string_view key, std::string_view field, int64_t now_ms);
  // Every hash operation below is kWrongType on a key of another type. One that removes the
  // last field removes the key. A missing key reads as an empty hash.
  // HSET / HMSET: `field_values` alternates fields and values (an even count, at least 2).
  // Returns the number of fields that were new (a field given twice counts once, the last value
  // wins).
  OpResult<int64_t> HSet(std::string_view key, std::span<const std::string_view> field_values,
                         int64_t now_ms);
  // HSETNX: true if the field was set (it did not exist).
  OpResult<bool> HSetNx(std::string_view key, std::string_view field, std::string_view value,
                        int64_t now_ms);
  // HMGET: one entry per field, nullopt for a missing field.
  OpResult<std::vector<std::optional<std::string_view>>> HMGet(
      std::string_view key, std::span<const std::string_view> fields, int64_t now_ms);
  // HDEL: the number of fields removed.
  OpResult<int64_t> HDel(std::string_view key, std::span<const std::string_view> fields,
                         int64_t now_ms);
  OpResult<bool> HExists(std::string_view key, std::string_view field, int64_t now_ms);
  // HINCRBY: kHashValueNotInteger when the field's value is not a (canonical) integer,
  // kIncrOverflow.
  OpResult<int64_t> HIncrBy(std::string_view key, std::string_view field, int64_t delta,
                            int64_t now_ms);
  // HINCRBYFLOAT: the new value as INCRBYFLOAT formats it. kHashValueNotFloat, kNanOrInf.
  OpResult<std::string> HIncrByFloat(std::string_view key, std::string_view field,
                                     long double delta, int64_t now_ms);
  OpResult<int64_t> HLen(std::string_view key, int64_t now_ms);
  // HSTRLEN: 0 for a missing key or field.
  OpResult<int64_t> HStrLen(std::string_view key, std::string_view field, int64_t now_ms);
  // HGETALL / HKEYS / HVALS: every pair (insertion order while the hash is small).
  OpResult<HashPairs> HGetAll(std::string_view key, int64_t now_ms);
  // HRANDFIELD with a count, as ZRandMember: count > 0 distinct pairs (all when count >= the
  // size), count < 0 |count| picks that may repeat; none for a missing key.
  OpResult<HashPairs> HRandField(std::string_view key, int64_t count, int64_t now_ms);
  // One HSCAN step (see HashValue::Scan): pairs whose field matches the glob `pattern` ("*" for
  // all); count as Redis's COUNT (>= 1).
  OpResult<HScanResult> HScan(std::string_view key, uint64_t cursor, std::string_view pattern,
                              size_t count, int64_t now_ms);

  // --- sorted sets (db_zset.cc), with Redis 7.0's t_zset.c semantics ---
  // Every operation is kWrongType on a key of another type; a missing key reads as an empty set;
  // one that removes the last member removes the key. Scores are never NaN (callers refuse it).
  // ZADD / ZINCRBY: pairs of (score, member); with INCR exactly one. kScoreNaN when INCR gives
  // NaN (inf + -inf), nothing changed.
  OpResult<ZAddResult> ZAdd(std::string_view key, const ZAddOptions& opts,
                            std::span<const std::pair<double, std::string_view>> items,
                            int64_t now_ms);
  OpResult<int64_t> ZRem(std::string_view key, std::span<const std::string_view> members,
                         int64_t now_ms);
  OpResult<std::optional<double>> ZScore(std::string_view key, std::string_view member,
                                         int64_t now_ms);
  OpResult<std::vector<std::optional<double>>> ZMScore(std::string_view key,
                                                       std::span<const std::string_view> members,
                                                       int64_t now_ms);
  OpResult<int64_t> ZCard(std::string_view key, int64_t now_ms);
  // ZCOUNT (by kScore) / ZLEXCOUNT (by kLex).
  OpResult<int64_t> ZCount(std::string_view key, const ZRangeSpec& range, int64_t now_ms);
  // ZRANGE and its relatives: the members of the range in the order asked.
  OpResult<ZMembers> ZRange(std::string_view key, const ZRangeSpec& range, int64_t now_ms);
  // ZRANK / ZREVRANK: (rank, score), nullopt when the member is missing.
  OpResult<std::optional<std::pair<int64_t, double>>> ZRank(std::string_view key,
                                                            std::string_view member, bool rev,
                                                            int64_t now_ms);
  // ZREMRANGEBYRANK / BYSCORE / BYLEX (range.rev and LIMIT ignored): how many went.
  OpResult<int64_t> ZRemRange(std::string_view key, const ZRangeSpec& range, int64_t now_ms);
  // ZPOPMIN / ZPOPMAX: up to `count` members from the low (high) end, in pop order.
  OpResult<ZOwnedMembers> ZPop(std::string_view key, bool max, int64_t count, int64_t now_ms);
  // ZRANDMEMBER with a count: count >= 0 distinct members (the whole set, from the highest, when
  // count >= its size), count < 0 -count members that may repeat. Random from the Db's own
  // generator.
  OpResult<ZMembers> ZRandMember(std::string_view key, int64_t count, int64_t now_ms);
  // One ZSCAN step: members whose bytes match the glob `pattern`; count as Redis's COUNT.
  OpResult<ZScanResult> ZScan(std::string_view key, uint64_t cursor, std::string_view pattern,
                              size_t count, int64_t now_ms);
  // The store half of ZRANGESTORE / ZUNIONSTORE / ZINTERSTORE: `key` becomes a sorted set of
  // `members` (distinct), replacing whatever it held (its TTL goes too); an empty list deletes
  // it. Returns the size.
  int64_t ZStore(std::string_view key, const ZOwnedMembers& members, int64_t now_ms);
  // --- lists (db_list.cc; Redis 7's t_list.c semantics) ---
  // Every list operation is kWrongType on a key of another type. One that removes the last
  // element removes the key. A missing key reads as an empty list.
  // LPUSH / RPUSH (LPUSHX / RPUSHX with only_if_exists): the new length (0: missing key, X form).
  OpResult<int64_t> ListPush(std::string_view key, std::span<const std::string_view> values,
                             ListEnd end, bool only_if_exists, int64_t now_ms);
  // LPOP / RPOP: up to `count` elements from `end`; kKeyNotFound for a missing key.
  OpResult<std::vector<std::string>> ListPop(std::string_view key, ListEnd end, size_t count,
                                             int64_t now_ms);
  OpResult<int64_t> ListLen(std::string_view key, int64_t now_ms);
  // LRANGE with Redis's index rules (negative from the end, clamped). Copies: a packed list
  // rebuilds a UUID element's text as it reads it (shard/types/packed_growth.h).
  OpResult<std::vector<std::string>> ListRange(std::string_view key, int64_t start,
                                                    int64_t stop, int64_t now_ms);
  // LINDEX: kKeyNotFound for a missing key or an index out of range.
  OpResult<std::string> ListIndex(std::string_view key, int64_t index, int64_t now_ms);
  // LSET: kNoSuchKey for a missing key, kOutOfRange for an index out of range.
  OpStatus ListSet(std::string_view key, int64_t index, std::string_view value, int64_t now_ms);
  // LREM: the number removed.
  OpResult<int64_t> ListRem(std::string_view key, int64_t count, std::string_view value,
                            int64_t now_ms);
  // LINSERT: the new length, -1 when the pivot is missing, 0 when the key is.
  OpResult<int64_t> ListInsert(std::string_view key, bool before, std::string_view pivot,
                               std::string_view value, int64_t now_ms);
  OpStatus ListTrim(std::string_view key, int64_t start, int64_t stop, int64_t now_ms);
  // LPOS: the indexes of matches, searched from the head (rank > 0) or tail (rank < 0), skipping
  // |rank| - 1 matches, at most `count` of them (0: all), looking at most `maxlen` elements
  // (0: all).
  OpResult<std::vector<int64_t>> ListPos(std::string_view key, std::string_view element,
                                         int64_t rank, int64_t count, int64_t maxlen,
                                         int64_t now_ms);
  // LMOVE with both keys here: the element moved; kKeyNotFound when the source is empty.
  // kWrongType when either key holds another type (the source checked first; a missing source
  // is kKeyNotFound before the destination is looked at, as in Redis).
  OpResult<std::string> ListMove(std::string_view src, std::string_view dst, ListEnd from,
                                 ListEnd to, int64_t now_ms);
  // The type check of a key about to receive a pushed element (LMOVE's destination):
  // kWrongType for a key of another type, else kOk.
  OpStatus ListCheckType(std::string_view key, int64_t now_ms);

  // --- sets (db_set.cc; Redis 7's t_set.c semantics) ---
  // Every set operation is kWrongType on a key of another type; a missing key reads as an
  // empty set; removing the last member removes the key.
  OpResult<int64_t> SetAdd(std::string_view key, std::span<const std::string_view> members,
                           int64_t now_ms);
  OpResult<int64_t> SetRem(std::string_view key, std::span<const std::string_view> members,
                           int64_t now_ms);
  // SMEMBERS: ascending for an intset, insertion order while packed.
  OpResult<std::vector<std::string>> SetMembers(std::string_view key, int64_t now_ms);
  OpResult<bool> SetIsMember(std::string_view key, std::string_view member, int64_t now_ms);
  OpResult<std::vector<bool>> SetMIsMember(std::string_view key,
                                           std::span<const std::string_view> members,
                                           int64_t now_ms);
  OpResult<int64_t> SetCard(std::string_view key, int64_t now_ms);
  // SPOP: up to `count` distinct random members, removed.
  OpResult<std::vector<std::string>> SetPop(std::string_view key, size_t count, int64_t now_ms);
  // SRANDMEMBER: count >= 0: up to `count` distinct members; count < 0: |count| picks that may
  // repeat.
  OpResult<std::vector<std::string>> SetRandMember(std::string_view key, int64_t count,
                                                   int64_t now_ms);
  OpResult<SScanResult> SetScan(std::string_view key, uint64_t cursor, std::string_view pattern,
                                size_t count, int64_t now_ms);
  // S*STORE's write: `key` becomes a set of `members` (a key of any type is replaced; no
  // members deletes it). Returns the set's size.
  int64_t SetStore(std::string_view key, std::span<const std::string> members, int64_t now_ms);

  // --- streams (db_stream.cc; Redis 7.0's t_stream.c semantics) ---
  // Every stream operation is kWrongType on a key of another type. A stream stays when its
  // last entry goes (XDEL, XTRIM), as in Redis.
  // XADD: the new entry's ID. kKeyNotFound (NOMKSTREAM, no key), kStreamIdTooSmall (an ID not
  // above the stream's last), kStreamExhausted (the last ID is the largest there is). `fields`
  // alternate field and value. Trims after adding.
  OpResult<StreamId> XAdd(std::string_view key, const XAddSpec& spec,
                          std::span<const std::string_view> fields, int64_t now_ms);
  // XTRIM: how many entries went (0 for a missing key).
  OpResult<int64_t> XTrim(std::string_view key, const StreamTrim& trim, int64_t now_ms);
  OpResult<int64_t> XLen(std::string_view key, int64_t now_ms);
  // XRANGE / XREVRANGE: entries with start <= id <= end, ascending (descending with `rev`), at
  // most `count` (0: all). nullopt for a missing key.
  OpResult<std::optional<std::vector<StreamEntryOut>>> XRange(std::string_view key, StreamId start,
                                                              StreamId end, size_t count, bool rev,
                                                              int64_t now_ms);
  // XDEL: how many of `ids` were there (0 for a missing key).
  OpResult<int64_t> XDel(std::string_view key, std::span<const StreamId> ids, int64_t now_ms);
  // XSETID (checked as Redis 7.0 checks it): kNoSuchKey, kStreamSetIdBelowTop,
  // kStreamEntriesAddedTooSmall. entries_added < 0 and a zero
  // max_deleted leave those counters.
  OpStatus XSetId(std::string_view key, StreamId id, int64_t entries_added, StreamId max_deleted,
                  int64_t now_ms);
  // A journal replay of a stream's edit (KeyEdit::Op::kStream): applies `changes`
  // (StreamValue::TakeChanges) to the key's stream. False when there is none or the bytes are
  // not whole changes.
  bool XApplyChanges(std::string_view key, std::string_view changes, int64_t now_ms);
  // The stream's last generated ID ("$" in XREAD); nullopt for a missing key.
  OpResult<std::optional<StreamId>> XLastId(std::string_view key, int64_t now_ms);

  // --- stream consumer groups (db_stream.cc; Redis 7.0's semantics) ---
  // kNoSuchKey: no key (XGROUP needs one unless CREATE ... MKSTREAM); kNoGroup: no such group;
  // kBusyGroup: CREATE of a group that exists. `dollar`: the stream's last ID instead of `id`.
  // entries_read -1: not given.
  OpStatus XGroupCreate(std::string_view key, std::string_view group, bool dollar, StreamId id,
                        bool mkstream, int64_t entries_read, int64_t now_ms);
  OpStatus XGroupSetId(std::string_view key, std::string_view group, bool dollar, StreamId id,
                       int64_t entries_read, int64_t now_ms);
  OpResult<int64_t> XGroupDestroy(std::string_view key, std::string_view group, int64_t now_ms);
  OpResult<int64_t> XGroupCreateConsumer(std::string_view key, std::string_view group,
                                         std::string_view consumer, int64_t now_ms);
  // The deleted consumer's pending count (its entries leave the group's PEL).
  OpResult<int64_t> XGroupDelConsumer(std::string_view key, std::string_view group,
                                      std::string_view consumer, int64_t now_ms);
  // XREADGROUP on one key, the consumer made if new. `id` Max() is ">": entries after the
  // group's last ID, delivered (added to the PEL unless noack); nullopt when there are none.
  // Any other ID: the consumer's pending entries after it (its history), counted as delivered
  // again. kNoGroup for a missing key or group.
  OpResult<std::optional<std::vector<StreamEntryOut>>> XReadGroup(std::string_view key,
                                                                  std::string_view group,
                                                                  std::string_view consumer,
                                                                  StreamId id, size_t count,
                                                                  bool noack, int64_t now_ms);
  // Whether the stream at `key` has `group` (false for a missing key; kWrongType).
  OpResult<bool> XHasGroup(std::string_view key, std::string_view group, int64_t now_ms);
  // XACK: how many of `ids` were pending (0 for a missing key or group).
  OpResult<int64_t> XAck(std::string_view key, std::string_view group,
                         std::span<const StreamId> ids, int64_t now_ms);
  OpResult<XPendingSummary> XPending(std::string_view key, std::string_view group, int64_t now_ms);
  // XPENDING's extended form: pending entries in [start, end], at most count, idle at least
  // min_idle_ms, of `consumer` only when given (a consumer that does not exist: none).
  OpResult<std::vector<XPendingEntry>> XPendingRange(std::string_view key, std::string_view group,
                                                     StreamId start, StreamId end, size_t count,
                                                     int64_t min_idle_ms,
                                                     std::optional<std::string_view> consumer,
                                                     int64_t now_ms);
  OpResult<std::vector<StreamEntryOut>> XClaim(std::string_view key, std::string_view group,
                                               std::string_view consumer,
                                               std::span<const StreamId> ids,
                                               const XClaimOptions& opts, int64_t now_ms);
  OpResult<XAutoClaimResult> XAutoClaim(std::string_view key, std::string_view group,
                                        std::string_view consumer, int64_t min_idle_ms,
                                        StreamId start, size_t count, bool justid, int64_t now_ms);
  OpResult<XStreamInfo> XInfoStream(std::string_view key, int64_t now_ms);  // kNoSuchKey
  OpResult<std::vector<XGroupInfo>> XInfoGroups(std::string_view key, int64_t now_ms);
  OpResult<XStreamFull> XInfoFull(std::string_view key, size_t count, int64_t now_ms);
  OpResult<std::vector<XConsumerInfo>> XInfoConsumers(std::string_view key, std::string_view group,
                                                      int64_t now_ms);

 private:
  // The stream at `key` (its Dict::Pos in *pos, a void* to keep the table out of this header);
  // null with *st kNoSuchKey or kWrongType.
  StreamValue* FindStream(std::string_view key, int64_t now_ms, void* pos, OpStatus* st);
  // The group `group` of that stream (the stream in *stream): null with *st kWrongType,
  // kNoSuchKey (kNoGroup when `no_key_is_no_group`, as XREADGROUP, XPENDING and XCLAIM answer
  // it) or kNoGroup.
  StreamGroup* FindGroup(std::string_view key, std::string_view group, int64_t now_ms, void* pos,
                         OpStatus* st, bool no_key_is_no_group, StreamValue** stream);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace deadbolt::shard

#pragma once
// Internals of Db shared by its .cc files (db.cc: keys and expiry, db_string.cc: strings,
// db_hash.cc: hashes). Not part of the module's API.

#include <absl/container/flat_hash_map.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "shard/db.h"
#include "shard/table/dict.h"
#include "shard/table/entry.h"
#include "shard/types/value_kinds.h"

namespace deadbolt::shard {

// Owned by its Db, on the shard's reactor thread.
//
// Every change to the keyspace goes through the few functions below (Add, Overwrite, Swap,
// OverwriteStringInPlace, Modified, SetExpire, Remove, and RemovingInScan for removals done
// inside a Dict scan), which keep the TTL count and call OnChange (Swap's caller calls Modified).
// Later features (WATCH, lock waiters, keyspace events) hook into OnChange.
struct Db::Impl {
  enum class Change : uint8_t {
    kAdded,        // a new key
    kOverwritten,  // a new value replaced the old one (SET over an existing key)
    kModified,     // the value or the TTL changed in place (APPEND, INCR, EXPIRE, ...)
    kDeleted,      // removed by a command
    kExpired,      // removed because its TTL passed (lazily or by active expiry)
  };

  Dict dict{&DestroyEntry};
  size_t expires = 0;          // entries that have a TTL
  uint64_t expire_cursor = 0;  // where ActiveExpire continues
  uint64_t rng = 0x2545f4914f6cdd1dULL;
  std::deque<std::string> view_members;  // backs View's formatted intset members and UUIDs
  std::string scratch;  // backs views of values whose entry is gone (GETEX with a past time)

  // The single hook point for keyspace changes. Called while the key's entry still exists
  // (for kAdded and kOverwritten: once the new entry is linked).
  // `edit`: a kModified change that it describes (KeyEdit), told to observers as an edit.
  void OnChange(std::string_view key, Change change, const KeyEdit* edit = nullptr) {
    if (!locks.empty()) [[unlikely]] {
      LockKeyChanged(key, change);
    }
    if (change == Change::kExpired) {
      for (KeyObserver* o : observers) o->OnKeyExpired(key);
    } else if (edit) {
      for (KeyObserver* o : observers) o->OnKeyEdited(key, *edit);
    } else {
      for (KeyObserver* o : observers) o->OnKeyChanged(key);
    }
  }
  std::vector<KeyObserver*> observers;

  // LockAcquire's record of a holding (db_lock.cc): kept while the key holds the same owner
  // (a value whose digest is owner_digest), dropped on any other change.
  struct LockRecord {
    uint64_t token;
    int64_t holds;
    uint64_t owner_digest;  // StringDigest of the owner
  };
  absl::flat_hash_map<std::string, LockRecord> locks;
  uint64_t last_token = 0;  // fencing tokens: never goes back
  // OnChange's part for keys with a LockRecord.
  void LockKeyChanged(std::string_view key, Change change);

  // Finds a live key. A key met expired is removed first and reported missing. *hash receives
  // the key's hash for a following Add. Sets the access clock to now_ms's (`clock`) and stamps
  // the key found with it: every command's read or write of a key is an access (maxmemory-policy
  // *-lru, OBJECT IDLETIME), except those Redis does not count (EXISTS, TYPE, the TTL family,
  // OBJECT), which call LookupNoTouch.
  Dict::Pos Lookup(std::string_view key, int64_t now_ms, uint64_t* hash);
  Dict::Pos LookupNoTouch(std::string_view key, int64_t now_ms, uint64_t* hash);
  template <bool kTouch>
  Dict::Pos LookupImpl(std::string_view key, int64_t now_ms, uint64_t* hash);
  uint16_t clock = 0;  // Entry::ClockAt of the last Lookup's now_ms: Add and Swap stamp it

  // Links a new entry (its key must be missing), accessed now (`clock`).
  void Add(Entry* e, uint64_t hash);
  // Replaces the entry at pos with `e` (same key), destroys the old one and reports `why`.
  void Overwrite(Dict::Pos pos, Entry* e, Change why = Change::kOverwritten);
  // Overwrite without the report, for a caller that finishes the change and then calls
  // Modified(pos).
  void Swap(Dict::Pos pos, Entry* e);
  // If pos holds an inline string of value.size() bytes and at_ms fits its layout, writes the
  // value and TTL in place, reports `why` and returns true. Else changes nothing.
  bool OverwriteStringInPlace(Dict::Pos pos, std::string_view value, int64_t at_ms, Change why);
  // The value of pos's entry was changed in place.
  void Modified(Dict::Pos pos) { OnChange(pos.entry()->key(), Change::kModified); }
  // The same, for a change `edit` describes (KeyEdit's rules). Observers hear of it as an edit.
  void Edited(Dict::Pos pos, const KeyEdit& edit) {
    OnChange(pos.entry()->key(), Change::kModified, &edit);
  }
  // Modified, or Edited with `edit` when it is given.
  void Modified(Dict::Pos pos, const KeyEdit* edit) {
    OnChange(pos.entry()->key(), Change::kModified, edit);
  }
  // Whether anyone hears of changes (an edit's items are gathered only then).
  bool observed() const { return !observers.empty(); }
  // Sets (or with Entry::kNoExpire clears) the TTL, in place when the entry's layout allows,
  // else by rebuilding the entry. Returns the (possibly new) entry.
  Entry* SetExpire(Dict::Pos pos, int64_t at_ms);
  // Unlinks and destroys pos's entry.
  void Remove(Dict::Pos pos, Change why);
  // For an entry a Dict::Scan callback is about to have removed (returning true).
  void RemovingInScan(Entry* e, Change why);

  // String helpers (db_string.cc).
  // Makes pos's string value `new_len` bytes long (>= its length; new bytes zeroed) and returns
  // its writable bytes. Small strings stay inline (the entry is rebuilt); larger ones move to a
  // HeapString with spare room so that repeated growth is amortized O(1). Does not report the
  // change: the caller writes its bytes and then calls Modified.
  char* GrowString(Dict::Pos pos, size_t new_len);
  // A new string entry for `key` (no TTL): `len` zero bytes with `bytes` written at `at`
  // (at + bytes.size() <= len). Inline when small, else a HeapString built in place (a far
  // offset costs no second copy of the padding).
  static Entry* MakePaddedString(std::string_view key, size_t len, size_t at,
                                 std::string_view bytes);
  // Replaces the value of pos's string, keeping its TTL.
  void ReplaceValueKeepTtl(Dict::Pos pos, std::string_view value);

  // ActiveExpire's work; adds buckets visited to *visited.
  size_t ActiveExpire(int64_t now_ms, size_t max_visits, size_t* visited);
};

}  // namespace deadbolt::shard

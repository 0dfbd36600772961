#pragma once
// The value of a stream key (XADD ...): entries ordered by ID, each a list of field-value pairs,
// and the stream's counters (the last ID generated, the largest ID deleted, how many entries
// were ever added), as Redis 7.0 keeps them.

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace deadbolt::shard {

// A stream entry's ID: milliseconds and a sequence number, ordered as a pair. Any thread.
struct StreamId {
  uint64_t ms = 0;
  uint64_t seq = 0;

  auto operator<=>(const StreamId&) const = default;
  static constexpr StreamId Max() { return {UINT64_MAX, UINT64_MAX}; }
  bool IsZero() const { return ms == 0 && seq == 0; }
  // The next ID up (the sequence, else the next millisecond); false at Max().
  bool Incr();
  // The next ID down; false at 0-0.
  bool Decr();
  std::string ToString() const;  // "ms-seq"
};

// A consumer group's record of one entry delivered and not yet acknowledged (Redis's NACK).
struct StreamNack {
  std::string consumer;     // who has it
  int64_t delivery_ms = 0;  // when it was last delivered (unix ms)
  uint64_t delivery_count = 0;
};

// A consumer of a group: when it was last seen (an XREADGROUP, XCLAIM, XAUTOCLAIM) and the IDs
// it has pending (each also in the group's pel, owned by this consumer).
struct StreamConsumer {
  int64_t seen_ms = 0;
  std::set<StreamId> pending;
};

// A consumer group: the last ID delivered, the count of entries read (-1: not known, Redis's
// SCG_INVALID_ENTRIES_READ), the pending entries (PEL) and the consumers, by name.
struct StreamGroup {
  StreamId last_id;
  int64_t entries_read = -1;
  std::map<StreamId, StreamNack> pel;
  std::map<std::string, StreamConsumer> consumers;
};

// Owned by the Entry that points at it, on the shard's reactor thread.
//
// The entries are a std::map from ID to the entry's fields and values (flattened: field, value,
// field, value). Redis keeps them in a radix tree of listpacks, about 100 entries a node, which
// is smaller per entry; the map gives ordered range reads and trimming from the head in
// O(log n + k) and is private to this class. A stream may be empty and still exist (XDEL, XTRIM,
// XADD's NOMKSTREAM aside), as in Redis.
class StreamValue {
 public:
  using Fields = std::vector<std::string>;
  using Entries = std::map<StreamId, Fields>;

  StreamValue() = default;
  StreamValue(const StreamValue&) = delete;
  StreamValue& operator=(const StreamValue&) = delete;

  size_t size() const { return entries_.size(); }
  const Entries& entries() const { return entries_; }
  StreamId last_id() const { return last_id_; }
  StreamId max_deleted_id() const { return max_deleted_id_; }
  uint64_t entries_added() const { return entries_added_; }
  // The first entry's ID, 0-0 when empty (Redis's recorded-first-entry-id).
  StreamId first_id() const { return entries_.empty() ? StreamId{} : entries_.begin()->first; }
  // Consumer groups by name (ordered, as Redis's radix tree lists them). Changed in place by the
  // group commands' logic (shard/db_stream.cc), which keeps a nack's consumer and that
  // consumer's `pending` in step.
  std::map<std::string, StreamGroup>& groups() {
    changes_.groups = true;  // may be about to change them
    return groups_;
  }
  const std::map<std::string, StreamGroup>& groups() const { return groups_; }
  bool Has(StreamId id) const { return entries_.count(id) > 0; }
  // Bytes this value owns (an estimate: the map's nodes and the strings' heap blocks).
  size_t AllocatedBytes() const;

  // Appends an entry at `id`, which must be above last_id().
  void Append(StreamId id, Fields fields);
  // Removes the entry at id; false when there is none. Updates max_deleted_id.
  bool Delete(StreamId id);
  // Removes entries from the head while the stream is longer than maxlen (by_minid: while the
  // first ID is below `minid`), at most `limit` of them (0: no limit). Returns how many.
  size_t TrimMaxLen(uint64_t maxlen, size_t limit);
  size_t TrimMinId(StreamId minid, size_t limit);
  // XSETID's changes (checked by the caller).
  void SetLastId(StreamId id) { last_id_ = id; }
  void SetEntriesAdded(uint64_t n) { entries_added_ = n; }
  void SetMaxDeletedId(StreamId id) { max_deleted_id_ = id; }

  // The whole value as bytes (the journal, RENAME/COPY across shards), and back: a version byte,
  // the counters, each entry (ID, field count, lengths and bytes), then each group (name, last
  // ID, entries read, consumers with their seen time, pending entries with their consumer).
  // Parse refuses anything that does not read back exactly (damage), leaving *out unspecified.
  std::string Serialize() const;
  static bool Parse(std::string_view bytes, StreamValue* out);

  // What changed since the last TakeChanges or ForgetChanges (the journal's edit records for a
  // large stream): entries appended and deleted (by Append, Delete, the trims), and whether the
  // groups may have changed (the non-const groups() was called). TakeChanges returns it as bytes
  // and forgets it: the counters, the IDs deleted, the entries appended that are still there,
  // and all the groups when they may have changed. ApplyChanges applies such bytes to the stream
  // as it was before them; false (nothing changed) when they do not read back exactly. A
  // value's owner that does not take the changes forgets them after each change, so that they
  // do not pile up.
  std::string TakeChanges();
  void ForgetChanges();
  bool ApplyChanges(std::string_view bytes);

 private:
  Entries entries_;
  StreamId last_id_;
  StreamId max_deleted_id_;
  uint64_t entries_added_ = 0;
  std::map<std::string, StreamGroup> groups_;
  struct Changes {
    std::vector<StreamId> appended;
    std::vector<StreamId> deleted;
    bool groups = false;
  };
  Changes changes_;
};

}  // namespace deadbolt::shard

// Db: the sorted set commands (ZADD ZINCRBY ZREM ZSCORE ZMSCORE ZCARD ZCOUNT ZLEXCOUNT, the
// ZRANGE family, ZRANK, ZREMRANGEBY*, ZPOPMIN/MAX, ZRANDMEMBER, ZSCAN and the store half of
// ZRANGESTORE/ZUNIONSTORE/ZINTERSTORE), with Redis 7.0's t_zset.c semantics. The value is a
// ZSetValue (zset_value.h); the key's TTL covers the whole set.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "shard/base/glob.h"
#include "shard/db.h"
#include "shard/db_impl.h"
#include "shard/table/random.h"
#include "shard/types/zset_value.h"

namespace deadbolt::shard {

std::string ZScoreBytes(double score) {
  uint64_t bits;
  std::memcpy(&bits, &score, 8);
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(bits >> (8 * i));
  return out;
}

double ZScoreFromBytes(std::string_view bytes) {
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

namespace {

// A series of ZSetValue mutations on one set, as HashEdit in db_hash.cc: keeps the latest block
// and frees the ones in between, never the original (the key's Entry owns it until Commit).
class ZSetEdit {
 public:
  explicit ZSetEdit(ZSetValue* original) : original_(original), current_(original) {}
  ~ZSetEdit() {
    if (current_ != original_) delete current_;
  }
  ZSetEdit(const ZSetEdit&) = delete;
  ZSetEdit& operator=(const ZSetEdit&) = delete;

  ZSetValue* get() const { return current_; }
  bool Set(std::string_view member, double score) {
    bool added;
    Take(ZSetValue::Set(current_, member, score, &added));
    return added;
  }
  bool Del(std::string_view member) {
    bool removed;
    Take(ZSetValue::Del(current_, member, &removed));
    return removed;
  }
  ZSetValue* Release() {
    ZSetValue* z = current_;
    current_ = original_;
    return z;
  }

 private:
  void Take(ZSetValue* next) {
    if (next == current_) return;
    if (current_ != original_) delete current_;
    current_ = next;
  }

  ZSetValue* original_;
  ZSetValue* current_;
};

// Makes `z` (the result of editing pos's set) the key's value and reports the change (as `what`
// when given: KeyEdit), or removes the key when `z` is empty.
template <typename ImplT>
void StoreZSet(ImplT& impl, Dict::Pos pos, ZSetEdit& edit, KeyEdit* what = nullptr) {
  if (edit.get()->size() == 0) {
    impl.Remove(pos, ImplT::Change::kDeleted);  // the edit frees any block it made
    impl.dict.MaybeShrink();
    return;
  }
  ZSetValue* z = edit.Release();
  Entry* e = pos.entry();
  if (e->zset() != z) impl.Swap(pos, MakeZSetEntry(e->key(), z, e->expire_at()));
  if (what) what->size_after = z->size();
  impl.Modified(pos, what);
}

// A new packed set with room for `bytes`, owned until it is handed to an Entry.
std::unique_ptr<ZSetValue> NewZSet(size_t bytes) {
  return std::unique_ptr<ZSetValue>(ZSetValue::Create(bytes));
}

// Links a new key holding what `edit` built (non-empty) over `owner` (the edit's original).
template <typename ImplT>
void AddZSet(ImplT& impl, std::string_view key, uint64_t hash, std::unique_ptr<ZSetValue> owner,
             ZSetEdit& edit) {
  ZSetValue* z = edit.Release();
  if (z == owner.get()) {
    owner.release();  // the Entry takes it
  } else {
    owner.reset();
  }
  impl.Add(MakeZSetEntry(key, z, Entry::kNoExpire), hash);
}

bool BeforeLexMin(std::string_view m, const ZRangeSpec::LexBound& b) {
  switch (b.kind) {
    case ZRangeSpec::LexBound::Kind::kMinusInf:
      return false;
    case ZRangeSpec::LexBound::Kind::kPlusInf:
      return true;
    case ZRangeSpec::LexBound::Kind::kInclusive:
      return m < b.member;
    case ZRangeSpec::LexBound::Kind::kExclusive:
      return m <= b.member;
  }
  return false;
}

bool WithinLexMax(std::string_view m, const ZRangeSpec::LexBound& b) {
  switch (b.kind) {
    case ZRangeSpec::LexBound::Kind::kMinusInf:
      return false;
    case ZRangeSpec::LexBound::Kind::kPlusInf:
      return true;
    case ZRangeSpec::LexBound::Kind::kInclusive:
      return m <= b.member;
    case ZRangeSpec::LexBound::Kind::kExclusive:
      return m < b.member;
  }
  return false;
}

// The ranks [first, last] (ascending) that `range` covers before LIMIT; first > last for none.
struct RankSpan {
  size_t first = 1;
  size_t last = 0;
  bool empty() const { return first > last; }
  size_t size() const { return empty() ? 0 : last - first + 1; }
};

RankSpan SpanOf(const ZSetValue& z, const ZRangeSpec& r) {
  RankSpan span;
  const int64_t len = static_cast<int64_t>(z.size());
  if (len == 0) return span;
  if (r.by == ZRangeSpec::By::kRank) {
    int64_t start = r.start < 0 ? len + r.start : r.start;
    int64_t end = r.stop < 0 ? len + r.stop : r.stop;
    if (start < 0) start = 0;
    if (start > end || start >= len) return span;
    if (end >= len) end = len - 1;
    if (r.rev) {  // ranks counted from the top
      const int64_t s = len - 1 - end;
      end = len - 1 - start;
      start = s;
    }
    span.first = static_cast<size_t>(start);
    span.last = static_cast<size_t>(end);
    return span;
  }
  size_t below, upto;
  if (r.by == ZRangeSpec::By::kScore) {
    below = z.CountWhile(
        [&](std::string_view, double s) { return r.min_exclusive ? s <= r.min : s < r.min; });
    upto = z.CountWhile(
        [&](std::string_view, double s) { return r.max_exclusive ? s < r.max : s <= r.max; });
  } else {
    below = z.CountWhile([&](std::string_view m, double) { return BeforeLexMin(m, r.lex_min); });
    upto = z.CountWhile([&](std::string_view m, double) { return WithinLexMax(m, r.lex_max); });
  }
  if (upto <= below) return span;
  span.first = below;
  span.last = upto - 1;
  return span;
}

// The span after LIMIT, in the walk's direction.
RankSpan Limited(RankSpan span, const ZRangeSpec& r) {
  if (span.empty() || r.by == ZRangeSpec::By::kRank) return span;
  if (r.offset < 0) return RankSpan{};
  const size_t offset = static_cast<size_t>(r.offset);
  if (offset >= span.size()) return RankSpan{};
  size_t n = span.size() - offset;
  if (r.limit >= 0) n = std::min(n, static_cast<size_t>(r.limit));
  if (n == 0) return RankSpan{};
  if (r.rev) {
    span.last -= offset;
    span.first = span.last + 1 - n;
  } else {
    span.first += offset;
    span.last = span.first + n - 1;
  }
  return span;
}

}  // namespace

OpResult<ZAddResult> Db::ZAdd(std::string_view key, const ZAddOptions& opts,
                              std::span<const std::pair<double, std::string_view>> items,
                              int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  ZAddResult result;
  std::unique_ptr<ZSetValue> owner;
  if (pos) {
    if (pos.entry()->kind() != Entry::Kind::kZSet) return OpStatus::kWrongType;
  } else {
    if (opts.xx || items.empty()) return result;  // no key + XX: nothing to do
    size_t bytes = 0;
    for (const auto& [s, m] : items) bytes += ZSetValue::PackedSize(m);
    owner = NewZSet(items.size() <= ZSetValue::kMaxPackedEntries ? bytes : 0);
  }
  ZSetEdit edit(pos ? pos.entry()->zset() : owner.get());
  // The members set and their scores, for observers of an existing key's change (KeyEdit).
  const bool tell = pos && impl_->observed();
  std::vector<std::string_view> set_members;
  std::vector<double> set_scores;
  for (const auto& [score_in, member] : items) {
    double score = score_in;
    std::optional<double> cur = edit.get()->Score(member);
    if (cur) {
      if (opts.nx) continue;
      if (opts.incr) {
        score += *cur;
        if (std::isnan(score)) return OpStatus::kScoreNaN;  // one pair: nothing changed yet
      }
      if ((opts.gt && score <= *cur) || (opts.lt && score >= *cur)) continue;
      if (opts.incr) result.score = score;
      if (score != *cur) {
        edit.Set(member, score);
        ++result.updated;
        if (tell) {
          set_members.push_back(member);
          set_scores.push_back(score);
        }
      }
    } else {
      if (opts.xx) continue;
      edit.Set(member, score);
      ++result.added;
      if (tell) {
        set_members.push_back(member);
        set_scores.push_back(score);
      }
      if (opts.incr) result.score = score;
    }
  }
  if (result.added == 0 && result.updated == 0) return result;
  if (pos) {
    KeyEdit what{.op = KeyEdit::Op::kZSetSet, .items = set_members, .scores = set_scores};
    StoreZSet(*impl_, pos, edit, &what);
  } else {
    AddZSet(*impl_, key, hash, std::move(owner), edit);
  }
  return result;
}

OpResult<int64_t> Db::ZRem(std::string_view key, std::span<const std::string_view> members,
                           int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  if (pos.entry()->kind() != Entry::Kind::kZSet) return OpStatus::kWrongType;
  ZSetEdit edit(pos.entry()->zset());
  int64_t removed = 0;
  for (std::string_view m : members) {
    removed += edit.Del(m) ? 1 : 0;
    if (edit.get()->size() == 0) break;
  }
  if (removed != 0) {
    KeyEdit what{.op = KeyEdit::Op::kZSetRem, .items = members, .scores = {}};
    StoreZSet(*impl_, pos, edit, &what);
  }
  return removed;
}

OpResult<std::optional<double>> Db::ZScore(std::string_view key, std::string_view member,
                                           int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return std::optional<double>();
  if (pos.entry()->kind() != Entry::Kind::kZSet) return OpStatus::kWrongType;
  return pos.entry()->zset()->Score(member);
}

OpResult<std::vector<std::optional<double>>> Db::ZMScore(std::string_view key,
                                                         std::span<const std::string_view> members,
                                                         int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  std::vector<std::optional<double>> out(members.size());
  if (!pos) return out;
  if (pos.entry()->kind() != Entry::Kind::kZSet) return OpStatus::kWrongType;
  for (size_t i = 0; i < members.size(); ++i) out[i] = pos.entry()->zset()->Score(members[i]);
  return out;
}

OpResult<int64_t> Db::ZCard(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  if (pos.entry()->kind() != Entry::Kind::kZSet) return OpStatus::kWrongType;
  return static_cast<int64_t>(pos.entry()->zset()->size());
}

OpResult<int64_t> Db::ZCount(std::string_view key, const ZRangeSpec& range, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  if (pos.entry()->kind() != Entry::Kind::kZSet) return OpStatus::kWrongType;
  return static_cast<int64_t>(SpanOf(*pos.entry()->zset(), range).size());
}

OpResult<ZMembers> Db::ZRange(std::string_view key, const ZRangeSpec& range, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  ZMembers out;
  if (!pos) return out;
  if (pos.entry()->kind() != Entry::Kind::kZSet) return OpStatus::kWrongType;
  const ZSetValue& z = *pos.entry()->zset();
  RankSpan span = Limited(SpanOf(z, range), range);
  if (span.empty()) return out;
  out.reserve(span.size());
  z.Range(span.first, span.last, range.rev, [&](std::string_view m, double s) {
    out.emplace_back(m, s);
    return true;
  });
  return out;
}

OpResult<std::optional<std::pair<int64_t, double>>> Db::ZRank(std::string_view key,
                                                              std::string_view member, bool rev,
                                                              int64_t now_ms) {
  using Result = std::optional<std::pair<int64_t, double>>;
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return Result();
  if (pos.entry()->kind() != Entry::Kind::kZSet) return OpStatus::kWrongType;
  const ZSetValue& z = *pos.entry()->zset();
  std::optional<double> score = z.Score(member);
  if (!score) return Result();
  const int64_t rank = static_cast<int64_t>(*z.Rank(member));
  return Result(
      std::pair<int64_t, double>(rev ? static_cast<int64_t>(z.size()) - 1 - rank : rank, *score));
}

OpResult<int64_t> Db::ZRemRange(std::string_view key, const ZRangeSpec& range, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  if (pos.entry()->kind() != Entry::Kind::kZSet) return OpStatus::kWrongType;
  ZRangeSpec forward = range;
  forward.rev = false;
  const ZSetValue& z = *pos.entry()->zset();
  RankSpan span = SpanOf(z, forward);
  if (span.empty()) return int64_t{0};
  std::vector<std::string> gone;
  gone.reserve(span.size());
  z.Range(span.first, span.last, false, [&](std::string_view m, double) {
    gone.emplace_back(m);
    return true;
  });
  ZSetEdit edit(pos.entry()->zset());
  for (const std::string& m : gone) edit.Del(m);
  StoreZSet(*impl_, pos, edit);
  return static_cast<int64_t>(gone.size());
}

OpResult<ZOwnedMembers> Db::ZPop(std::string_view key, bool max, int64_t count, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  ZOwnedMembers out;
  if (!pos || count <= 0) {
    if (pos && pos.entry()->kind() != Entry::Kind::kZSet) return OpStatus::kWrongType;
    return out;
  }
  if (pos.entry()->kind() != Entry::Kind::kZSet) return OpStatus::kWrongType;
  const ZSetValue& z = *pos.entry()->zset();
  const size_t n = std::min(z.size(), static_cast<size_t>(count));
  out.reserve(n);
  const size_t first = max ? z.size() - n : 0;
  z.Range(first, first + n - 1, max, [&](std::string_view m, double s) {
    out.emplace_back(std::string(m), s);
    return true;
  });
  ZSetEdit edit(pos.entry()->zset());
  for (const auto& [m, s] : out) edit.Del(m);
  std::vector<std::string_view> popped;
  if (impl_->observed()) {
    popped.reserve(out.size());
    for (const auto& [m, s] : out) popped.push_back(m);
  }
  KeyEdit what{.op = KeyEdit::Op::kZSetRem, .items = popped, .scores = {}};
  StoreZSet(*impl_, pos, edit, &what);
  return out;
}

OpResult<ZMembers> Db::ZRandMember(std::string_view key, int64_t count, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  ZMembers out;
  if (!pos) return out;
  if (pos.entry()->kind() != Entry::Kind::kZSet) return OpStatus::kWrongType;
  const ZSetValue& z = *pos.entry()->zset();
  if (count == 0) return out;
  if (count < 0) {  // may repeat
    const uint64_t n = count == INT64_MIN ? uint64_t{1} << 63 : static_cast<uint64_t>(-count);
    out.reserve(static_cast<size_t>(std::min<uint64_t>(n, 1 << 20)));
    for (uint64_t i = 0; i < n; ++i) out.push_back(z.Random(&impl_->rng));
    return out;
  }
  if (static_cast<uint64_t>(count) >= z.size()) {
    // The whole set, from the highest, as Redis's zuiInitIterator walks it.
    out.reserve(z.size());
    z.Range(0, z.size() - 1, true, [&](std::string_view m, double s) {
      out.emplace_back(m, s);
      return true;
    });
    return out;
  }
  // Distinct members: a partial Fisher-Yates shuffle of all of them.
  ZMembers all;
  all.reserve(z.size());
  z.ForEach([&](std::string_view m, double s) {
    all.emplace_back(m, s);
    return true;
  });
  KeepRandom(&all, static_cast<size_t>(count), &impl_->rng);
  return all;
}

OpResult<ZScanResult> Db::ZScan(std::string_view key, uint64_t cursor, std::string_view pattern,
                                size_t count, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  ZScanResult result;
  if (!pos) return result;
  if (pos.entry()->kind() != Entry::Kind::kZSet) return OpStatus::kWrongType;
  ZSetValue* z = pos.entry()->zset();
  result.packed = z->packed();
  const bool all = pattern == "*";
  result.cursor = z->Scan(cursor, count, [&](std::string_view m, double s) {
    if (all || GlobMatch(pattern, m)) result.members.emplace_back(m, s);
  });
  return result;
}

int64_t Db::ZStore(std::string_view key, const ZOwnedMembers& members, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (members.empty()) {
    if (pos) {
      impl_->Remove(pos, Impl::Change::kDeleted);
      impl_->dict.MaybeShrink();
    }
    return 0;
  }
  size_t bytes = 0;
  for (const auto& [m, s] : members) bytes += ZSetValue::PackedSize(m);
  std::unique_ptr<ZSetValue> owner =
      NewZSet(members.size() <= ZSetValue::kMaxPackedEntries ? bytes : 0);
  ZSetEdit edit(owner.get());
  for (const auto& [m, s] : members) edit.Set(m, s);
  ZSetValue* z = edit.Release();
  if (z == owner.get()) {
    owner.release();
  } else {
    owner.reset();
  }
  const int64_t n = static_cast<int64_t>(z->size());
  Entry* e = MakeZSetEntry(key, z, Entry::kNoExpire);
  if (pos) {
    impl_->Overwrite(pos, e);
  } else {
    impl_->Add(e, hash);
  }
  return n;
}

}  // namespace deadbolt::shard

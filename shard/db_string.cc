// Db: the string commands (GET, SET, GETDEL, GETEX, APPEND, STRLEN, GETRANGE, SETRANGE, INCRBY,
// INCRBYFLOAT), with Redis 7's t_string.c semantics, and compare-and-set (SET's IFEQ, IFNE,
// IFDEQ, IFDNE; DELEX, DELIFEQ, DIGEST) with Redis 8.4's.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "shard/base/numeric.h"
#include "shard/db.h"
#include "shard/db_impl.h"
#include "shard/table/heap_string.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace deadbolt::shard {

namespace {

// offset + len, or -1 if that overflows or exceeds max_len (Redis's checkStringLength).
int64_t CheckedEnd(int64_t offset, size_t len, int64_t max_len) {
  if (len > static_cast<size_t>(INT64_MAX - offset)) return -1;
  const int64_t end = offset + static_cast<int64_t>(len);
  return end > max_len ? -1 : end;
}

// True if `text` is the digest `d` as DIGEST shows it (16 lower-case hex digits), ignoring ASCII
// case as Redis's strcasecmp does. Any other text (another length, a non-hex byte) matches no
// digest.
bool DigestTextIs(std::string_view text, uint64_t d) {
  static constexpr char kHex[] = "0123456789abcdef";
  if (text.size() != 16) return false;
  for (size_t i = 0; i < 16; ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kHex[(d >> (60 - 4 * i)) & 0xf]) return false;
  }
  return true;
}

// Whether the string `current` meets an IF* condition (kIfEq..kIfDne).
bool CasHolds(SetOptions::Cond cond, std::string_view expected, std::string_view current) {
  switch (cond) {
    case SetOptions::Cond::kIfEq:
      return current == expected;
    case SetOptions::Cond::kIfNe:
      return current != expected;
    case SetOptions::Cond::kIfDeq:
      return DigestTextIs(expected, StringDigest(current));
    case SetOptions::Cond::kIfDne:
      return !DigestTextIs(expected, StringDigest(current));
    default:
      return true;
  }
}

bool IsCasCond(SetOptions::Cond cond) {
  return cond != SetOptions::Cond::kNone && cond != SetOptions::Cond::kNX &&
         cond != SetOptions::Cond::kXX;
}

}  // namespace

uint64_t StringDigest(std::string_view value) { return XXH3_64bits(value.data(), value.size()); }

char* Db::Impl::GrowString(Dict::Pos pos, size_t new_len) {
  Entry* e = pos.entry();
  const std::string_view old = e->string_value();
  if (new_len == old.size()) {
    return e->kind() == Entry::Kind::kHeapString ? e->heap_string()->data()
                                                 : e->inline_value_data();
  }
  if (e->kind() == Entry::Kind::kHeapString) {
    HeapString* s = HeapString::Reserve(e->heap_string(), new_len);
    s->Resize(new_len);
    e->set_heap_string(s);
    return s->data();
  }
  Entry* grown;
  if (new_len <= HeapString::kMaxInlineGrow) {
    std::string buf(old);
    buf.resize(new_len, '\0');
    grown = Entry::MakeString(e->key(), buf, e->expire_at());
  } else {
    HeapString* s = HeapString::Create(old, HeapString::GreedyCapacity(new_len));
    s->Resize(new_len);
    grown = Entry::MakeHeapString(e->key(), s, e->expire_at());
  }
  Swap(pos, grown);  // pos now names `grown`
  return grown->kind() == Entry::Kind::kHeapString ? grown->heap_string()->data()
                                                   : grown->inline_value_data();
}

Entry* Db::Impl::MakePaddedString(std::string_view key, size_t len, size_t at,
                                  std::string_view bytes) {
  if (len <= HeapString::kMaxInlineGrow) {
    std::string buf(len, '\0');
    if (!bytes.empty()) std::memcpy(buf.data() + at, bytes.data(), bytes.size());
    return Entry::MakeString(key, buf, Entry::kNoExpire);
  }
  HeapString* s = HeapString::Create("", len);
  s->Resize(len);
  if (!bytes.empty()) std::memcpy(s->data() + at, bytes.data(), bytes.size());
  return Entry::MakeHeapString(key, s, Entry::kNoExpire);
}

void Db::Impl::ReplaceValueKeepTtl(Dict::Pos pos, std::string_view value) {
  Entry* e = pos.entry();
  const int64_t at = e->expire_at();
  if (OverwriteStringInPlace(pos, value, at, Change::kModified)) return;
  Overwrite(pos, Entry::MakeString(e->key(), value, at), Change::kModified);
}

OpResult<std::string_view> Db::Get(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return OpStatus::kKeyNotFound;
  const Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  return e->string_value();
}

OpResult<SetResult> Db::Set(std::string_view key, std::string_view value, const SetOptions& opts,
                            int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  SetResult result;
  // GET is answered first: a non-string old value fails the whole command, even when NX or XX
  // would have skipped the write.
  if (opts.get && pos) {
    const Entry* e = pos.entry();
    if (!e->is_string()) return OpStatus::kWrongType;
    result.old_value.emplace(e->string_value());
  }
  switch (opts.cond) {
    case SetOptions::Cond::kNone:
      break;
    case SetOptions::Cond::kNX:
      if (pos) return result;
      break;
    case SetOptions::Cond::kXX:
      if (!pos) return result;
      break;
    default: {  // IFEQ / IFNE / IFDEQ / IFDNE
      if (!pos) {
        // A missing key equals nothing: IFEQ and IFDEQ fail, IFNE and IFDNE create it.
        if (opts.cond == SetOptions::Cond::kIfEq || opts.cond == SetOptions::Cond::kIfDeq) {
          return result;
        }
        break;
      }
      const Entry* e = pos.entry();
      if (!e->is_string()) return OpStatus::kWrongType;
      if (!CasHolds(opts.cond, opts.cond_value, e->string_value())) return result;
      break;
    }
  }
  int64_t at = Entry::kNoExpire;
  switch (opts.expire) {
    case SetOptions::Expire::kClear:
      break;
    case SetOptions::Expire::kKeep:
      if (pos) at = pos.entry()->expire_at();
      break;
    case SetOptions::Expire::kAt:
      at = opts.expire_at_ms;
      break;
  }
  result.written = true;
  if (opts.expire == SetOptions::Expire::kAt && at <= now_ms) {
    // Already expired (Redis's checkAlreadyExpired): the SET succeeds and the key is gone. It
    // was still written, as Redis writes it and lets it expire: a watcher hears of it.
    if (pos) {
      impl_->Remove(pos, Impl::Change::kDeleted);
      impl_->dict.MaybeShrink();
    } else {
      impl_->OnChange(key, Impl::Change::kDeleted);
    }
    return result;
  }
  if (pos) {
    if (!impl_->OverwriteStringInPlace(pos, value, at, Impl::Change::kOverwritten)) {
      impl_->Overwrite(pos, Entry::MakeString(key, value, at));
    }
  } else {
    impl_->Add(Entry::MakeString(key, value, at), hash);
  }
  return result;
}

OpResult<std::string> Db::GetDel(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return OpStatus::kKeyNotFound;
  const Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  std::string value(e->string_value());
  impl_->Remove(pos, Impl::Change::kDeleted);
  impl_->dict.MaybeShrink();
  return value;
}

OpResult<std::string_view> Db::GetEx(std::string_view key, const ExpireChange& change,
                                     int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return OpStatus::kKeyNotFound;
  Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  switch (change.kind) {
    case ExpireChange::Kind::kNone:
      break;
    case ExpireChange::Kind::kPersist:
      if (e->has_expire()) e = impl_->SetExpire(pos, Entry::kNoExpire);
      break;
    case ExpireChange::Kind::kAt:
      if (change.at_ms <= now_ms) {
        // The reply is the value; the key is deleted. The view points into scratch.
        impl_->scratch.assign(e->string_value());
        impl_->Remove(pos, Impl::Change::kDeleted);
        impl_->dict.MaybeShrink();
        return std::string_view(impl_->scratch);
      }
      e = impl_->SetExpire(pos, change.at_ms);
      break;
  }
  return e->string_value();
}

OpResult<int64_t> Db::Append(std::string_view key, std::string_view value, int64_t now_ms,
                             int64_t max_string_len) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) {
    // A missing key is created, even with an empty value.
    impl_->Add(Entry::MakeString(key, value, Entry::kNoExpire), hash);
    return static_cast<int64_t>(value.size());
  }
  const Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  const size_t old_len = e->string_value().size();
  const int64_t new_len = CheckedEnd(static_cast<int64_t>(old_len), value.size(), max_string_len);
  if (new_len < 0) return OpStatus::kStringTooLong;
  if (value.empty()) {
    impl_->Modified(pos);  // unchanged, but written: as in Redis, a watcher hears of it
    return new_len;
  }
  char* data = impl_->GrowString(pos, static_cast<size_t>(new_len));
  std::memcpy(data + old_len, value.data(), value.size());
  impl_->Modified(pos);
  return new_len;
}

OpResult<int64_t> Db::StrLen(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  const Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  return static_cast<int64_t>(e->string_value().size());
}

OpResult<std::string> Db::GetRange(std::string_view key, int64_t start, int64_t end,
                                   int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return std::string();
  const Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  const std::string_view s = e->string_value();
  const int64_t len = static_cast<int64_t>(s.size());
  // Redis's getrangeCommand, step by step (including its clamping of two negative indexes that
  // both fall before the start: GETRANGE "abc" -100 -50 is "a").
  if (start < 0 && end < 0 && start > end) return std::string();
  if (start < 0) start = len + start;
  if (end < 0) end = len + end;
  if (start < 0) start = 0;
  if (end < 0) end = 0;
  if (end >= len) end = len - 1;
  if (len == 0 || start > end) return std::string();
  return std::string(s.substr(static_cast<size_t>(start), static_cast<size_t>(end - start + 1)));
}

Db::LcsResult Db::Lcs(std::string_view a, std::string_view b, bool walk, int64_t min_match_len) {
  const size_t alen = a.size(), blen = b.size();
  const size_t w = blen + 1;
  std::vector<uint32_t> t((alen + 1) * w, 0);  // t[i * w + j]: LCS of a[0, i) and b[0, j)
  for (size_t i = 1; i <= alen; i++) {
    for (size_t j = 1; j <= blen; j++) {
      t[i * w + j] = a[i - 1] == b[j - 1] ? t[(i - 1) * w + j - 1] + 1
                                          : std::max(t[(i - 1) * w + j], t[i * w + j - 1]);
    }
  }
  LcsResult r;
  r.len = t[alen * w + blen];
  if (!walk) return r;
  r.lcs.assign(r.len, '\0');
  size_t k = r.len;
  size_t i = alen, j = blen;
  bool in_range = false;
  LcsMatch cur{};
  auto emit = [&] {
    const uint64_t n = uint64_t{cur.a_end} - cur.a_start + 1;
    if (min_match_len == 0 || n >= static_cast<uint64_t>(min_match_len)) r.matches.push_back(cur);
    in_range = false;
  };
  while (i > 0 && j > 0) {
    if (a[i - 1] == b[j - 1]) {
      r.lcs[--k] = a[i - 1];
      if (!in_range) {
        cur = {static_cast<uint32_t>(i - 1), static_cast<uint32_t>(i - 1),
               static_cast<uint32_t>(j - 1), static_cast<uint32_t>(j - 1)};
        in_range = true;
      } else {
        cur.a_start--;  // consecutive matches extend the range backwards
        cur.b_start--;
      }
      i--;
      j--;
      if (cur.a_start == 0 || cur.b_start == 0) emit();
    } else {
      if (t[(i - 1) * w + j] > t[i * w + j - 1]) {
        i--;
      } else {
        j--;
      }
      if (in_range) emit();
    }
  }
  return r;
}

OpResult<int64_t> Db::SetRange(std::string_view key, int64_t offset, std::string_view value,
                               int64_t now_ms, int64_t max_string_len) {
  if (offset < 0) return OpStatus::kOutOfRange;
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) {
    // An empty value does not create the key.
    if (value.empty()) return int64_t{0};
    const int64_t end = CheckedEnd(offset, value.size(), max_string_len);
    if (end < 0) return OpStatus::kStringTooLong;
    Entry* e =
        Impl::MakePaddedString(key, static_cast<size_t>(end), static_cast<size_t>(offset), value);
    impl_->Add(e, hash);
    return end;
  }
  const Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  const int64_t old_len = static_cast<int64_t>(e->string_value().size());
  if (value.empty()) return old_len;
  const int64_t end = CheckedEnd(offset, value.size(), max_string_len);
  if (end < 0) return OpStatus::kStringTooLong;
  const int64_t new_len = std::max(old_len, end);
  char* data = impl_->GrowString(pos, static_cast<size_t>(new_len));
  std::memcpy(data + offset, value.data(), value.size());
  impl_->Modified(pos);
  return new_len;
}

OpResult<int64_t> Db::IncrBy(std::string_view key, int64_t delta, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  int64_t old = 0;
  if (pos) {
    const Entry* e = pos.entry();
    if (!e->is_string()) return OpStatus::kWrongType;
    if (!ParseInt64(e->string_value(), &old)) return OpStatus::kNotAnInteger;
  }
  if ((delta < 0 && old < 0 && delta < INT64_MIN - old) ||
      (delta > 0 && old > 0 && delta > INT64_MAX - old)) {
    return OpStatus::kIncrOverflow;
  }
  const int64_t result = old + delta;
  const std::string text = FormatInt64(result);
  if (pos) {
    impl_->ReplaceValueKeepTtl(pos, text);
  } else {
    impl_->Add(Entry::MakeString(key, text, Entry::kNoExpire), hash);
  }
  return result;
}

OpResult<std::string> Db::IncrByFloat(std::string_view key, long double delta, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  long double old = 0;
  if (pos) {
    const Entry* e = pos.entry();
    if (!e->is_string()) return OpStatus::kWrongType;
    if (!ParseLongDouble(e->string_value(), &old)) return OpStatus::kNotAFloat;
  }
  const long double result = old + delta;
  if (std::isnan(result) || std::isinf(result)) return OpStatus::kNanOrInf;
  std::string text = FormatLongDoubleHuman(result);
  if (pos) {
    impl_->ReplaceValueKeepTtl(pos, text);
  } else {
    impl_->Add(Entry::MakeString(key, text, Entry::kNoExpire), hash);
  }
  return text;
}

// --- compare-and-set ---

OpResult<bool> Db::DelEx(std::string_view key, SetOptions::Cond cond, std::string_view cond_value,
                         int64_t now_ms) {
  if (cond == SetOptions::Cond::kNX || cond == SetOptions::Cond::kXX) return OpStatus::kSyntax;
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return false;
  if (IsCasCond(cond)) {
    const Entry* e = pos.entry();
    if (!e->is_string()) return OpStatus::kWrongType;
    if (!CasHolds(cond, cond_value, e->string_value())) return false;
  }
  impl_->Remove(pos, Impl::Change::kDeleted);
  impl_->dict.MaybeShrink();
  return true;
}

OpResult<uint64_t> Db::Digest(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return OpStatus::kKeyNotFound;
  const Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  return StringDigest(e->string_value());
}

}  // namespace deadbolt::shard

#include "shard/dump_format/dump_payload.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "shard/base/numeric.h"
#include "shard/dump_format/crc64.h"
#include "shard/dump_format/lzf.h"
#include "shard/dump_format/packed_blobs.h"

namespace deadbolt::shard::dump {
namespace {

// RDB object types (rdb.h).
enum RdbType : uint8_t {
  kString = 0,
  kList = 1,
  kSet = 2,
  kZSet = 3,  // scores as text
  kHash = 4,
  kZSet2 = 5,  // scores as 8-byte doubles
  kListZiplist = 10,
  kSetIntset = 11,
  kZSetZiplist = 12,
  kHashZiplist = 13,
  kListQuicklist = 14,
  kHashListpack = 16,
  kZSetListpack = 17,
  kListQuicklist2 = 18,
  kSetListpack = 20,
};

constexpr size_t kFooter = 10;  // version (2) and CRC-64 (8)

// --- writing ---

void PutLen(std::string* out, uint64_t n) {
  if (n < 64) {
    out->push_back(static_cast<char>(n));
  } else if (n < 16384) {
    out->push_back(static_cast<char>(0x40 | (n >> 8)));
    out->push_back(static_cast<char>(n & 0xFF));
  } else if (n <= UINT32_MAX) {
    out->push_back(static_cast<char>(0x80));
    for (int s = 24; s >= 0; s -= 8) out->push_back(static_cast<char>((n >> s) & 0xFF));
  } else {
    out->push_back(static_cast<char>(0x81));
    for (int s = 56; s >= 0; s -= 8) out->push_back(static_cast<char>((n >> s) & 0xFF));
  }
}

// As Redis's rdbSaveRawString without compression: a canonical integer of up to 11 characters
// that fits 32 bits goes as 1, 2 or 4 bytes (rdbTryIntegerEncoding), anything else as is.
void PutString(std::string* out, std::string_view s) {
  int64_t v;
  if (s.size() <= 11 && ParseInt64(s, &v) && v >= INT32_MIN && v <= INT32_MAX) {
    int width = v >= INT8_MIN && v <= INT8_MAX ? 1 : v >= INT16_MIN && v <= INT16_MAX ? 2 : 4;
    out->push_back(static_cast<char>(0xC0 | (width == 1 ? 0 : width == 2 ? 1 : 2)));
    const auto u = static_cast<uint32_t>(static_cast<int32_t>(v));
    for (int i = 0; i < width; i++) out->push_back(static_cast<char>((u >> (8 * i)) & 0xFF));
    return;
  }
  PutLen(out, s.size());
  out->append(s);
}

// --- reading ---

// Reads a payload's value, each step checked against the bytes left and the decoding budget.
class Reader {
 public:
  Reader(std::string_view in, size_t max_bytes) : in_(in), budget_(max_bytes) {}

  size_t left() const { return in_.size() - pos_; }

  bool Byte(uint8_t* b) {
    if (pos_ >= in_.size()) return false;
    *b = static_cast<uint8_t>(in_[pos_++]);
    return true;
  }

  // rdbLoadLen: a length, or (with *encoded) a special string encoding's number.
  bool Len(uint64_t* n, bool* encoded) {
    uint8_t b;
    if (!Byte(&b)) return false;
    *encoded = false;
    switch (b >> 6) {
      case 0:
        *n = b & 0x3F;
        return true;
      case 1: {
        uint8_t c;
        if (!Byte(&c)) return false;
        *n = (static_cast<uint64_t>(b & 0x3F) << 8) | c;
        return true;
      }
      case 2: {
        int bytes = b == 0x80 ? 4 : b == 0x81 ? 8 : 0;
        if (bytes == 0 || left() < static_cast<size_t>(bytes)) return false;
        uint64_t v = 0;
        for (int i = 0; i < bytes; i++) v = (v << 8) | static_cast<uint8_t>(in_[pos_++]);
        *n = v;
        return true;
      }
      default:
        *encoded = true;
        *n = b & 0x3F;
        return true;
    }
  }

  // A count of elements: a plain length, no more than the bytes left (each takes one at least).
  bool Count(uint64_t* n) {
    bool encoded;
    return Len(n, &encoded) && !encoded && *n <= left();
  }

  // rdbGenericLoadStringObject: raw, an 8/16/32-bit integer, or LZF.
  bool String(std::string* out) {
    uint64_t n;
    bool encoded;
    if (!Len(&n, &encoded)) return false;
    if (!encoded) {
      if (n > left() || !Spend(n)) return false;
      out->assign(in_.substr(pos_, n));
      pos_ += n;
      return true;
    }
    if (n <= 2) {  // RDB_ENC_INT8/16/32, little endian
      const int width = 1 << n;
      if (left() < static_cast<size_t>(width)) return false;
      uint32_t u = 0;
      for (int i = 0; i < width; i++) u |= static_cast<uint32_t>(Next()) << (8 * i);
      int64_t v = width == 1   ? static_cast<int8_t>(u)
                  : width == 2 ? static_cast<int16_t>(u)
                               : static_cast<int32_t>(u);
      *out = FormatInt64(v);
      return Spend(out->size());
    }
    if (n != 3) return false;  // RDB_ENC_LZF is the last
    uint64_t clen, len;
    if (!Len(&clen, &encoded) || encoded || !Len(&len, &encoded) || encoded) return false;
    if (clen > left() || len == 0 || len > clen * kLzfMaxRatio || !Spend(len)) return false;
    out->resize(len);
    if (!LzfDecompress(in_.substr(pos_, clen), out->data(), len)) return false;
    pos_ += clen;
    return true;
  }

  // RDB_TYPE_ZSET's score: a length byte (253 NaN, 254 +inf, 255 -inf) and that much text.
  bool TextDouble(double* d) {
    uint8_t n;
    if (!Byte(&n)) return false;
    if (n == 253) return false;  // NaN is never a score
    if (n >= 254) {
      *d = n == 254 ? INFINITY : -INFINITY;
      return true;
    }
    if (left() < n) return false;
    std::string text(in_.substr(pos_, n));
    pos_ += n;
    return TextScore(text, d);
  }

  // RDB_TYPE_ZSET_2's score: the double's 8 bytes, little endian.
  bool BinaryDouble(std::string* bytes) {
    if (left() < 8) return false;
    *bytes = std::string(in_.substr(pos_, 8));
    pos_ += 8;
    return !std::isnan(ZScoreFromBytes(*bytes));
  }

  // A score as packed encodings keep it (text, or an integer read as text): strtod's reading
  // (zzlStrtod), which must take the whole text and not be NaN.
  static bool TextScore(const std::string& text, double* d) {
    if (text.empty()) return false;
    char* end = nullptr;
    *d = strtod(text.c_str(), &end);
    return end == text.c_str() + text.size() && !std::isnan(*d);
  }

  // The budget: the bytes of strings decoded so far, against max_bytes.
  bool Spend(uint64_t n) {
    if (n > budget_) return false;
    budget_ -= n;
    return true;
  }
  void Refund(uint64_t n) { budget_ += n; }

 private:
  uint8_t Next() { return static_cast<uint8_t>(in_[pos_++]); }

  std::string_view in_;
  size_t pos_ = 1;  // past the type byte
  size_t budget_;
};

template <typename Seq, typename Key>
bool AllDistinct(const Seq& items, Key key) {
  absl::flat_hash_set<std::string_view> seen;
  seen.reserve(items.size());
  for (const auto& item : items) {
    if (!seen.insert(key(item)).second) return false;
  }
  return true;
}

// Pairs (field, value) or (member, score) out of a packed blob's flat elements.
bool PairUp(std::vector<std::string>& flat, std::vector<std::pair<std::string, std::string>>* out,
            bool scores) {
  if (flat.size() % 2 != 0) return false;
  out->reserve(flat.size() / 2);
  for (size_t i = 0; i < flat.size(); i += 2) {
    if (scores) {
      double d;
      if (!Reader::TextScore(flat[i + 1], &d)) return false;
      out->emplace_back(std::move(flat[i]), ZScoreBytes(d));
    } else {
      out->emplace_back(std::move(flat[i]), std::move(flat[i + 1]));
    }
  }
  return true;
}

using BlobReader = bool (*)(std::string_view, std::vector<std::string>*);

// One string holding a packed encoding, read into elements. The budget is charged for the
// elements, not the blob (integers grow as text: a byte becomes up to three digits).
bool ReadBlob(Reader& r, BlobReader read, std::vector<std::string>* out) {
  std::string blob;
  if (!r.String(&blob)) return false;
  r.Refund(blob.size());
  const size_t first = out->size();
  if (!read(blob, out)) return false;
  size_t bytes = 0;
  for (size_t i = first; i < out->size(); i++) bytes += (*out)[i].size();
  return r.Spend(bytes);
}

bool DecodeValue(uint8_t type, Reader& r, KeySnapshot* snap) {
  uint64_t n;
  std::vector<std::string> flat;
  switch (type) {
    case kString:
      snap->type = ValueType::kString;
      return r.String(&snap->str);
    case kList:
    case kSet:
      snap->type = type == kList ? ValueType::kList : ValueType::kSet;
      if (!r.Count(&n)) return false;
      for (uint64_t i = 0; i < n; i++) {  // (grown as read: n is only what the payload claims)
        if (!r.String(&snap->members.emplace_back())) return false;
      }
      break;
    case kHash:
      snap->type = ValueType::kHash;
      if (!r.Count(&n)) return false;
      for (uint64_t i = 0; i < n; i++) {
        auto& [f, v] = snap->fields.emplace_back();
        if (!r.String(&f) || !r.String(&v)) return false;
      }
      break;
    case kZSet:
    case kZSet2:
      snap->type = ValueType::kZSet;
      if (!r.Count(&n)) return false;
      for (uint64_t i = 0; i < n; i++) {
        auto& [m, score] = snap->fields.emplace_back();
        if (!r.String(&m)) return false;
        if (type == kZSet2) {
          if (!r.BinaryDouble(&score)) return false;
        } else {
          double d;
          if (!r.TextDouble(&d)) return false;
          score = ZScoreBytes(d);
        }
      }
      break;
    case kListZiplist:
    case kListQuicklist:
    case kListQuicklist2: {
      snap->type = ValueType::kList;
      if (type == kListZiplist) {
        if (!ReadBlob(r, ReadZiplist, &snap->members)) return false;
        break;
      }
      if (!r.Count(&n)) return false;
      for (uint64_t i = 0; i < n; i++) {
        uint64_t container = 2;  // RDB_TYPE_LIST_QUICKLIST's nodes are all ziplists
        bool encoded;
        if (type == kListQuicklist2 && (!r.Len(&container, &encoded) || encoded)) return false;
        if (container == 1) {  // QUICKLIST_NODE_CONTAINER_PLAIN: one element
          snap->members.emplace_back();
          if (!r.String(&snap->members.back())) return false;
        } else if (container == 2) {
          if (!ReadBlob(r, type == kListQuicklist ? ReadZiplist : ReadListpack, &snap->members)) {
            return false;
          }
        } else {
          return false;
        }
      }
      break;
    }
    case kSetIntset:
    case kSetListpack:
      snap->type = ValueType::kSet;
      if (!ReadBlob(r, type == kSetIntset ? ReadIntset : ReadListpack, &snap->members)) {
        return false;
      }
      break;
    case kHashZiplist:
    case kHashListpack:
    case kZSetZiplist:
    case kZSetListpack: {
      const bool zset = type == kZSetZiplist || type == kZSetListpack;
      snap->type = zset ? ValueType::kZSet : ValueType::kHash;
      const bool zip = type == kHashZiplist || type == kZSetZiplist;
      if (!ReadBlob(r, zip ? ReadZiplist : ReadListpack, &flat)) return false;
      if (!PairUp(flat, &snap->fields, zset)) return false;
      break;
    }
    default:
      return false;  // streams, modules, zipmaps, hashes with field TTLs, and the unknown
  }
  // Shared by every collection: not empty, no element twice.
  if (snap->type == ValueType::kList) return !snap->members.empty();
  if (snap->type == ValueType::kSet) {
    return !snap->members.empty() &&
           AllDistinct(snap->members, [](const std::string& m) -> std::string_view { return m; });
  }
  return !snap->fields.empty() &&
         AllDistinct(snap->fields, [](const auto& p) -> std::string_view { return p.first; });
}

}  // namespace

std::string EncodePayload(const KeySnapshot& snap) {
  std::string out;
  switch (snap.type) {
    case ValueType::kString:
      out.push_back(static_cast<char>(kString));
      PutString(&out, snap.str);
      break;
    case ValueType::kList:
    case ValueType::kSet:
      out.push_back(static_cast<char>(snap.type == ValueType::kList ? kList : kSet));
      PutLen(&out, snap.members.size());
      for (const std::string& m : snap.members) PutString(&out, m);
      break;
    case ValueType::kHash:
      out.push_back(static_cast<char>(kHash));
      PutLen(&out, snap.fields.size());
      for (const auto& [f, v] : snap.fields) {
        PutString(&out, f);
        PutString(&out, v);
      }
      break;
    case ValueType::kZSet:
      out.push_back(static_cast<char>(kZSet2));
      PutLen(&out, snap.fields.size());
      for (const auto& [m, score] : snap.fields) {
        PutString(&out, m);
        out.append(score);  // already the double's 8 bytes, little endian
      }
      break;
    case ValueType::kNone:
    case ValueType::kStream:  // (not written yet: DUMP refuses streams before calling this)
      break;
  }
  out.push_back(static_cast<char>(kRdbVersion & 0xFF));
  out.push_back(static_cast<char>(kRdbVersion >> 8));
  const uint64_t crc = Crc64(0, out);
  for (int i = 0; i < 8; i++) out.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  return out;
}

OpStatus CheckFooter(std::string_view payload) {
  if (payload.size() < kFooter) return OpStatus::kBadDumpFooter;
  const auto* p = reinterpret_cast<const unsigned char*>(payload.data());
  const size_t at = payload.size() - kFooter;
  const unsigned version = p[at] | (p[at + 1] << 8);
  if (version > kRdbVersionMax) return OpStatus::kBadDumpFooter;
  uint64_t said = 0;
  for (int i = 0; i < 8; i++) said |= static_cast<uint64_t>(p[at + 2 + i]) << (8 * i);
  if (Crc64(0, payload.substr(0, at + 2)) != said) return OpStatus::kBadDumpFooter;
  return OpStatus::kOk;
}

OpResult<KeySnapshot> DecodePayload(std::string_view payload, size_t max_bytes) {
  if (payload.size() <= kFooter) return OpStatus::kBadDumpData;
  std::string_view body = payload.substr(0, payload.size() - kFooter);
  Reader r(body, max_bytes);
  KeySnapshot snap;
  if (!DecodeValue(static_cast<uint8_t>(body[0]), r, &snap)) return OpStatus::kBadDumpData;
  return snap;  // (bytes after the value are ignored, as Redis ignores them)
}

}  // namespace deadbolt::shard::dump

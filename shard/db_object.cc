// OBJECT ENCODING/REFCOUNT and MEMORY USAGE: a key's value as Redis 7.0 would describe it.

#include <optional>
#include <string_view>

#include "shard/base/numeric.h"
#include "shard/db.h"
#include "shard/db_impl.h"
#include "shard/types/hash_value.h"
#include "shard/types/list_value.h"
#include "shard/types/set_value.h"
#include "shard/types/zset_value.h"

namespace deadbolt::shard {

void Db::SetIdle(std::string_view key, int64_t idle_seconds, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->LookupNoTouch(key, now_ms, &hash);
  if (!pos) return;
  // The clock wraps after 2^16 units: longer idle times are the longest it can say.
  constexpr int64_t kMaxIdleMs = (Entry::kClockPeriod - 1) * Entry::kClockUnitMs;
  const int64_t idle_ms = idle_seconds >= kMaxIdleMs / 1000 ? kMaxIdleMs : idle_seconds * 1000;
  pos.entry()->Touch(Entry::ClockAt(now_ms - idle_ms));
}

std::optional<Db::ObjectInfo> Db::Object(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->LookupNoTouch(key, now_ms, &hash);  // as Redis: not an access
  if (!pos) return std::nullopt;
  const Entry* e = pos.entry();
  // The entry: its header, key and (inline) value; an estimate of the allocator's block.
  ObjectInfo info{"raw", 16 + key.size(), false, e->access_clock(),
                  e->IdleUnits(now_ms) * Entry::kClockUnitMs / 1000};
  switch (e->kind()) {
    case Entry::Kind::kInlineString:
    case Entry::Kind::kHeapString: {
      // Redis's rules for a value SET stores: a canonical integer that fits a long is "int"
      // (0..9999 shared), up to 44 bytes "embstr", longer "raw".
      std::string_view v = e->string_value();
      info.bytes += v.size();
      int64_t n;
      if (v.size() <= 20 && ParseInt64(v, &n)) {
        info.encoding = "int";
        info.shared_int = n >= 0 && n < 10000;
      } else {
        info.encoding = v.size() <= 44 ? "embstr" : "raw";
      }
      break;
    }
    case Entry::Kind::kHash: {
      auto* h = static_cast<const HashValue*>(e->object());
      info.encoding = h->packed() ? "listpack" : "hashtable";
      info.bytes += h->AllocatedBytes();
      break;
    }
    case Entry::Kind::kZSet: {
      auto* z = static_cast<const ZSetValue*>(e->object());
      info.encoding = z->packed() ? "listpack" : "skiplist";
      info.bytes += z->AllocatedBytes();
      break;
    }
    case Entry::Kind::kList: {
      // Redis 7.0 keeps every list in a quicklist.
      info.encoding = "quicklist";
      info.bytes += static_cast<const ListValue*>(e->object())->AllocatedBytes();
      break;
    }
    case Entry::Kind::kSet: {
      // Redis 7.0 has intset and hashtable (7.2 adds listpack for small sets).
      // A small intset lives in the Entry: its bytes, and no block.
      const SetView s = SetOf(e);
      if (e->has_inline_value()) info.bytes += e->inline_value().size();
      info.encoding = s.is_intset() ? "intset" : "hashtable";
      info.bytes += s.AllocatedBytes();
      break;
    }
  }
  return info;
}

}  // namespace deadbolt::shard

#include "shard/types/list_value.h"

#include <utility>
#include <vector>

namespace deadbolt::shard {

size_t ListValue::AllocatedBytes() const {
  if (packed()) return sizeof(ListValue) + packed_.capacity();
  size_t bytes = sizeof(ListValue) + sizeof(std::deque<std::string>);
  for (const std::string& s : *big_) bytes += sizeof(std::string) + (s.size() > 15 ? s.size() : 0);
  return bytes;
}

size_t ListValue::Offset(size_t i) const {
  size_t off = 0;
  for (size_t k = 0; k < i; ++k) off += PackedSizeAt(off);
  return off;
}

void ListValue::ToLarge() {
  auto big = std::make_unique<std::deque<std::string>>();
  ForEach([&](std::string_view v) { big->emplace_back(v); });
  big_ = std::move(big);
  std::string().swap(packed_);
}

void ListValue::GrowthCheck(std::string_view v) {
  if (packed() && (count_ >= kMaxPackedEntries || v.size() > kMaxPackedLen)) ToLarge();
}

void ListValue::ShrinkCheck() {
  if (packed()) {
    // Give back room once three quarters of a larger buffer are unused.
    if (packed_.capacity() > 256 && packed_.size() * 4 < packed_.capacity()) packed_.shrink_to_fit();
    return;
  }
  if (count_ > kMaxPackedEntries / 2) return;
  size_t bytes = 0;
  for (const std::string& s : *big_) {
    if (s.size() > kMaxPackedLen) return;
    bytes += PackedItem::EncodedSize(s);
  }
  std::string buf;
  buf.reserve(bytes);
  for (const std::string& s : *big_) Append(&buf, s);
  packed_ = std::move(buf);
  big_.reset();
}

void ListValue::PushFront(std::string_view v) {
  GrowthCheck(v);
  if (packed()) {
    char head[PackedItem::kMaxEncoded];
    const size_t n = PackedItem::Encode(v, head);
    ReserveExact(&packed_, n);
    packed_.insert(0, head, n);
  } else {
    big_->emplace_front(v);
  }
  ++count_;
}

void ListValue::PushBack(std::string_view v) {
  GrowthCheck(v);
  if (packed()) {
    Append(&packed_, v);
  } else {
    big_->emplace_back(v);
  }
  ++count_;
}

std::string ListValue::PopFront() {
  std::string out;
  if (packed()) {
    char scratch[PackedItem::kUuidTextLen];
    out = std::string(PackedAt(0, scratch));
    packed_.erase(0, PackedSizeAt(0));
  } else {
    out = std::move(big_->front());
    big_->pop_front();
  }
  --count_;
  ShrinkCheck();
  return out;
}

std::string ListValue::PopBack() {
  std::string out;
  if (packed()) {
    const size_t off = Offset(count_ - 1);
    char scratch[PackedItem::kUuidTextLen];
    out = std::string(PackedAt(off, scratch));
    packed_.resize(off);
  } else {
    out = std::move(big_->back());
    big_->pop_back();
  }
  --count_;
  ShrinkCheck();
  return out;
}

std::string ListValue::At(size_t i) const {
  if (!packed()) return (*big_)[i];
  char scratch[PackedItem::kUuidTextLen];
  return std::string(PackedAt(Offset(i), scratch));
}

void ListValue::Set(size_t i, std::string_view v) {
  if (packed() && v.size() > kMaxPackedLen) ToLarge();
  if (!packed()) {
    (*big_)[i].assign(v);
    return;
  }
  const size_t off = Offset(i);
  char item[PackedItem::kMaxEncoded];
  const size_t n = PackedItem::Encode(v, item);
  packed_.replace(off, PackedSizeAt(off), item, n);
}

void ListValue::Insert(size_t i, std::string_view v) {
  GrowthCheck(v);
  if (packed()) {
    char item[PackedItem::kMaxEncoded];
    const size_t n = PackedItem::Encode(v, item);
    ReserveExact(&packed_, n);
    packed_.insert(Offset(i), item, n);
  } else {
    big_->emplace(big_->begin() + static_cast<std::ptrdiff_t>(i), v);
  }
  ++count_;
}

size_t ListValue::Remove(int64_t count, std::string_view v) {
  // Marks the elements to drop, then rebuilds once: O(n) whatever the count.
  std::vector<bool> drop(count_, false);
  size_t removed = 0;
  const size_t limit = count == 0 ? SIZE_MAX
                                  : count < 0 ? static_cast<size_t>(-(count + 1)) + 1
                                            : static_cast<size_t>(count);
  if (count >= 0) {
    size_t i = 0;
    ForEach([&](std::string_view e) {
      if (removed < limit && e == v) {
        drop[i] = true;
        ++removed;
      }
      ++i;
    });
  } else {
    for (size_t i = count_; i-- > 0 && removed < limit;) {
      if (At(i) == v) {
        drop[i] = true;
        ++removed;
      }
    }
  }
  if (removed == 0) return 0;
  if (packed()) {
    std::string buf;
    buf.reserve(packed_.size());
    size_t i = 0;
    ForEach([&](std::string_view e) {
      if (!drop[i++]) Append(&buf, e);
    });
    packed_ = std::move(buf);
  } else {
    std::deque<std::string> kept;
    for (size_t i = 0; i < count_; ++i) {
      if (!drop[i]) kept.push_back(std::move((*big_)[i]));
    }
    *big_ = std::move(kept);
  }
  count_ -= static_cast<uint32_t>(removed);
  ShrinkCheck();
  return removed;
}

void ListValue::Trim(size_t start, size_t stop) {
  if (start == 0 && stop == count_) return;
  if (packed()) {
    const size_t b = Offset(start);
    size_t e = b;
    for (size_t k = start; k < stop; ++k) e += PackedSizeAt(e);
    packed_ = packed_.substr(b, e - b);
  } else {
    big_->erase(big_->begin() + static_cast<std::ptrdiff_t>(stop), big_->end());
    big_->erase(big_->begin(), big_->begin() + static_cast<std::ptrdiff_t>(start));
  }
  count_ = static_cast<uint32_t>(stop - start);
  ShrinkCheck();
}

}  // namespace deadbolt::shard

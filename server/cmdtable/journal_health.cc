#include "server/cmdtable/journal_health.h"

#include <charconv>

#include "server/base/error_strings.h"

namespace deadbolt::server {

JournalHealth::JournalHealth(int num_shards)
    : num_shards_(num_shards), errs_(std::make_unique<std::atomic<int>[]>(num_shards)) {
  for (int i = 0; i < num_shards; i++) errs_[i].store(0, std::memory_order_relaxed);
}

void JournalHealth::SetFailed(int shard, int err) {
  if (err <= 0) err = 5;  // EIO: a failure must never read as healthy
  if (errs_[shard].exchange(err, std::memory_order_acq_rel) == 0) {
    failing_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void JournalHealth::SetHealthy(int shard) {
  if (errs_[shard].exchange(0, std::memory_order_acq_rel) != 0) {
    failing_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

int JournalHealth::FailingError() const {
  for (int i = 0; i < num_shards_; i++) {
    if (int e = errs_[i].load(std::memory_order_acquire)) return e;
  }
  return 0;  // healed meanwhile
}

std::optional<std::string> JournalRefusal(const JournalHealth& health, const CommandSpec& spec,
                                          bool exec_writes) {
  int err = health.Error();
  if (err == 0) return std::nullopt;
  if (!(spec.flags & kWrite) && !exec_writes && spec.name != "ping") return std::nullopt;
  return errors::AofWriteError(err);
}

size_t RespValueLength(std::string_view buf) {
  size_t pos = 0;
  size_t need = 1;  // values still to read (aggregates add their elements)
  while (need > 0) {
    if (pos >= buf.size()) return 0;
    const char type = buf[pos];
    const size_t eol = buf.find("\r\n", pos);
    if (eol == std::string_view::npos) return 0;
    std::string_view line = buf.substr(pos + 1, eol - pos - 1);
    pos = eol + 2;
    need--;
    int64_t n = 0;
    switch (type) {
      case '$':  // bulk string, verbatim string, bulk error: the length, then the bytes
      case '=':
      case '!':
      case '*':  // array, set, push: n values
      case '~':
      case '>':
      case '%':    // map: n pairs
      case '|': {  // attribute: n pairs, then the value they describe
        auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), n);
        if (ec != std::errc() || p != line.data() + line.size()) return 0;
        if (n < 0) break;  // a RESP2 null
        const auto count = static_cast<size_t>(n);
        if (type == '$' || type == '=' || type == '!') {
          if (count > buf.size() - pos || buf.size() - pos - count < 2) return 0;
          pos += count + 2;
        } else if (type == '%') {
          need += 2 * count;
        } else if (type == '|') {
          need += 2 * count + 1;
        } else {
          need += count;
        }
        break;
      }
      default:  // a simple value on one line (+ - : _ # , ( and the rest)
        break;
    }
  }
  return pos;
}

std::string FailHeldReplies(std::string_view held, std::string_view error) {
  std::string out;
  size_t pos = 0;
  while (pos < held.size()) {
    size_t len = RespValueLength(held.substr(pos));
    if (len == 0) {
      // Not a whole value (never so for our own output): one error stands for the rest.
      len = held.size() - pos;
    } else if (held[pos] == '>') {
      out.append(held.substr(pos, len));
      pos += len;
      continue;
    }
    out += '-';
    out.append(error);
    out += "\r\n";
    pos += len;
  }
  return out;
}

}  // namespace deadbolt::server

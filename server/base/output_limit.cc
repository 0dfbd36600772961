#include "server/base/output_limit.h"

#include <algorithm>
#include <vector>

#include "server/base/config.h"
#include "server/base/str_util.h"

namespace deadbolt::server {

std::optional<std::string> OutputBufferLimits::Parse(std::string_view text) {
  std::vector<std::string_view> words;
  for (size_t i = 0; i < text.size();) {
    const size_t end = std::min(text.find(' ', i), text.size());
    if (end > i) words.push_back(text.substr(i, end - i));
    i = end + 1;
  }
  if (words.size() % 4 != 0) {
    return std::string("Wrong number of arguments in buffer limit configuration.");
  }
  OutputBufferLimits next = *this;
  for (size_t i = 0; i < words.size(); i += 4) {
    const std::string cls = AsciiLower(words[i]);
    OutputBufferLimit* target = nullptr;
    if (cls == "normal") {
      target = &next.normal;
    } else if (cls == "replica" || cls == "slave") {
      target = &next.replica;
    } else if (cls == "pubsub") {
      target = &next.pubsub;
    } else {
      return std::string("Invalid client class specified in buffer limit configuration.");
    }
    std::optional<int64_t> hard = ParseMemory(words[i + 1]), soft = ParseMemory(words[i + 2]);
    int64_t seconds = 0;
    if (!hard || !soft || !ParseNumber(words[i + 3], &seconds) || seconds < 0) {
      return std::string(
          "Error in hard, soft or soft_seconds setting in buffer limit "
          "configuration.");
    }
    *target = OutputBufferLimit{*hard, *soft, seconds};
  }
  *this = next;
  return std::nullopt;
}

std::string OutputBufferLimits::Format() const {
  auto one = [](const char* name, const OutputBufferLimit& l) {
    return std::string(name) + " " + std::to_string(l.hard) + " " + std::to_string(l.soft) + " " +
           std::to_string(l.soft_seconds);
  };
  return one("normal", normal) + " " + one("slave", replica) + " " + one("pubsub", pubsub);
}

bool OutputLimitState::Over(const OutputBufferLimit& limit, size_t unsent, int64_t now_ms) {
  if (limit.hard > 0 && unsent >= static_cast<size_t>(limit.hard)) return true;
  if (limit.soft > 0 && unsent >= static_cast<size_t>(limit.soft)) {
    if (soft_since_ms_ == 0) {
      soft_since_ms_ = now_ms;
      return false;
    }
    return now_ms - soft_since_ms_ > limit.soft_seconds * 1000;
  }
  soft_since_ms_ = 0;
  return false;
}

int64_t ClientEvictionLimit(int64_t setting, int64_t maxmemory) {
  int64_t limit = 0;
  if (setting < 0 && maxmemory > 0) {
    limit = static_cast<int64_t>(static_cast<double>(maxmemory) * static_cast<double>(-setting) /
                                 100.0);
  } else if (setting > 0) {
    limit = setting;
  } else {
    return 0;
  }
  return std::max<int64_t>(limit, 128 * 1024);
}

ClientMemoryBoard::Slot ClientMemoryBoard::slots_[ClientMemoryBoard::kMaxReactors];

void ClientMemoryBoard::Others(int reactor, int reactors, int64_t* total, int64_t* biggest) {
  *total = 0;
  *biggest = 0;
  for (int i = 0; i < reactors && i < kMaxReactors; i++) {
    if (i == reactor) continue;
    *total += slots_[i].total.load(std::memory_order_relaxed);
    *biggest = std::max(*biggest, slots_[i].biggest.load(std::memory_order_relaxed));
  }
}

}  // namespace deadbolt::server

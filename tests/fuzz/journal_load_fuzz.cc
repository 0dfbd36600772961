// libFuzzer harness: the journal loader (shard/journal_format/*) and the manifest parser.
//
// A journal's frames carry checksums, so random bytes would stop at the first frame. The first
// input byte picks the mode:
//   - framed (even): the rest is split at "\xff\xfe" into payloads, each wrapped in a frame with
//     a valid header and checksum, so the fuzzer reaches the record decoder and replay;
//   - raw (odd): the bytes are a journal file as found on disk (torn tails, zero fill, damage).
// Every record delivered is applied to a Shard (ApplyJournalRecord), as start-up replay does.
// Then the loaded keys are written out again (Snapshot -> JournalWriter), read back and applied
// to a second shard: a rewrite of what was loaded must load, whole, as the same keys. The rest of
// the input is also given to ParseJournalManifest.

#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "shard/journal_format/journal_format.h"
#include "shard/shard.h"

namespace {

using namespace deadbolt::shard;  // NOLINT: a harness names many of its parts

void Check(bool ok) {
  if (!ok) std::abort();
}

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; i++) out->push_back(static_cast<char>(v >> (8 * i)));
}

std::string Frame(std::string_view payload) {
  std::string f;
  const uint32_t len = static_cast<uint32_t>(payload.size());
  PutU32(&f, len);
  PutU32(&f, len ^ kFrameLengthCheck);
  PutU32(&f, static_cast<uint32_t>(XXH3_64bits(payload.data(), payload.size())));
  f.append(payload);
  return f;
}

constexpr int kDbs = 4;
constexpr int64_t kNow = 1'700'000'000'000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string bytes;
  if ((data[0] & 1) == 0) {
    size_t pos = 0;
    while (pos <= input.size()) {
      size_t sep = input.find("\xff\xfe", pos);
      if (sep == std::string_view::npos) sep = input.size();
      if (sep > pos) bytes += Frame(input.substr(pos, sep - pos));
      pos = sep + 2;
    }
  } else {
    bytes.assign(input);
  }

  Shard shard(0, kDbs);
  const JournalScan scan = ScanJournal(bytes, [&](const JournalRecord& r) {
    ApplyJournalRecord(r, shard, kNow);
    return true;
  });
  Check(scan.good_bytes <= bytes.size());
  if (scan.status == JournalScan::Status::kOk) Check(scan.good_bytes == bytes.size());

  // Rewrite what was loaded, load it again: the same keys, nothing damaged.
  std::string rewrite;
  JournalWriter w(&rewrite);
  size_t keys = 0;
  for (int db = 0; db < kDbs; db++) {
    std::vector<std::string> names;
    shard.db(db).Keys("*", kNow, [&](std::string_view k) { names.emplace_back(k); });
    for (const std::string& k : names) {
      std::optional<KeySnapshot> snap = shard.db(db).Snapshot(k, kNow);
      Check(snap.has_value());
      w.BeginFrame();
      w.Put(static_cast<uint32_t>(db), k, *snap);
      Check(w.EndFrame());
      keys++;
    }
  }
  Shard again(0, kDbs);
  const JournalScan scan2 = ScanJournal(rewrite, [&](const JournalRecord& r) {
    ApplyJournalRecord(r, again, kNow);
    return true;
  });
  Check(scan2.status == JournalScan::Status::kOk);
  size_t keys2 = 0;
  for (int db = 0; db < kDbs; db++) {
    again.db(db).Keys("*", kNow, [&](std::string_view) { keys2++; });
  }
  Check(keys2 == keys);

  std::string why;
  (void)ParseJournalManifest(input, &why);
  return 0;
}

// Start-up: replaying the journals into the shards and writing each shard a fresh one.
//
// Every shard gets its own thread. When the files on disk were written by the same number of
// shards as now, shard i replays file i and nothing else. Otherwise (the number of threads
// changed, or a crash interrupted an earlier change) each shard reads every file, keeps the keys
// whose slot it owns now, and replays each file into a scratch shard first: a FLUSHDB recorded in
// one old file must only remove the keys that came from that file.
//
// Then each shard writes its keys into a new file (a temporary name, fsync, rename), and only
// when every shard has done so are files of other layouts removed. A crash in between leaves
// files of two layouts holding the same keys, which the next start reads as above.
//
// The manifest (<dir>/deadbolt-journal.manifest, shard/journal_format/journal_format.h) says which
// files make up the data: the layout and the data set's id, which every file also carries in its
// first frame (kDataSet). A listed file that is missing, empty, without a header, of another data
// set or cut inside its base (no kBaseEnd) refuses the start, naming it, unless
// --aof-load-damaged yes (then it is loaded as far as it goes, a copy kept). It is written
// (temporary name, fsync, rename, fsync of the directory) once every fresh file is in place and
// before files of another layout are removed; with the same layout and set it does not change.
// A --dir without one (written before manifests existed, or a start cut short before writing
// it) is read as before, from the newest complete set of files, which must be complete.

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "server/base/log.h"
#include "server/core/journal.h"
#include "server/core/server.h"
#include "shard/journal_format/journal_format.h"

namespace deadbolt::server {
namespace {

struct FoundFile {
  std::string path;
  int shard = 0;
  int num_shards = 0;
};

int64_t RealtimeMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "deadbolt-journal-<i>-of-<n>.aof"
bool ParseName(const std::string& name, int* shard, int* num_shards) {
  int i = 0, n = 0, len = 0;
  if (sscanf(name.c_str(), "deadbolt-journal-%d-of-%d.aof%n", &i, &n, &len) != 2) return false;
  if (static_cast<size_t>(len) != name.size() || n <= 0 || i < 0 || i >= n) return false;
  *shard = i;
  *num_shards = n;
  return true;
}

constexpr char kManifestName[] = "deadbolt-journal.manifest";

std::string FileName(int shard, int num_shards) {
  return "deadbolt-journal-" + std::to_string(shard) + "-of-" + std::to_string(num_shards) + ".aof";
}

std::optional<std::string> ReadFile(const std::string& path, std::string* out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "cannot open " + path + ": " + strerror(errno);
  struct stat st {};
  fstat(fd, &st);
  out->resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out->size()) {
    ssize_t n = read(fd, out->data() + done, out->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return "cannot read " + path + ": " + (n < 0 ? strerror(errno) : "unexpected end");
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  return std::nullopt;
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Transactions found in the journals: which shards' parts are on disk.
using TxKey = std::pair<uint64_t, uint64_t>;  // (nonce, id)
using TxParts = absl::flat_hash_map<TxKey, std::vector<uint32_t>>;

// What one file's records say about the file itself.
struct FileFacts {
  int64_t created = -1;  // the header's created_ns; -1 without a header
  shard::JournalHeader header;
  uint64_t set_id = 0;  // kDataSet in the first frame; 0: none (written before manifests)
  bool base_end = false;
  shard::JournalScan::Status status = shard::JournalScan::Status::kOk;
};

// A reason why `f` cannot be loaded as a member of `set_id` (0: any), or nullopt.
std::optional<std::string> CheckFile(const FoundFile& f, const std::string& bytes,
                                     const FileFacts& facts, uint64_t set_id) {
  if (bytes.empty()) return "the journal " + f.path + " is empty (0 bytes)";
  if (facts.created < 0) {
    return "the journal " + f.path + " does not start with a journal header (replaced or damaged)";
  }
  if (facts.header.shard != static_cast<uint32_t>(f.shard) ||
      facts.header.num_shards != static_cast<uint32_t>(f.num_shards)) {
    return "the journal " + f.path + " holds shard " + std::to_string(facts.header.shard) + " of " +
           std::to_string(facts.header.num_shards) + ", not what its name says";
  }
  if (set_id != 0 && facts.set_id != set_id) {
    char want[17], got[17];
    snprintf(want, sizeof want, "%016llx", static_cast<unsigned long long>(set_id));
    snprintf(got, sizeof got, "%016llx", static_cast<unsigned long long>(facts.set_id));
    return "the journal " + f.path + " belongs to data set " + got + ", not to " + want +
           " named by " + kManifestName + " (replaced by another directory's file?)";
  }
  if (facts.set_id != 0 && !facts.base_end) {
    return "the journal " + f.path + " is cut short inside its base (" +
           std::to_string(bytes.size()) + " bytes): it was truncated or damaged";
  }
  return std::nullopt;
}

// The header's created_ns (-1 without one) and the transaction parts of one file; `real` gets
// the transactions with a part written at run time (not carried).
int64_t CountTx(std::string_view bytes, uint32_t shard, TxParts* parts,
                absl::flat_hash_set<TxKey>* real, FileFacts* facts) {
  int64_t created = -1;
  size_t frame = 0;
  facts->status =
      shard::ScanJournal(bytes, [&](const shard::JournalRecord& r) {
        if (r.first_in_frame) frame++;
        if (r.kind == shard::RecordKind::kHeader && created < 0 && frame == 1 && r.first_in_frame) {
          created = r.header.created_ns;
          facts->header = r.header;
        }
        if (r.kind == shard::RecordKind::kDataSet && frame == 1) facts->set_id = r.set_id;
        if (r.kind == shard::RecordKind::kBaseEnd) facts->base_end = true;
        if (r.kind == shard::RecordKind::kTx) {
          (*parts)[TxKey{r.tx.nonce, r.tx.id}].push_back(shard);
          if (!r.tx.carried) real->insert(TxKey{r.tx.nonce, r.tx.id});
        }
        return true;
      }).status;
  facts->created = created;
  return created;
}

// What start-up knows to decide whether a transaction's part may be replayed.
struct TxIndex {
  TxParts parts;  // per layout below: nonce is per run
  absl::flat_hash_set<TxKey> real;  // a part written at run time is still on disk
  absl::flat_hash_map<std::pair<int, int>, int64_t> created;  // (num_shards, shard) -> created_ns

  // A part is replayed when every participant's part is on disk, or was absorbed by a rewrite
  // of that participant's file: the rewrite file lacks the frames committed before it started
  // receiving frames (its created_ns) but its scan copied their effects (the scan never copies
  // the keys of a transaction still in flight, Journal::ScanBlockedByTx).
  bool Complete(const shard::TxTag& tag, int num_shards) const {
    auto it = parts.find(TxKey{tag.nonce, tag.id});
    for (uint32_t p : tag.participants) {
      if (it != parts.end() &&
          std::find(it->second.begin(), it->second.end(), p) != it->second.end()) {
        continue;
      }
      auto c = created.find({num_shards, static_cast<int>(p)});
      if (c != created.end() && c->second >= tag.commit_ns) continue;
      return false;
    }
    return true;
  }
};

// Replays one file into `shard`, keeping only records for keys that `keep` accepts, and
// skipping each frame that holds part of a cross-shard transaction whose other parts did not
// all reach the disk.
std::optional<std::string> Replay(const Config& config, const FoundFile& f,
                                  const std::string& bytes, const TxIndex& txs,
                                  shard::Shard& shard,
                                  const std::function<bool(std::string_view)>& keep, int64_t now_ms,
                                  size_t* records, size_t* skipped,
                                  std::vector<shard::TxTag>* carry) {
  uint32_t too_high_db = 0;
  bool skipping = false;
  shard::JournalScan scan = shard::ScanJournal(bytes, [&](const shard::JournalRecord& r) {
    if (r.first_in_frame) skipping = false;
    if (r.kind == shard::RecordKind::kTx) {
      skipping = !txs.Complete(r.tx, f.num_shards);
      if (skipping) {
        if (!r.tx.carried) (*skipped)++;
      } else if (carry && txs.real.contains(TxKey{r.tx.nonce, r.tx.id})) {
        // Another shard's part may outlive this file (a crash before every fresh file is in
        // place): the fresh file says that this part is in its keys.
        carry->push_back(r.tx);
        carry->back().carried = true;
      }
      return true;
    }
    if (skipping) return true;
    if (r.kind != shard::RecordKind::kHeader && r.db >= static_cast<uint32_t>(shard.num_dbs())) {
      // Loading without it would drop the key for good (the fresh journal written next).
      too_high_db = r.db;
      return false;
    }
    if ((r.kind == shard::RecordKind::kPut || r.kind == shard::RecordKind::kDel ||
         r.kind == shard::RecordKind::kEdit) &&
        !keep(r.key)) {
      return true;
    }
    shard::ApplyJournalRecord(r, shard, now_ms);
    (*records)++;
    return true;
  });
  if (scan.status == shard::JournalScan::Status::kStopped) {
    return "the journal " + f.path + " has keys in database " + std::to_string(too_high_db) +
           " but the server has only " + std::to_string(shard.num_dbs()) +
           " (--databases): start with --databases " + std::to_string(too_high_db + 1) + " or more";
  }
  const std::string where = f.path + " at offset " + std::to_string(scan.bad_offset);
  switch (scan.status) {
    case shard::JournalScan::Status::kOk:
    case shard::JournalScan::Status::kStopped:  // handled above
      return std::nullopt;
    case shard::JournalScan::Status::kTornTail:
      if (!config.aof_load_truncated) {
        return "the journal " + where + " ends in an incomplete frame (" + scan.error +
               "); start with --aof-load-truncated yes to drop it";
      }
      LogWarning("journal %s ends in an incomplete frame (%s): dropped %zu bytes", where.c_str(),
                 scan.error.c_str(), bytes.size() - scan.bad_offset);
      return std::nullopt;
    case shard::JournalScan::Status::kDamaged:
      if (!config.aof_load_damaged) {
        return "the journal " + where + " is damaged (" + scan.error + "); " +
               std::to_string(bytes.size() - scan.bad_offset) +
               " bytes from there on cannot be read. Start with --aof-load-damaged yes to load "
               "the " +
               std::to_string(scan.bad_offset) +
               " bytes before it and drop the rest (the file is kept as a copy), or see "
               "deadbolt-check-journal";
      }
      LogWarning("journal %s is damaged (%s): loaded what precedes it, dropped %zu bytes",
                 where.c_str(), scan.error.c_str(), bytes.size() - scan.bad_offset);
      return std::nullopt;
  }
  return std::nullopt;
}

// Copies every live key (with its lock record) and the fencing counters of `from` into `to`.
void Merge(shard::Shard& from, shard::Shard& to, int64_t now_ms) {
  for (int d = 0; d < from.num_dbs() && d < to.num_dbs(); d++) {
    shard::Db& src = from.db(d);
    shard::Db& dst = to.db(d);
    dst.AdvanceFencingToken(src.last_fencing_token());
    uint64_t cursor = 0;
    do {
      shard::ScanResult r = src.Scan(cursor, "*", 1024, shard::ValueType::kNone, now_ms);
      for (const std::string& key : r.keys) {
        if (auto snap = src.Snapshot(key, now_ms)) {
          dst.Restore(key, *snap, /*replace=*/true, now_ms, /*with_lock_record=*/true);
        }
      }
      cursor = r.cursor;
    } while (cursor != 0);
  }
}

// Writes the shard's keys into a fresh journal at `path` (through a temporary name).
// `created_ns` goes in the header (see LoadJournals), `carry` as carried kTx records.
std::optional<std::string> WriteFresh(shard::Shard& shard, int index, int num_shards,
                                      const std::string& path, int64_t now_ms, int64_t created_ns,
                                      uint64_t set_id, const std::vector<shard::TxTag>& carry,
                                      size_t* keys) {
  const std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create " + tmp + ": " + strerror(errno);
  std::string buf;
  shard::JournalWriter w(&buf);
  w.BeginFrame();
  shard::JournalHeader h;
  h.shard = static_cast<uint32_t>(index);
  h.num_shards = static_cast<uint32_t>(num_shards);
  h.created_ns = created_ns;
  w.Header(h);
  w.DataSet(set_id);
  w.EndFrame();
  w.BeginFrame();
  for (int d = 0; d < shard.num_dbs(); d++) {
    if (uint64_t t = shard.db(d).last_fencing_token()) w.Token(static_cast<uint32_t>(d), t);
  }
  w.EndFrame();
  for (const shard::TxTag& tag : carry) {
    w.BeginFrame();
    w.Tx(tag);
    w.EndFrame();
  }
  bool ok = true;
  for (int d = 0; d < shard.num_dbs() && ok; d++) {
    shard::Db& db = shard.db(d);
    uint64_t cursor = 0;
    do {
      shard::ScanResult r = db.Scan(cursor, "*", 1024, shard::ValueType::kNone, now_ms);
      w.BeginFrame();
      for (const std::string& key : r.keys) {
        if (auto snap = db.Snapshot(key, now_ms)) {
          w.Put(static_cast<uint32_t>(d), key, *snap);
          (*keys)++;
        }
      }
      w.EndFrame();
      if (buf.size() > (1u << 20)) {
        ok = ok && WriteAll(fd, buf);
        buf.clear();
      }
      cursor = r.cursor;
    } while (cursor != 0 && ok);
  }
  w.BeginFrame();
  w.BaseEnd();
  w.EndFrame();
  ok = ok && WriteAll(fd, buf);
  if (!ok || fdatasync(fd) != 0) {
    std::string err = "cannot write " + tmp + ": " + strerror(errno);
    close(fd);
    unlink(tmp.c_str());
    return err;
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return "cannot rename " + tmp + " to " + path + ": " + strerror(errno);
  }
  return std::nullopt;
}

void SyncDir(const std::string& dir) {
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
}

// Writes the manifest crash-safely: a temporary name, fsync, rename, fsync of the directory.
std::optional<std::string> WriteManifest(const std::string& dir, const shard::JournalManifest& m) {
  const std::string path = dir + "/" + kManifestName;
  const std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create " + tmp + ": " + strerror(errno);
  if (!WriteAll(fd, shard::FormatJournalManifest(m)) || fdatasync(fd) != 0) {
    std::string err = "cannot write " + tmp + ": " + strerror(errno);
    close(fd);
    unlink(tmp.c_str());
    return err;
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return "cannot rename " + tmp + " to " + path + ": " + strerror(errno);
  }
  SyncDir(dir);
  return std::nullopt;
}

// Before a file loaded in spite of damage is replaced or removed, its bytes (as read) are kept
// beside it as <file>.damaged-<unix ms>, fsynced. Start-up never reads or removes such a file.
std::optional<std::string> KeepDamagedCopy(const std::string& path, const std::string& bytes,
                                           int64_t now_ms) {
  const std::string copy = path + ".damaged-" + std::to_string(now_ms);
  int fd = open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot keep a copy of the damaged " + path + ": " + strerror(errno);
  if (!WriteAll(fd, bytes) || fdatasync(fd) != 0) {
    std::string err = "cannot write " + copy + ": " + strerror(errno);
    close(fd);
    unlink(copy.c_str());
    return err;
  }
  close(fd);
  LogWarning("journal: the original bytes of the damaged %s are kept as %s", path.c_str(),
             copy.c_str());
  return std::nullopt;
}

uint64_t RandomSetId() {
  uint64_t id = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &id, sizeof id) != static_cast<ssize_t>(sizeof id)) id = 0;
    close(fd);
  }
  if (id == 0) {
    id = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) ^
         (static_cast<uint64_t>(getpid()) << 32);
  }
  return id == 0 ? 1 : id;
}

// The fresh file could not be written (a nearly full disk: it needs room for a second copy of
// the shard's keys): with the same layout, shard s's old file stands as it is, cut back to its
// whole frames (a torn tail must not end up followed by new frames), and the journal appends to
// it. It decides every transaction part as this start did (the others' fresh files carry what
// it replayed). Not for a damaged file, nor a new layout (its files must all be written).
std::optional<std::string> KeepOldJournal(const std::vector<FoundFile>& found,
                                          const std::vector<std::string>& contents, int s,
                                          const std::string& why) {
  for (size_t i = 0; i < found.size(); i++) {
    if (found[i].shard != s) continue;
    shard::JournalScan scan =
        shard::ScanJournal(contents[i], [](const shard::JournalRecord&) { return true; });
    if (scan.status == shard::JournalScan::Status::kDamaged) return why;
    if (scan.good_bytes < contents[i].size() &&
        truncate(found[i].path.c_str(), static_cast<off_t>(scan.good_bytes)) != 0) {
      return why + "; and cannot cut the torn tail off " + found[i].path + ": " + strerror(errno);
    }
    LogWarning("journal: %s; appending to %s as it is instead of a compacted copy", why.c_str(),
               found[i].path.c_str());
    return std::nullopt;
  }
  return why;
}

}  // namespace

std::optional<std::string> LoadJournals(const Config& config,
                                        const std::vector<shard::Shard*>& shards) {
  if (!config.appendonly) return std::nullopt;
  const int n = static_cast<int>(shards.size());
  if (mkdir(config.dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return "cannot create the directory " + config.dir + ": " + strerror(errno);
  }
  DIR* dir = opendir(config.dir.c_str());
  if (!dir) return "cannot read the directory " + config.dir + ": " + strerror(errno);
  std::vector<FoundFile> found;
  bool has_manifest = false;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    FoundFile f;
    if (ParseName(name, &f.shard, &f.num_shards)) {
      f.path = config.dir + "/" + name;
      found.push_back(f);
    } else if (name == kManifestName) {
      has_manifest = true;
    } else if (name == std::string(kManifestName) + ".tmp" ||
               (name.rfind("deadbolt-journal-", 0) == 0 &&
                (name.ends_with(".aof.tmp") || name.ends_with(".aof.rewrite")))) {
      // A rewrite or start-up copy that never finished: its original is still in place.
      unlink((config.dir + "/" + name).c_str());
    }
  }
  closedir(dir);

  const int64_t now_ms = RealtimeMs();
  const int64_t now_ns = now_ms * 1000000;
  const auto t0 = std::chrono::steady_clock::now();
  const bool force = config.aof_load_damaged;
  const std::string manifest_path = config.dir + "/" + kManifestName;
  std::vector<std::string> problems;  // each refuses the start, unless --aof-load-damaged yes
  std::vector<FoundFile> ignored;     // files of another layout set aside (below)

  // The manifest names the files that make up the data: all of them must be there.
  std::optional<shard::JournalManifest> manifest;
  if (has_manifest) {
    std::string text, why;
    if (auto err = ReadFile(manifest_path, &text)) return err;
    manifest = shard::ParseJournalManifest(text, &why);
    for (uint32_t i = 0; manifest && i < manifest->num_shards; i++) {
      if (manifest->files[i] != FileName(static_cast<int>(i), manifest->num_shards)) {
        why = "unexpected file name " + manifest->files[i];
        manifest.reset();
      }
    }
    if (!manifest) {
      return "the journal manifest " + manifest_path + " cannot be read (" + why +
             "): it says which files hold the data. Restore it, or remove it to load the newest "
             "complete set of journal files in " +
             config.dir;
    }
    std::vector<FoundFile> listed;
    for (uint32_t i = 0; i < manifest->num_shards; i++) {
      auto it = std::find_if(found.begin(), found.end(), [&](const FoundFile& f) {
        return f.shard == static_cast<int>(i) &&
               f.num_shards == static_cast<int>(manifest->num_shards);
      });
      if (it != found.end()) {
        listed.push_back(*it);
      } else {
        problems.push_back("the journal " + config.dir + "/" + manifest->files[i] + ", listed in " +
                           kManifestName + ", is missing");
      }
    }
    for (const FoundFile& f : found) {
      if (f.num_shards != static_cast<int>(manifest->num_shards)) ignored.push_back(f);
    }
    found.swap(listed);
  }
  bool same_layout = true;
  for (const FoundFile& f : found) same_layout = same_layout && f.num_shards == n;
  std::vector<std::optional<std::string>> errors(n);
  std::vector<size_t> records(n), keys(n), skipped(n);
  std::vector<std::vector<shard::TxTag>> carry(n);

  // First every file is read (in parallel) and its cross-shard transactions counted: a part is
  // replayed only if all the parts of its transaction are there, whichever files hold them.
  std::vector<std::string> contents(found.size());
  std::vector<TxParts> counts(n);
  std::vector<absl::flat_hash_set<TxKey>> reals(n);
  std::vector<int64_t> created(found.size(), -1);
  std::vector<FileFacts> facts(found.size());
  {
    std::vector<std::thread> readers;
    for (int s = 0; s < n; s++) {
      readers.emplace_back([&, s] {
        for (size_t i = s; i < found.size(); i += n) {
          if (auto err = ReadFile(found[i].path, &contents[i])) {
            errors[s] = err;
            return;
          }
          created[i] = CountTx(contents[i], static_cast<uint32_t>(found[i].shard), &counts[s],
                               &reals[s], &facts[i]);
        }
      });
    }
    for (auto& t : readers) t.join();
  }
  for (auto& e : errors) {
    if (e) return e;
  }
  if (!manifest && !same_layout) {
    // Files of several layouts: a start-up that changed the layout crashed before removing the
    // old files (or before writing every new one). The newest complete set has every key (a
    // complete set of new files was written from the old set); reading only it keeps each
    // transaction's fate what it was when that set was written.
    absl::flat_hash_map<int, std::vector<size_t>> sets;
    for (size_t i = 0; i < found.size(); i++) sets[found[i].num_shards].push_back(i);
    int best = 0;
    int64_t best_created = 0;
    for (const auto& [layout, files] : sets) {
      std::vector<bool> have(static_cast<size_t>(layout));
      int64_t oldest = INT64_MAX;
      for (size_t i : files) {
        have[static_cast<size_t>(found[i].shard)] = true;
        oldest = std::min(oldest, created[i]);
      }
      if (std::find(have.begin(), have.end(), false) != have.end()) continue;
      if (best == 0 || oldest > best_created) {
        best = layout;
        best_created = oldest;
      }
    }
    if (best != 0) {
      std::vector<FoundFile> kept_found;
      std::vector<std::string> kept_contents;
      std::vector<int64_t> kept_created;
      std::vector<FileFacts> kept_facts;
      for (size_t i = 0; i < found.size(); i++) {
        if (found[i].num_shards != best) continue;
        kept_found.push_back(found[i]);
        kept_contents.push_back(std::move(contents[i]));
        kept_created.push_back(created[i]);
        kept_facts.push_back(facts[i]);
      }
      // Those left out are removed with the other layouts' below, or overwritten.
      for (const FoundFile& f : found) {
        if (f.num_shards != best) ignored.push_back(f);
      }
      found.swap(kept_found);
      contents.swap(kept_contents);
      created.swap(kept_created);
      facts.swap(kept_facts);
      same_layout = best == n;
      // (parts counted in an ignored file name transactions of their own run, which no kept
      // file names: they change no decision.)
    }
  }
  // The data set: the manifest's, else the one the files found name (a start cut short before
  // it wrote the manifest), else a new one (a first start, or files written before manifests).
  uint64_t set_id = manifest ? manifest->set_id : 0;
  if (!manifest) {
    // Without a manifest, every layout found must be complete: a missing file is still lost.
    absl::flat_hash_map<int, std::vector<bool>> have;
    for (const FoundFile& f : found) {
      auto& h = have[f.num_shards];
      h.resize(static_cast<size_t>(f.num_shards));
      h[static_cast<size_t>(f.shard)] = true;
    }
    for (const auto& [layout, h] : have) {
      for (int i = 0; i < layout; i++) {
        if (!h[static_cast<size_t>(i)]) {
          problems.push_back("the journal " + JournalPath(config.dir, i, layout) +
                             " is missing (the other files of its " + std::to_string(layout) +
                             "-shard layout are there)");
        }
      }
    }
    for (size_t i = 0; i < found.size(); i++) {
      if (facts[i].set_id == 0) continue;
      if (set_id == 0) set_id = facts[i].set_id;
      if (facts[i].set_id != set_id) {
        problems.push_back("the journals in " + config.dir +
                           " belong to different data sets, and there is no " + kManifestName);
        break;
      }
    }
    if (!found.empty()) {
      LogNotice(
          "journal: no %s in %s (files written before manifests existed, or a start cut "
          "short before writing it): reading the files found, then writing one",
          kManifestName, config.dir.c_str());
    }
  }
  if (set_id == 0) set_id = RandomSetId();
  std::vector<bool> keep_copy(found.size());
  for (size_t i = 0; i < found.size(); i++) {
    if (auto why = CheckFile(found[i], contents[i], facts[i], manifest ? set_id : 0)) {
      problems.push_back(*why);
      keep_copy[i] = !contents[i].empty();
    }
    if (facts[i].status == shard::JournalScan::Status::kDamaged) keep_copy[i] = true;
  }
  if (!problems.empty()) {
    std::string all;
    for (const std::string& p : problems) all += (all.empty() ? "" : "; ") + p;
    if (!force) {
      return all +
             ". Refusing to start: restore the file, or start with --aof-load-damaged yes to "
             "load what is left (the keys of a lost file are gone, and fencing tokens it had "
             "handed out can be handed out again)";
    }
    LogWarning("journal: %s. Loading what is left (--aof-load-damaged yes)", all.c_str());
  }
  if (force) {
    // A damaged file is about to be replaced or removed: its bytes stay beside it.
    for (size_t i = 0; i < found.size(); i++) {
      if (!keep_copy[i]) continue;
      if (auto err = KeepDamagedCopy(found[i].path, contents[i], now_ms)) return err;
    }
  }
  TxIndex txs;
  for (auto& r : reals) txs.real.insert(r.begin(), r.end());
  for (const TxParts& c : counts) {
    for (const auto& [k, v] : c) {
      auto& all = txs.parts[k];
      all.insert(all.end(), v.begin(), v.end());
    }
  }
  for (size_t i = 0; i < found.size(); i++) {
    txs.created[{found[i].num_shards, found[i].shard}] = created[i];
  }

  std::vector<std::thread> threads;
  for (int s = 0; s < n; s++) {
    threads.emplace_back([&, s] {
      shard::Shard& shard = *shards[s];
      auto owned = [&](std::string_view key) { return Server::SlotOwner(key, n) == s; };
      for (size_t i = 0; i < found.size(); i++) {
        const FoundFile& f = found[i];
        if (f.num_shards == n && f.shard != s) continue;  // all its keys belong to another shard
        if (same_layout) {
          errors[s] =
              Replay(config, f, contents[i], txs, shard, owned, now_ms, &records[s], &skipped[s],
                     &carry[s]);
        } else {
          shard::Shard scratch(s, shard.num_dbs());
          errors[s] =
              Replay(config, f, contents[i], txs, scratch, owned, now_ms, &records[s], &skipped[s],
                     nullptr);
          if (!errors[s]) Merge(scratch, shard, now_ms);
        }
        if (errors[s]) return;
      }
      // The fresh file stands for the old one: with the same layout it keeps the old file's
      // created_ns (what a rewrite absorbed stays absorbed; a part dropped now must not look
      // absorbed to a sibling part in a file not yet replaced if this start is cut short) and
      // carries the parts replayed from it. A new layout starts afresh: the old set stays
      // complete, and is what is read, until every new file is in place.
      int64_t created_ns = now_ns;
      if (same_layout) {
        for (size_t i = 0; i < found.size(); i++) {
          if (found[i].shard == s) created_ns = created[i];
        }
      }
      errors[s] = WriteFresh(shard, s, n, JournalPath(config.dir, s, n), now_ms, created_ns, set_id,
                             same_layout ? carry[s] : std::vector<shard::TxTag>{}, &keys[s]);
      if (errors[s] && same_layout) errors[s] = KeepOldJournal(found, contents, s, *errors[s]);
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) return e;
  }
  // Every shard has its fresh file: the manifest names them (until now it named the old set,
  // which stays complete), and files of another layout are redundant.
  if (!manifest || manifest->num_shards != static_cast<uint32_t>(n) || manifest->set_id != set_id) {
    shard::JournalManifest m;
    m.set_id = set_id;
    m.num_shards = static_cast<uint32_t>(n);
    for (int s = 0; s < n; s++) m.files.push_back(FileName(s, n));
    if (auto err = WriteManifest(config.dir, m)) return err;
  }
  found.insert(found.end(), ignored.begin(), ignored.end());
  for (const FoundFile& f : found) {
    if (f.num_shards != n) {
      if (unlink(f.path.c_str()) != 0 && errno != ENOENT) {
        LogWarning("cannot remove the old journal %s: %s", f.path.c_str(), strerror(errno));
      }
    }
  }
  SyncDir(config.dir);
  size_t total_records = 0, total_keys = 0, total_skipped = 0;
  for (int s = 0; s < n; s++) {
    total_records += records[s];
    total_keys += keys[s];
    total_skipped += skipped[s];
  }
  if (total_skipped) {
    LogWarning(
        "journal: dropped %zu part(s) of cross-shard commands whose other parts never "
        "reached the disk (with appendfsync always, never acknowledged)",
        total_skipped);
  }
  long long ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  if (!found.empty()) {
    LogNotice("journal: replayed %zu records from %zu files in %s (%s), %zu keys live, %lld ms",
              total_records, found.size() - ignored.size(), config.dir.c_str(),
              same_layout ? "same layout" : "layout changed", total_keys, ms);
  }
  return std::nullopt;
}

}  // namespace deadbolt::server

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

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "server/journal.h"
#include "server/log.h"
#include "server/server.h"
#include "shard/journal_format.h"

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

// Replays one file into `shard`, keeping only records for keys that `keep` accepts.
std::optional<std::string> Replay(const Config& config, const FoundFile& f, shard::Shard& shard,
                                  const std::function<bool(std::string_view)>& keep, int64_t now_ms,
                                  size_t* records) {
  std::string bytes;
  if (auto err = ReadFile(f.path, &bytes)) return err;
  uint32_t too_high_db = 0;
  shard::JournalScan scan = shard::ScanJournal(bytes, [&](const shard::JournalRecord& r) {
    if (r.kind != shard::RecordKind::kHeader &&
        r.db >= static_cast<uint32_t>(shard.num_dbs())) {
      // Loading without it would drop the key for good (the fresh journal written next).
      too_high_db = r.db;
      return false;
    }
    if ((r.kind == shard::RecordKind::kPut || r.kind == shard::RecordKind::kDel) && !keep(r.key)) {
      return true;
    }
    shard::ApplyJournalRecord(r, shard, now_ms);
    (*records)++;
    return true;
  });
  if (scan.status == shard::JournalScan::Status::kStopped) {
    return "the journal " + f.path + " has keys in database " + std::to_string(too_high_db) +
           " but the server has only " + std::to_string(shard.num_dbs()) +
           " (--databases): start with --databases " + std::to_string(too_high_db + 1) +
           " or more";
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
               std::to_string(scan.bad_offset) + " bytes before it and drop the rest";
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
std::optional<std::string> WriteFresh(shard::Shard& shard, int index, int num_shards,
                                      const std::string& path, int64_t now_ms, size_t* keys) {
  const std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create " + tmp + ": " + strerror(errno);
  std::string buf;
  shard::JournalWriter w(&buf);
  w.BeginFrame();
  shard::JournalHeader h;
  h.shard = static_cast<uint32_t>(index);
  h.num_shards = static_cast<uint32_t>(num_shards);
  h.created_ms = now_ms;
  w.Header(h);
  w.EndFrame();
  w.BeginFrame();
  for (int d = 0; d < shard.num_dbs(); d++) {
    if (uint64_t t = shard.db(d).last_fencing_token()) w.Token(static_cast<uint32_t>(d), t);
  }
  w.EndFrame();
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
  bool same_layout = true;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    FoundFile f;
    if (ParseName(name, &f.shard, &f.num_shards)) {
      f.path = config.dir + "/" + name;
      same_layout = same_layout && f.num_shards == n;
      found.push_back(f);
    } else if (name.rfind("deadbolt-journal-", 0) == 0 &&
               (name.ends_with(".aof.tmp") || name.ends_with(".aof.rewrite"))) {
      // A rewrite or start-up copy that never finished: its original is still in place.
      unlink((config.dir + "/" + name).c_str());
    }
  }
  closedir(dir);

  const int64_t now_ms = RealtimeMs();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::optional<std::string>> errors(n);
  std::vector<size_t> records(n), keys(n);
  std::vector<std::thread> threads;
  for (int s = 0; s < n; s++) {
    threads.emplace_back([&, s] {
      shard::Shard& shard = *shards[s];
      auto owned = [&](std::string_view key) { return Server::SlotOwner(key, n) == s; };
      for (const FoundFile& f : found) {
        if (f.num_shards == n && f.shard != s) continue;  // all its keys belong to another shard
        if (same_layout) {
          errors[s] = Replay(config, f, shard, owned, now_ms, &records[s]);
        } else {
          shard::Shard scratch(s, shard.num_dbs());
          errors[s] = Replay(config, f, scratch, owned, now_ms, &records[s]);
          if (!errors[s]) Merge(scratch, shard, now_ms);
        }
        if (errors[s]) return;
      }
      errors[s] = WriteFresh(shard, s, n, JournalPath(config.dir, s, n), now_ms, &keys[s]);
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) return e;
  }
  // Every shard has its fresh file: files of another layout are redundant now.
  for (const FoundFile& f : found) {
    if (f.num_shards != n) {
      if (unlink(f.path.c_str()) != 0) {
        LogWarning("cannot remove the old journal %s: %s", f.path.c_str(), strerror(errno));
      }
    }
  }
  int dfd = open(config.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  size_t total_records = 0, total_keys = 0;
  for (int s = 0; s < n; s++) {
    total_records += records[s];
    total_keys += keys[s];
  }
  long long ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  if (!found.empty()) {
    LogNotice("journal: replayed %zu records from %zu files in %s (%s), %zu keys live, %lld ms",
              total_records, found.size(), config.dir.c_str(),
              same_layout ? "same layout" : "layout changed", total_keys, ms);
  }
  return std::nullopt;
}

}  // namespace deadbolt::server

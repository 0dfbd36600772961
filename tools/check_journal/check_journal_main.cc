// deadbolt-check-journal: checks the server's journal files (--appendonly yes) and, asked to,
// repairs one by cutting it at its first bad frame, like redis-check-aof. Reads the frames with
// shard/journal_format/journal_format.h's ScanJournal, the same code the server loads them with.
//
//   deadbolt-check-journal FILE|DIR...          report only
//   deadbolt-check-journal --fix [--yes] FILE   cut FILE at its first bad frame (a copy is kept)
//
// Single-threaded; owns nothing beyond main().

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "shard/journal_format/journal_format.h"

namespace {

using deadbolt::shard::JournalRecord;
using deadbolt::shard::JournalScan;
using deadbolt::shard::RecordKind;

constexpr char kManifestName[] = "deadbolt-journal.manifest";

const char* Usage() {
  return "usage: deadbolt-check-journal [--fix [--yes]] FILE|DIR...\n"
         "\n"
         "Checks deadbolt journal files (deadbolt-journal-<i>-of-<n>.aof). For each file it says\n"
         "  OK         every byte belongs to a whole, valid frame\n"
         "  TRUNCATED  the last frame is cut short at the end of the file (a crash in mid-write;\n"
         "             the server drops it with a warning, or refuses with\n"
         "             --aof-load-truncated no)\n"
         "  DAMAGED    a frame whose bytes changed (the server refuses to start, or with\n"
         "             --aof-load-damaged yes loads what precedes it)\n"
         "  EMPTY, NOT A JOURNAL  no bytes, or no journal header (the server refuses it)\n"
         "with the offset of the first bad frame, and whether the file's base is complete.\n"
         "A DIR is checked as a --dir: its manifest, and every file it lists (every journal\n"
         "file found when it has none).\n"
         "\n"
         "  --fix   cut each TRUNCATED or DAMAGED FILE at its first bad frame, after keeping a\n"
         "          copy of it as FILE.bak-<unix ms>; asks for confirmation first\n"
         "  --yes   with --fix: do not ask\n"
         "\n"
         "Exit status: 0 when every file is OK (or was fixed), 1 when one is not, 2 on a usage\n"
         "or I/O error.\n";
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<std::string> ReadAll(const std::string& path, std::string* out) {
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

std::optional<std::string> WriteCopy(const std::string& path, const std::string& bytes) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create " + path + ": " + strerror(errno);
  std::string_view rest(bytes);
  while (!rest.empty()) {
    ssize_t n = write(fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string err = "cannot write " + path + ": " + strerror(errno);
      close(fd);
      return err;
    }
    rest.remove_prefix(static_cast<size_t>(n));
  }
  if (fsync(fd) != 0) {
    std::string err = "cannot fsync " + path + ": " + strerror(errno);
    close(fd);
    return err;
  }
  close(fd);
  return std::nullopt;
}

struct Options {
  bool fix = false;
  bool yes = false;
  std::vector<std::string> paths;
};

// 0: OK or fixed, 1: not OK, 2: I/O error.
int CheckFile(const std::string& path, const Options& opt) {
  std::string bytes;
  if (auto err = ReadAll(path, &bytes)) {
    fprintf(stderr, "deadbolt-check-journal: %s\n", err->c_str());
    return 2;
  }
  bool header = false, base_end = false;
  uint32_t shard = 0, num_shards = 0;
  uint64_t set_id = 0;
  size_t frame = 0;
  JournalScan scan = deadbolt::shard::ScanJournal(bytes, [&](const JournalRecord& r) {
    if (r.first_in_frame) frame++;
    if (frame == 1 && r.kind == RecordKind::kHeader && r.first_in_frame) {
      header = true;
      shard = r.header.shard;
      num_shards = r.header.num_shards;
    }
    if (frame == 1 && r.kind == RecordKind::kDataSet) set_id = r.set_id;
    if (r.kind == RecordKind::kBaseEnd) base_end = true;
    return true;
  });
  std::string about;
  if (header) {
    about = "shard " + std::to_string(shard) + " of " + std::to_string(num_shards);
    if (set_id) {
      char id[17];
      snprintf(id, sizeof id, "%016" PRIx64, set_id);
      about += std::string(", data set ") + id +
               (base_end ? ", base complete" : ", base INCOMPLETE (the server refuses it)");
    } else {
      about += ", written before journal manifests";
    }
  } else {
    about = bytes.empty() ? "empty" : "no journal header";
  }
  const size_t dropped = bytes.size() - scan.bad_offset;
  switch (scan.status) {
    case JournalScan::Status::kOk:
    case JournalScan::Status::kStopped:
      if (!header) {
        // Frames, but not a journal's (or none at all): nothing to cut.
        printf("%s: %s (%zu bytes; the server refuses it)\n", path.c_str(),
               bytes.empty() ? "EMPTY" : "NOT A JOURNAL", bytes.size());
        return 1;
      }
      printf("%s: OK (%zu bytes, %zu frames, %zu records; %s)\n", path.c_str(), bytes.size(),
             scan.frames, scan.records, about.c_str());
      return 0;
    case JournalScan::Status::kTornTail:
      printf("%s: TRUNCATED at offset %zu (%s): the last %zu bytes are an incomplete frame (%s)\n",
             path.c_str(), scan.bad_offset, scan.error.c_str(), dropped, about.c_str());
      break;
    case JournalScan::Status::kDamaged:
      printf("%s: DAMAGED at offset %zu (%s): %zu bytes from there on cannot be read (%s)\n",
             path.c_str(), scan.bad_offset, scan.error.c_str(), dropped, about.c_str());
      break;
  }
  if (!opt.fix) return 1;
  const std::string copy = path + ".bak-" + std::to_string(NowMs());
  if (!opt.yes) {
    printf("Cut %s at offset %zu, dropping %zu bytes? A copy is kept as %s. [y/N] ", path.c_str(),
           scan.bad_offset, dropped, copy.c_str());
    fflush(stdout);
    std::string answer;
    if (!std::getline(std::cin, answer) || (answer != "y" && answer != "Y" && answer != "yes")) {
      printf("%s: not changed\n", path.c_str());
      return 1;
    }
  }
  if (auto err = WriteCopy(copy, bytes)) {
    fprintf(stderr, "deadbolt-check-journal: %s; %s not changed\n", err->c_str(), path.c_str());
    return 2;
  }
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(scan.bad_offset)) != 0 || fsync(fd) != 0) {
    fprintf(stderr, "deadbolt-check-journal: cannot cut %s: %s (its copy is %s)\n", path.c_str(),
            strerror(errno), copy.c_str());
    if (fd >= 0) close(fd);
    return 2;
  }
  close(fd);
  printf("%s: cut at offset %zu (%zu bytes dropped); the original is kept as %s\n", path.c_str(),
         scan.bad_offset, dropped, copy.c_str());
  if (set_id && !base_end) {
    printf(
        "%s: its base is incomplete: the server still refuses it unless started with "
        "--aof-load-damaged yes\n",
        path.c_str());
  }
  return 0;
}

int CheckDir(const std::string& dir, const Options& opt) {
  std::vector<std::string> files;
  std::string text;
  const std::string mpath = dir + "/" + kManifestName;
  int worst = 0;
  if (access(mpath.c_str(), F_OK) == 0) {
    if (auto err = ReadAll(mpath, &text)) {
      fprintf(stderr, "deadbolt-check-journal: %s\n", err->c_str());
      return 2;
    }
    std::string why;
    auto m = deadbolt::shard::ParseJournalManifest(text, &why);
    if (!m) {
      printf("%s: DAMAGED manifest (%s)\n", mpath.c_str(), why.c_str());
      return 1;
    }
    printf("%s: OK (data set %016" PRIx64 ", %u files)\n", mpath.c_str(), m->set_id, m->num_shards);
    for (const std::string& f : m->files) {
      const std::string p = dir + "/" + f;
      if (access(p.c_str(), F_OK) != 0) {
        printf("%s: MISSING (listed in the manifest; the server refuses to start)\n", p.c_str());
        worst = std::max(worst, 1);
        continue;
      }
      files.push_back(p);
    }
  } else {
    printf("%s: no manifest (written before manifests existed)\n", dir.c_str());
    if (DIR* d = opendir(dir.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        int i = 0, n = 0, len = 0;
        if (sscanf(name.c_str(), "deadbolt-journal-%d-of-%d.aof%n", &i, &n, &len) == 2 &&
            static_cast<size_t>(len) == name.size()) {
          files.push_back(dir + "/" + name);
        }
      }
      closedir(d);
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) printf("%s: no journal files\n", dir.c_str());
  }
  for (const std::string& f : files) worst = std::max(worst, CheckFile(f, opt));
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      fputs(Usage(), stdout);
      return 0;
    } else if (a == "--fix") {
      opt.fix = true;
    } else if (a == "--yes" || a == "-y") {
      opt.yes = true;
    } else if (a.starts_with("-")) {
      fprintf(stderr, "deadbolt-check-journal: unknown option %s\n%s", a.c_str(), Usage());
      return 2;
    } else {
      opt.paths.push_back(a);
    }
  }
  if (opt.paths.empty()) {
    fputs(Usage(), stderr);
    return 2;
  }
  if (opt.yes && !opt.fix) {
    fprintf(stderr, "deadbolt-check-journal: --yes goes with --fix\n");
    return 2;
  }
  int worst = 0;
  for (const std::string& p : opt.paths) {
    struct stat st {};
    if (stat(p.c_str(), &st) != 0) {
      fprintf(stderr, "deadbolt-check-journal: %s: %s\n", p.c_str(), strerror(errno));
      worst = 2;
      continue;
    }
    worst = std::max(worst, S_ISDIR(st.st_mode) ? CheckDir(p, opt) : CheckFile(p, opt));
  }
  return worst;
}

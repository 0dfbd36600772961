// powercutfs: a FUSE pass-through file system that can forget, on command, every write that was
// not fsynced — a power cut for the files below it, without a power cut for the machine.
//
//   powercutfs BACKING_DIR MOUNTPOINT [-f] [fuse options]
//   echo > MOUNTPOINT/.powercut      # every file goes back to what its last fsync covered
//
// Every operation passes through to BACKING_DIR. Before a write (or a truncation) changes a file,
// the bytes it replaces are saved in that file's undo log; fsync/fdatasync of the file empties
// the log (once the real fdatasync has returned). Writing to the control file `.powercut` plays
// every log backwards and cuts each file back to its size at its last fsync. The model is a
// disk that keeps metadata (create, rename, unlink, directories) as soon as it changes and data
// only once fsynced: stricter than ext4's data=ordered about data, kinder about directory
// entries. Files are opened with direct_io and no attribute caching, so the kernel never serves
// bytes from before a cut. Used by lockcrash --power-cut (tools/README.md).
//
// POWERCUTFS_SLOW_FSYNC=TEXT:MS in the environment: an fsync of a file whose path contains TEXT
// first waits MS milliseconds, as a slow disk would (one shard's journal lagging the others).

#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <fcntl.h>
#include <fuse.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

int g_backing = -1;  // the backing directory
std::mutex g_mu;     // guards everything below

struct Undo {
  off_t off;
  std::string old;
};

// A file written since its last fsync.
struct FileLog {
  int fd = -1;            // our own descriptor (the file may be renamed or unlinked meanwhile)
  off_t synced_size = 0;  // its size when last on disk
  std::vector<Undo> undo;
};
std::unordered_map<ino_t, FileLog> g_logs;
uint64_t g_cuts = 0;
std::string g_slow_text;  // POWERCUTFS_SLOW_FSYNC
int g_slow_ms = 0;

constexpr const char* kControl = "/.powercut";
constexpr uint64_t kControlFh = ~uint64_t{0};

// A FUSE path ("/a/b") relative to the backing directory.
const char* Rel(const char* path) { return path[1] ? path + 1 : "."; }

int Err() { return -errno; }

// The log of the file open as `fd`, created with the file's current state as its durable one.
FileLog& LogOf(int fd) {
  struct stat st {};
  fstat(fd, &st);
  auto it = g_logs.find(st.st_ino);
  if (it == g_logs.end()) {
    FileLog l;
    l.fd = dup(fd);
    l.synced_size = st.st_size;
    it = g_logs.emplace(st.st_ino, std::move(l)).first;
  }
  return it->second;
}

// Saves what [off, off + len) holds now (the part below the end of the file).
void SaveOld(FileLog& l, int fd, off_t off, size_t len) {
  Undo u{off, std::string(len, '\0')};
  ssize_t n = pread(fd, u.old.data(), len, off);
  u.old.resize(n > 0 ? static_cast<size_t>(n) : 0);
  if (!u.old.empty()) l.undo.push_back(std::move(u));
}

void PowerCut() {
  std::lock_guard<std::mutex> lock(g_mu);
  size_t files = 0, records = 0;
  uint64_t dropped = 0;  // bytes past the synced size
  for (auto& [ino, l] : g_logs) {
    struct stat st {};
    fstat(l.fd, &st);
    if (st.st_size > l.synced_size) dropped += static_cast<uint64_t>(st.st_size - l.synced_size);
    for (auto it = l.undo.rbegin(); it != l.undo.rend(); ++it) {
      if (pwrite(l.fd, it->old.data(), it->old.size(), it->off) < 0) {
        fprintf(stderr, "powercutfs: undo failed: %s\n", strerror(errno));
      }
      records++;
    }
    if (ftruncate(l.fd, l.synced_size) != 0) {
      fprintf(stderr, "powercutfs: truncate failed: %s\n", strerror(errno));
    }
    close(l.fd);
    files++;
  }
  g_logs.clear();
  g_cuts++;
  fprintf(stderr,
          "powercutfs: power cut %llu: %zu files rolled back, %llu bytes appended and %zu "
          "overwrites undone\n",
          static_cast<unsigned long long>(g_cuts), files, static_cast<unsigned long long>(dropped),
          records);
}

void* Init(fuse_conn_info*, fuse_config* cfg) {
  cfg->use_ino = 0;
  cfg->direct_io = 1;
  cfg->kernel_cache = 0;
  cfg->attr_timeout = 0;
  cfg->entry_timeout = 0;
  cfg->negative_timeout = 0;
  cfg->hard_remove = 1;
  return nullptr;
}

int GetAttr(const char* path, struct stat* st, fuse_file_info* fi) {
  if (strcmp(path, kControl) == 0) {
    memset(st, 0, sizeof(*st));
    st->st_mode = S_IFREG | 0666;
    st->st_nlink = 1;
    return 0;
  }
  int r = fi && fi->fh != kControlFh ? fstat(static_cast<int>(fi->fh), st)
                                     : fstatat(g_backing, Rel(path), st, AT_SYMLINK_NOFOLLOW);
  return r == 0 ? 0 : Err();
}

int Access(const char* path, int mask) {
  if (strcmp(path, kControl) == 0) return 0;
  return faccessat(g_backing, Rel(path), mask, 0) == 0 ? 0 : Err();
}

int ReadDir(const char* path, void* buf, fuse_fill_dir_t fill, off_t, fuse_file_info*,
            fuse_readdir_flags) {
  int fd = openat(g_backing, Rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Err();
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return Err();
  }
  while (dirent* e = readdir(d)) {
    struct stat st {};
    st.st_ino = e->d_ino;
    st.st_mode = static_cast<mode_t>(e->d_type) << 12;
    if (fill(buf, e->d_name, &st, 0, static_cast<fuse_fill_dir_flags>(0))) break;
  }
  closedir(d);
  return 0;
}

int OpenAt(const char* path, int flags, mode_t mode, fuse_file_info* fi) {
  if (strcmp(path, kControl) == 0) {
    fi->fh = kControlFh;
    fi->direct_io = 1;
    return 0;
  }
  const bool trunc = flags & O_TRUNC;
  int fd = openat(g_backing, Rel(path), (flags & ~O_TRUNC) | O_CLOEXEC, mode);
  if (fd < 0) return Err();
  if (trunc) {
    std::lock_guard<std::mutex> lock(g_mu);
    struct stat st {};
    fstat(fd, &st);
    if (st.st_size > 0) {
      FileLog& l = LogOf(fd);
      SaveOld(l, fd, 0, static_cast<size_t>(st.st_size));
    }
    if (ftruncate(fd, 0) != 0) {
      int e = errno;
      close(fd);
      return -e;
    }
  }
  fi->fh = static_cast<uint64_t>(fd);
  fi->direct_io = 1;
  return 0;
}

int Open(const char* path, fuse_file_info* fi) { return OpenAt(path, fi->flags, 0, fi); }

int Create(const char* path, mode_t mode, fuse_file_info* fi) {
  return OpenAt(path, fi->flags | O_CREAT, mode, fi);
}

int Read(const char*, char* buf, size_t size, off_t off, fuse_file_info* fi) {
  if (fi->fh == kControlFh) return 0;
  ssize_t n = pread(static_cast<int>(fi->fh), buf, size, off);
  return n >= 0 ? static_cast<int>(n) : Err();
}

int Write(const char*, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  if (fi->fh == kControlFh) {
    PowerCut();
    return static_cast<int>(size);
  }
  const int fd = static_cast<int>(fi->fh);
  std::lock_guard<std::mutex> lock(g_mu);
  FileLog& l = LogOf(fd);
  SaveOld(l, fd, off, size);
  ssize_t n = pwrite(fd, buf, size, off);
  return n >= 0 ? static_cast<int>(n) : Err();
}

int Truncate(const char* path, off_t size, fuse_file_info* fi) {
  if (strcmp(path, kControl) == 0) return 0;
  int fd = fi && fi->fh != kControlFh ? static_cast<int>(fi->fh)
                                      : openat(g_backing, Rel(path), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Err();
  int r = 0;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    struct stat st {};
    fstat(fd, &st);
    FileLog& l = LogOf(fd);
    if (size < st.st_size) SaveOld(l, fd, size, static_cast<size_t>(st.st_size - size));
    r = ftruncate(fd, size) == 0 ? 0 : Err();
  }
  if (!(fi && fi->fh != kControlFh)) close(fd);
  return r;
}

int Fsync(const char* path, int datasync, fuse_file_info* fi) {
  if (fi->fh == kControlFh) return 0;
  const int fd = static_cast<int>(fi->fh);
  if (g_slow_ms > 0 && path && strstr(path, g_slow_text.c_str())) usleep(g_slow_ms * 1000);
  // What the fsync covers: the writes made before it started.
  struct stat st {};
  size_t covered = 0;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    fstat(fd, &st);
    auto it = g_logs.find(st.st_ino);
    if (it != g_logs.end()) covered = it->second.undo.size();
  }
  int r = datasync ? fdatasync(fd) : fsync(fd);
  if (r != 0) return Err();
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_logs.find(st.st_ino);
  if (it != g_logs.end()) {
    FileLog& l = it->second;
    l.undo.erase(l.undo.begin(), l.undo.begin() + static_cast<long>(std::min(covered, l.undo.size())));
    l.synced_size = st.st_size;
    if (l.undo.empty()) {
      struct stat now {};
      fstat(fd, &now);
      if (now.st_size == l.synced_size) {
        close(l.fd);
        g_logs.erase(it);
      }
    }
  }
  return 0;
}

int FsyncDir(const char*, int, fuse_file_info*) { return 0; }  // directory entries are durable

int Flush(const char*, fuse_file_info*) { return 0; }

int Release(const char*, fuse_file_info* fi) {
  if (fi->fh != kControlFh) close(static_cast<int>(fi->fh));
  return 0;
}

int Rename(const char* from, const char* to, unsigned int flags) {
  return renameat2(g_backing, Rel(from), g_backing, Rel(to), flags) == 0 ? 0 : Err();
}

int Unlink(const char* path) { return unlinkat(g_backing, Rel(path), 0) == 0 ? 0 : Err(); }

int Mkdir(const char* path, mode_t mode) {
  return mkdirat(g_backing, Rel(path), mode) == 0 ? 0 : Err();
}

int Rmdir(const char* path) {
  return unlinkat(g_backing, Rel(path), AT_REMOVEDIR) == 0 ? 0 : Err();
}

int Utimens(const char* path, const timespec tv[2], fuse_file_info* fi) {
  if (strcmp(path, kControl) == 0) return 0;
  int r = fi && fi->fh != kControlFh ? futimens(static_cast<int>(fi->fh), tv)
                                     : utimensat(g_backing, Rel(path), tv, AT_SYMLINK_NOFOLLOW);
  return r == 0 ? 0 : Err();
}

int Chmod(const char* path, mode_t mode, fuse_file_info*) {
  return fchmodat(g_backing, Rel(path), mode, 0) == 0 ? 0 : Err();
}

int StatFs(const char*, struct statvfs* st) { return fstatvfs(g_backing, st) == 0 ? 0 : Err(); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: powercutfs BACKING_DIR MOUNTPOINT [-f] [fuse options]\n"
            "A pass-through file system; writing to MOUNTPOINT/.powercut drops every write that\n"
            "was not fsynced.\n");
    return 2;
  }
  g_backing = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (g_backing < 0) {
    fprintf(stderr, "powercutfs: %s: %s\n", argv[1], strerror(errno));
    return 2;
  }
  if (const char* slow = getenv("POWERCUTFS_SLOW_FSYNC")) {
    const char* colon = strrchr(slow, ':');
    if (colon && colon > slow) {
      g_slow_text.assign(slow, static_cast<size_t>(colon - slow));
      g_slow_ms = atoi(colon + 1);
    }
  }
  fuse_operations ops{};
  ops.init = Init;
  ops.getattr = GetAttr;
  ops.access = Access;
  ops.readdir = ReadDir;
  ops.open = Open;
  ops.create = Create;
  ops.read = Read;
  ops.write = Write;
  ops.truncate = Truncate;
  ops.fsync = Fsync;
  ops.fsyncdir = FsyncDir;
  ops.flush = Flush;
  ops.release = Release;
  ops.rename = Rename;
  ops.unlink = Unlink;
  ops.mkdir = Mkdir;
  ops.rmdir = Rmdir;
  ops.utimens = Utimens;
  ops.chmod = Chmod;
  ops.statfs = StatFs;
  // fuse_main gets everything but the backing directory.
  std::vector<char*> args;
  args.push_back(argv[0]);
  for (int i = 2; i < argc; i++) args.push_back(argv[i]);
  return fuse_main(static_cast<int>(args.size()), args.data(), &ops, nullptr);
}

// lockcrash: crash test of deadbolt-server's journal. Clients take and release locks at full
// speed; the server is killed at a random moment and restarted on the same directory; every
// acknowledged lock must come back and no released one may. See tools/README.md.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tools/common/cli_main.h"
#include "tools/lockcrash/lockcrash_run.h"

int main(int argc, char** argv) {
  using namespace deadbolt::lockcrash;
  Options o;
  if (auto rc =
          deadbolt::tools::ParseCommandLine("lockcrash", argc, argv, ParseOptions, Usage, &o)) {
    return *rc;
  }
  bool temp_dir = false;
  if (o.dir.empty()) {
    char tmpl[] = "/tmp/lockcrash-XXXXXX";
    if (!mkdtemp(tmpl)) {
      perror("lockcrash: mkdtemp");
      return 2;
    }
    o.dir = tmpl;
    temp_dir = true;
  } else {
    std::error_code ec;
    std::filesystem::create_directories(o.dir, ec);
  }
  int rc = Run(o);
  if (temp_dir && rc == 0 && !o.keep_dir) {
    std::error_code ec;
    std::filesystem::remove_all(o.dir, ec);
  } else if (temp_dir) {
    printf("lockcrash: journal files and server logs kept in %s\n", o.dir.c_str());
  }
  return rc;
}

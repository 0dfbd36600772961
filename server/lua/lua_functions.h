#pragma once
// Redis 7 functions (FUNCTION LOAD, FCALL): libraries of Lua code that register named
// functions with redis.register_function, kept server-wide.
//
// A library runs in the same sandboxed interpreter as EVAL's scripts (lua_engine.h). deadbolt
// runs a function as a script made from its library: the library's code as a function of its own,
// with a local `redis` that adds register_function to the real one and keeps what is
// registered, then a call of the function with KEYS and ARGV (FunctionScripts). So a function
// is compiled once per reactor, like a script, and needs nothing of the engine beyond EVAL.
//
// Libraries are not in the journal: like SCRIPT LOAD's cache, they live until a restart.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace deadbolt::server {

// The flags a function may declare (redis.register_function{..., flags = {...}}).
enum FunctionFlag : uint32_t {
  kFnNoWrites = 1 << 0,
  kFnAllowOom = 1 << 1,
  kFnAllowStale = 1 << 2,
  kFnNoCluster = 1 << 3,
  kFnAllowCrossSlotKeys = 1 << 4,
};
// Redis's names of the flags, in its order: "no-writes", "allow-oom", ...
std::vector<std::string_view> FunctionFlagNames(uint32_t flags);

struct LuaFunction {
  std::string name;
  std::string description;  // empty: none
  bool has_description = false;
  uint32_t flags = 0;
  std::string library;
  std::string script;  // the script FCALL runs (FunctionCallScript)
  std::string sha;     // its SHA1, 40 lower-case hex digits
};

struct LuaLibrary {
  std::string name;
  std::string code;  // as loaded, metadata line included
  std::vector<std::shared_ptr<const LuaFunction>> functions;
};

// "#!lua name=mylib" on the first line: the library's name, or Redis's error text.
struct LibraryMetadata {
  std::string name;
  std::string body;  // the code after the metadata line (an empty first line in its place)
};
std::optional<std::string> ParseLibraryMetadata(std::string_view code, LibraryMetadata* out);
// Letters, digits and underscores, at least one.
bool ValidFunctionName(std::string_view name);

// The script that loads a library and returns what it registered, as a flat array: for each
// function its name, its flags (FunctionFlag bits), and its description (or false). Errors of
// redis.register_function are raised with Redis's texts.
std::string FunctionLoadScript(std::string_view body);
// The script FCALL runs: the library, then `name` called with KEYS and ARGV.
std::string FunctionCallScript(std::string_view body, std::string_view name);

// Process-wide; any reactor thread, under its mutex.
class LuaFunctions {
 public:
  static LuaFunctions& Get();
  // Adds (or with replace, replaces) a library whose functions FUNCTION LOAD found. Returns
  // Redis's error text when the library exists (without replace) or one of its functions is
  // another library's.
  std::optional<std::string> Add(LuaLibrary lib, bool replace);
  std::shared_ptr<const LuaFunction> Find(std::string_view function) const;
  bool Delete(std::string_view library);
  void Flush();
  // Every library whose name matches `pattern` (glob; empty: all), by name.
  std::vector<std::shared_ptr<const LuaLibrary>> List(std::string_view pattern) const;
  size_t num_functions() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<const LuaLibrary>> libraries_;  // sorted by name
};

}  // namespace deadbolt::server

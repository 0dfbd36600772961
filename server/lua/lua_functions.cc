#include "server/lua/lua_functions.h"

#include <algorithm>
#include <utility>

#include "server/base/str_util.h"
#include "shard/base/glob.h"

namespace deadbolt::server {
namespace {

// Shadows `redis` for the library's code (run as a function of its own, so that a `return` at
// its top level returns from the library only): register_function checks its arguments as Redis
// does and keeps the function in __fns (by name) and __order. One line, so that the library's
// line numbers stay its own (its metadata line is the chunk's first line, left empty).
constexpr std::string_view kPrologue =
    "local __fns, __order, __flags, __desc = {}, {}, {}, {} "
    "local __bits = {['no-writes'] = 1, ['allow-oom'] = 2, ['allow-stale'] = 4, "
    "['no-cluster'] = 8, ['allow-cross-slot-keys'] = 16} "
    "local redis = setmetatable({register_function = function(...) "
    "local n = select('#', ...) local a, b = ... local name, fn, flags, desc "
    "if type(a) == 'table' then "
    "if n ~= 1 then error('wrong number of arguments to redis.register_function', 0) end "
    "for k, v in pairs(a) do "
    "if k == 'function_name' then name = v elseif k == 'callback' then fn = v "
    "elseif k == 'flags' then flags = v elseif k == 'description' then desc = v "
    "else error('unknown argument given to redis.register_function', 0) end end "
    "if name == nil then error('redis.register_function must get a function name argument', 0) "
    "end "
    "if fn == nil then error('redis.register_function must get a callback argument', 0) end "
    "else "
    "if n ~= 2 then error('wrong number of arguments to redis.register_function', 0) end "
    "name, fn = a, b "
    "if type(fn) ~= 'function' then error('second argument to redis.register_function must be "
    "a function', 0) end end "
    "if type(name) == 'number' then name = tostring(name) end "
    "if type(name) ~= 'string' then error('function_name argument given to "
    "redis.register_function must be a string', 0) end "
    "if type(fn) ~= 'function' then error('callback argument given to redis.register_function "
    "must be a function', 0) end "
    "if desc ~= nil and type(desc) ~= 'string' then error('description argument given to "
    "redis.register_function must be a string', 0) end "
    "if not string.find(name, '^[%w_]+$') then error('Library names can only contain "
    "letters, numbers, or underscores(_) and must be at least one character long', 0) end "
    "if __fns[name] then error('Function already exists in the library', 0) end "
    "local bits = 0 "
    "if flags ~= nil then "
    "if type(flags) ~= 'table' then error('flags argument to redis.register_function must be "
    "a table representing function flags', 0) end "
    "for _, f in ipairs(flags) do "
    "if type(f) ~= 'string' or not __bits[f] then error('unknown flag given', 0) end "
    "bits = bits + __bits[f] end end "
    "__fns[name] = fn __order[#__order + 1] = name __flags[name] = bits __desc[name] = desc "
    "end}, {__index = redis}) ;(function() ";

}  // namespace

std::vector<std::string_view> FunctionFlagNames(uint32_t flags) {
  std::vector<std::string_view> out;
  if (flags & kFnNoWrites) out.push_back("no-writes");
  if (flags & kFnAllowOom) out.push_back("allow-oom");
  if (flags & kFnAllowStale) out.push_back("allow-stale");
  if (flags & kFnNoCluster) out.push_back("no-cluster");
  if (flags & kFnAllowCrossSlotKeys) out.push_back("allow-cross-slot-keys");
  return out;
}

bool ValidFunctionName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::optional<std::string> ParseLibraryMetadata(std::string_view code, LibraryMetadata* out) {
  if (code.substr(0, 2) != "#!") return std::string("ERR Missing library metadata");
  const size_t eol = code.find('\n');
  std::string_view line = code.substr(2, eol == std::string_view::npos ? code.npos : eol - 2);
  // "<engine> name=<library> [other=...]", separated by spaces.
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') i++;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') j++;
    if (j > i) parts.push_back(line.substr(i, j - i));
    i = j;
  }
  if (parts.empty()) return std::string("ERR Engine '' not found");
  if (!EqualsIgnoreCase(parts[0], "lua")) {
    return "ERR Engine '" + std::string(parts[0]) + "' not found";
  }
  std::string name;
  bool named = false;
  for (size_t k = 1; k < parts.size(); k++) {
    const std::string_view p = parts[k];
    if (p.substr(0, 5) == "name=") {
      if (named)
        return std::string("ERR Invalid metadata value, name argument was given multiple times");
      name = std::string(p.substr(5));
      named = true;
    } else {
      return "ERR Invalid metadata value given: " + std::string(p);
    }
  }
  if (!named) return std::string("ERR Library name was not given");
  if (!ValidFunctionName(name)) {
    return std::string(
        "ERR Library names can only contain letters, numbers, or underscores(_) and must be at "
        "least one character long");
  }
  out->name = std::move(name);
  out->body = eol == std::string_view::npos ? std::string() : std::string(code.substr(eol));
  return std::nullopt;
}

std::string FunctionLoadScript(std::string_view body) {
  std::string s(kPrologue);
  s += body;
  s += "\nend)() local __out = {} for _, name in ipairs(__order) do "
       "__out[#__out + 1] = name __out[#__out + 1] = tostring(__flags[name]) "
       "__out[#__out + 1] = __desc[name] and '1' or '0' "
       "__out[#__out + 1] = __desc[name] or '' end return __out";
  return s;
}

std::string FunctionCallScript(std::string_view body, std::string_view name) {
  std::string s(kPrologue);
  s += body;
  s += "\nend)() return __fns['";
  s += name;  // letters, digits and underscores only (ValidFunctionName)
  s += "'](KEYS, ARGV)";
  return s;
}

LuaFunctions& LuaFunctions::Get() {
  static LuaFunctions* const f = new LuaFunctions();
  return *f;
}

std::optional<std::string> LuaFunctions::Add(LuaLibrary lib, bool replace) {
  std::lock_guard<std::mutex> lock(mu_);
  auto same = [&](const std::shared_ptr<const LuaLibrary>& l) { return l->name == lib.name; };
  auto old = std::find_if(libraries_.begin(), libraries_.end(), same);
  if (old != libraries_.end() && !replace) {
    return "ERR Library '" + lib.name + "' already exists";
  }
  for (const auto& l : libraries_) {
    if (l->name == lib.name) continue;
    for (const auto& f : l->functions) {
      for (const auto& g : lib.functions) {
        if (f->name == g->name) return "ERR Function " + g->name + " already exists";
      }
    }
  }
  auto added = std::make_shared<const LuaLibrary>(std::move(lib));
  if (old != libraries_.end()) {
    *old = std::move(added);
  } else {
    libraries_.push_back(std::move(added));
    std::sort(libraries_.begin(), libraries_.end(),
              [](const auto& a, const auto& b) { return a->name < b->name; });
  }
  return std::nullopt;
}

std::shared_ptr<const LuaFunction> LuaFunctions::Find(std::string_view function) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& l : libraries_) {
    for (const auto& f : l->functions) {
      if (f->name == function) return f;
    }
  }
  return nullptr;
}

bool LuaFunctions::Delete(std::string_view library) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(libraries_.begin(), libraries_.end(),
                         [&](const auto& l) { return l->name == library; });
  if (it == libraries_.end()) return false;
  libraries_.erase(it);
  return true;
}

void LuaFunctions::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  libraries_.clear();
}

std::vector<std::shared_ptr<const LuaLibrary>> LuaFunctions::List(std::string_view pattern) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<const LuaLibrary>> out;
  for (const auto& l : libraries_) {
    if (pattern.empty() || shard::GlobMatch(pattern, l->name)) out.push_back(l);
  }
  return out;
}

size_t LuaFunctions::num_functions() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& l : libraries_) n += l->functions.size();
  return n;
}

}  // namespace deadbolt::server

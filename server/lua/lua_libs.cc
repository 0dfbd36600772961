// struct and cmsgpack, the two libraries Redis gives scripts that Debian does not package.
// Written here from their documented behaviour (no code taken from Redis or the originals).
//
// struct.pack(fmt, ...), struct.unpack(fmt, s [, pos]) (values, then the next position) and
// struct.size(fmt). Format: '<' little endian, '>' big endian, '=' native (little here),
// '!n' largest alignment n (default 1: none), 'x' a zero byte, 'b'/'B' signed/unsigned char,
// 'h'/'H' short, 'l'/'L' long (8 bytes), 'T' size_t, 'i[n]'/'I[n]' an n-byte integer (default
// 4), 'f' float, 'd' double, 's' zero-terminated string, 'c[n]' n chars ('c0': the length of the
// string when packing, the previous number read when unpacking), ' ' ignored.
//
// cmsgpack.pack(...) encodes each argument as MessagePack and concatenates them;
// cmsgpack.unpack(s) decodes every value in s. Numbers that are whole and fit 64 bits become
// integers, others a float32 when exact, else a float64; a table whose keys are 1..n is an array,
// any other a map.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include "server/lua/lua_engine.h"

namespace deadbolt::server {
namespace {

// ---------------------------------------------------------------------------------------------
// struct
// ---------------------------------------------------------------------------------------------

constexpr int kMaxIntSize = 8;

struct Header {
  bool little = true;
  int align = 1;
};

int ReadNumber(const char** fmt, int def) {
  if (!std::isdigit(static_cast<unsigned char>(**fmt))) return def;
  int a = 0;
  while (std::isdigit(static_cast<unsigned char>(**fmt)) && a < 100000) {
    a = a * 10 + (*((*fmt)++) - '0');
  }
  return a;
}

// The size of the next option; handles the header options ('<', '>', '!', '=').
size_t OptionSize(lua_State* L, char opt, const char** fmt) {
  switch (opt) {
    case 'B':
    case 'b':
      return 1;
    case 'H':
    case 'h':
      return 2;
    case 'L':
    case 'l':
    case 'T':
      return 8;
    case 'f':
      return sizeof(float);
    case 'd':
      return sizeof(double);
    case 'x':
      return 1;
    case 'c':
      return static_cast<size_t>(ReadNumber(fmt, 1));
    case 'i':
    case 'I': {
      const int sz = ReadNumber(fmt, 4);
      if (sz > kMaxIntSize || sz <= 0) {
        luaL_error(L, "integral size %d is larger than limit of %d", sz, kMaxIntSize);
      }
      return static_cast<size_t>(sz);
    }
    default:
      return 0;  // 's', header options, ' '
  }
}

// Padding before an item of `size` bytes at offset `len`.
size_t Gap(const Header& h, size_t len, size_t size) {
  size_t align = size;
  if (align <= 1 || h.align <= 1) return 0;
  if (align > static_cast<size_t>(h.align)) align = static_cast<size_t>(h.align);
  if ((align & (align - 1)) != 0) return 0;  // not a power of 2: no alignment
  return (align - (len & (align - 1))) & (align - 1);
}

// Handles a header option; false when `opt` is not one.
bool HeaderOption(lua_State* L, char opt, const char** fmt, Header* h) {
  switch (opt) {
    case ' ':
      return true;
    case '>':
      h->little = false;
      return true;
    case '<':
    case '=':
      h->little = true;
      return true;
    case '!': {
      const int a = ReadNumber(fmt, 8);
      if (a <= 0 || (a & (a - 1)) != 0) luaL_error(L, "alignment %d is not a power of 2", a);
      h->align = a;
      return true;
    }
    default:
      return false;
  }
}

void PutInteger(std::string* out, uint64_t v, bool little, size_t size) {
  char buf[kMaxIntSize];
  for (size_t i = 0; i < size; i++) {
    const char byte = static_cast<char>((v >> (8 * i)) & 0xff);
    buf[little ? i : size - 1 - i] = byte;
  }
  out->append(buf, size);
}

uint64_t GetInteger(const char* p, bool little, bool is_signed, size_t size) {
  uint64_t v = 0;
  for (size_t i = 0; i < size; i++) {
    const uint8_t byte = static_cast<uint8_t>(p[little ? size - 1 - i : i]);
    v = (v << 8) | byte;
  }
  if (is_signed && size < 8) {
    const uint64_t mask = uint64_t{1} << (size * 8 - 1);
    v = (v ^ mask) - mask;
  }
  return v;
}

// Bytes go into a luaL_Buffer, not a std::string: the luaL_check* calls below raise Lua errors,
// which longjmp past C++ destructors.
void AddInteger(luaL_Buffer* b, uint64_t v, bool little, size_t size) {
  char buf[kMaxIntSize];
  for (size_t i = 0; i < size; i++) {
    buf[little ? i : size - 1 - i] = static_cast<char>((v >> (8 * i)) & 0xff);
  }
  luaL_addlstring(b, buf, size);
}

int StructPack(lua_State* L) {
  const char* fmt = luaL_checkstring(L, 1);
  Header h;
  int arg = 2;
  size_t total = 0;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  while (*fmt != '\0') {
    const char opt = *fmt++;
    if (HeaderOption(L, opt, &fmt, &h)) continue;
    size_t size = OptionSize(L, opt, &fmt);
    for (size_t gap = Gap(h, total, size); gap > 0; gap--, total++) luaL_addchar(&b, '\0');
    switch (opt) {
      case 'b':
      case 'B':
      case 'h':
      case 'H':
      case 'l':
      case 'L':
      case 'T':
      case 'i':
      case 'I': {
        const lua_Number n = luaL_checknumber(L, arg++);
        const uint64_t v = ((opt >= 'a' && opt <= 'z') || n < 0)
                               ? static_cast<uint64_t>(static_cast<int64_t>(n))
                               : static_cast<uint64_t>(n);
        AddInteger(&b, v, h.little, size);
        break;
      }
      case 'x':
        luaL_addchar(&b, '\0');
        break;
      case 'f': {
        const float f = static_cast<float>(luaL_checknumber(L, arg++));
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        AddInteger(&b, bits, h.little, 4);
        break;
      }
      case 'd': {
        const double d = luaL_checknumber(L, arg++);
        uint64_t bits;
        std::memcpy(&bits, &d, 8);
        AddInteger(&b, bits, h.little, 8);
        break;
      }
      case 'c':
      case 's': {
        size_t l;
        const char* s = luaL_checklstring(L, arg, &l);
        if (opt == 'c' && size == 0) size = l;
        if (opt == 's') size = l;
        luaL_argcheck(L, l >= size, arg, "string too short");
        luaL_addlstring(&b, s, size);
        if (opt == 's') {
          luaL_addchar(&b, '\0');
          size++;
        }
        arg++;
        break;
      }
      default:
        return luaL_error(L, "invalid format option '%c'", opt);
    }
    total += size;
  }
  luaL_pushresult(&b);
  return 1;
}

int StructUnpack(lua_State* L) {
  const char* fmt = luaL_checkstring(L, 1);
  size_t ld;
  const char* data = luaL_checklstring(L, 2, &ld);
  size_t pos = static_cast<size_t>(luaL_optinteger(L, 3, 1)) - 1;
  luaL_argcheck(L, pos <= ld, 3, "offset must be 1 or greater");
  Header h;
  int n = 0;
  lua_Number last = 0;
  while (*fmt != '\0') {
    const char opt = *fmt++;
    if (HeaderOption(L, opt, &fmt, &h)) continue;
    size_t size = OptionSize(L, opt, &fmt);
    pos += Gap(h, pos, size);
    luaL_argcheck(L, pos <= ld && size <= ld - pos, 2, "data string too short");
    luaL_checkstack(L, 2, "too many results");
    switch (opt) {
      case 'b':
      case 'B':
      case 'h':
      case 'H':
      case 'l':
      case 'L':
      case 'T':
      case 'i':
      case 'I': {
        const bool is_signed = opt >= 'a' && opt <= 'z';
        const uint64_t v = GetInteger(data + pos, h.little, is_signed, size);
        last = is_signed ? static_cast<lua_Number>(static_cast<int64_t>(v))
                         : static_cast<lua_Number>(v);
        lua_pushnumber(L, last);
        n++;
        break;
      }
      case 'x':
        break;
      case 'f': {
        const uint32_t bits = static_cast<uint32_t>(GetInteger(data + pos, h.little, false, 4));
        float f;
        std::memcpy(&f, &bits, 4);
        lua_pushnumber(L, f);
        n++;
        break;
      }
      case 'd': {
        const uint64_t bits = GetInteger(data + pos, h.little, false, 8);
        double d;
        std::memcpy(&d, &bits, 8);
        lua_pushnumber(L, d);
        n++;
        break;
      }
      case 'c': {
        if (size == 0) {
          if (n == 0 || !lua_isnumber(L, -1)) luaL_error(L, "format 'c0' needs a previous size");
          size = static_cast<size_t>(last);
          lua_pop(L, 1);
          n--;
          luaL_argcheck(L, size <= ld - pos, 2, "data string too short");
        }
        lua_pushlstring(L, data + pos, size);
        n++;
        break;
      }
      case 's': {
        const void* end = std::memchr(data + pos, '\0', ld - pos);
        if (end == nullptr) luaL_error(L, "unfinished string in data");
        size = static_cast<size_t>(static_cast<const char*>(end) - (data + pos));
        lua_pushlstring(L, data + pos, size);
        n++;
        size++;
        break;
      }
      default:
        return luaL_error(L, "invalid format option '%c'", opt);
    }
    pos += size;
  }
  lua_pushinteger(L, static_cast<lua_Integer>(pos + 1));
  return n + 1;
}

int StructSize(lua_State* L) {
  const char* fmt = luaL_checkstring(L, 1);
  Header h;
  size_t pos = 0;
  while (*fmt != '\0') {
    const char opt = *fmt++;
    if (HeaderOption(L, opt, &fmt, &h)) continue;
    const size_t size = OptionSize(L, opt, &fmt);
    pos += Gap(h, pos, size);
    if (opt == 's') {
      luaL_argerror(L, 1, "options 's' has no fixed size");
    } else if (opt == 'c' && size == 0) {
      luaL_argerror(L, 1, "option 'c0' has no fixed size");
    }
    pos += size;
  }
  lua_pushinteger(L, static_cast<lua_Integer>(pos));
  return 1;
}

// ---------------------------------------------------------------------------------------------
// cmsgpack
// ---------------------------------------------------------------------------------------------

constexpr int kMaxNesting = 16;

void PutBig(std::string* out, uint8_t tag, uint64_t v, size_t size) {
  out->push_back(static_cast<char>(tag));
  PutInteger(out, v, false, size);
}

void PackInteger(std::string* out, int64_t v) {
  if (v >= 0) {
    if (v <= 127) {
      out->push_back(static_cast<char>(v));
    } else if (v <= 0xff) {
      PutBig(out, 0xcc, static_cast<uint64_t>(v), 1);
    } else if (v <= 0xffff) {
      PutBig(out, 0xcd, static_cast<uint64_t>(v), 2);
    } else if (v <= 0xffffffffLL) {
      PutBig(out, 0xce, static_cast<uint64_t>(v), 4);
    } else {
      PutBig(out, 0xcf, static_cast<uint64_t>(v), 8);
    }
  } else if (v >= -32) {
    out->push_back(static_cast<char>(static_cast<uint8_t>(v)));
  } else if (v >= -128) {
    PutBig(out, 0xd0, static_cast<uint64_t>(v), 1);
  } else if (v >= -32768) {
    PutBig(out, 0xd1, static_cast<uint64_t>(v), 2);
  } else if (v >= -2147483648LL) {
    PutBig(out, 0xd2, static_cast<uint64_t>(v), 4);
  } else {
    PutBig(out, 0xd3, static_cast<uint64_t>(v), 8);
  }
}

void PackLength(std::string* out, size_t n, uint8_t fix, size_t fix_max, uint8_t t8, uint8_t t16,
                uint8_t t32) {
  if (n <= fix_max) {
    out->push_back(static_cast<char>(fix | n));
  } else if (t8 != 0 && n <= 0xff) {
    PutBig(out, t8, n, 1);
  } else if (n <= 0xffff) {
    PutBig(out, t16, n, 2);
  } else {
    PutBig(out, t32, n, 4);
  }
}

void PackValue(lua_State* L, int idx, std::string* out, int depth) {
  switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN:
      out->push_back(static_cast<char>(lua_toboolean(L, idx) ? 0xc3 : 0xc2));
      return;
    case LUA_TNUMBER: {
      const double d = lua_tonumber(L, idx);
      if (std::isfinite(d) && std::floor(d) == d && d >= -9223372036854775808.0 &&
          d < 9223372036854775808.0) {
        PackInteger(out, static_cast<int64_t>(d));
        return;
      }
      const float f = static_cast<float>(d);
      if (static_cast<double>(f) == d || std::isnan(d)) {
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        PutBig(out, 0xca, bits, 4);
      } else {
        uint64_t bits;
        std::memcpy(&bits, &d, 8);
        PutBig(out, 0xcb, bits, 8);
      }
      return;
    }
    case LUA_TSTRING: {
      size_t n;
      const char* s = lua_tolstring(L, idx, &n);
      PackLength(out, n, 0xa0, 31, 0xd9, 0xda, 0xdb);
      out->append(s, n);
      return;
    }
    case LUA_TTABLE: {
      if (depth >= kMaxNesting) {
        out->push_back(static_cast<char>(0xc0));
        return;
      }
      const int t = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
      lua_checkstack(L, 4);
      size_t count = 0;
      double max = 0;
      bool array = true;
      lua_pushnil(L);
      while (lua_next(L, t) != 0) {
        lua_pop(L, 1);
        count++;
        if (lua_type(L, -1) == LUA_TNUMBER) {
          const double k = lua_tonumber(L, -1);
          if (k > 0 && std::floor(k) == k) {
            if (k > max) max = k;
            continue;
          }
        }
        array = false;
      }
      if (array && max == static_cast<double>(count)) {
        PackLength(out, count, 0x90, 15, 0, 0xdc, 0xdd);
        for (size_t i = 1; i <= count; i++) {
          lua_rawgeti(L, t, static_cast<int>(i));
          PackValue(L, -1, out, depth + 1);
          lua_pop(L, 1);
        }
        return;
      }
      PackLength(out, count, 0x80, 15, 0, 0xde, 0xdf);
      lua_pushnil(L);
      while (lua_next(L, t) != 0) {
        PackValue(L, -2, out, depth + 1);
        PackValue(L, -1, out, depth + 1);
        lua_pop(L, 1);
      }
      return;
    }
    default:  // nil, functions, userdata
      out->push_back(static_cast<char>(0xc0));
      return;
  }
}

int MsgpackPack(lua_State* L) {
  const int n = lua_gettop(L);
  if (n == 0) return luaL_argerror(L, 0, "MessagePack pack needs input.");
  std::string out;
  for (int i = 1; i <= n; i++) PackValue(L, i, &out, 0);
  lua_pushlstring(L, out.data(), out.size());
  return 1;
}

// Decodes one value at *pos, pushing it; false when the data is cut short.
bool UnpackValue(lua_State* L, const uint8_t* p, size_t len, size_t* pos, int depth) {
  if (*pos >= len || depth > kMaxNesting * 4) return false;
  // Every value decoded stays on the stack until unpack returns them all: past the stack's
  // limit, Redis's cmsgpack error (a Lua error, not a write past the stack's end).
  luaL_checkstack(L, 4, "too many return values at once; use unpack_one or unpack_limit instead.");
  const uint8_t tag = p[(*pos)++];
  auto need = [&](size_t n) { return len - *pos >= n; };
  auto big = [&](size_t n) {
    const uint64_t v = GetInteger(reinterpret_cast<const char*>(p + *pos), false, false, n);
    *pos += n;
    return v;
  };
  auto str = [&](size_t n) {
    if (!need(n)) return false;
    lua_pushlstring(L, reinterpret_cast<const char*>(p + *pos), n);
    *pos += n;
    return true;
  };
  auto array = [&](size_t n) {
    lua_createtable(L, static_cast<int>(n < 1024 ? n : 1024), 0);
    for (size_t i = 1; i <= n; i++) {
      if (!UnpackValue(L, p, len, pos, depth + 1)) return false;
      lua_rawseti(L, -2, static_cast<int>(i));
    }
    return true;
  };
  auto map = [&](size_t n) {
    lua_newtable(L);
    for (size_t i = 0; i < n; i++) {
      if (!UnpackValue(L, p, len, pos, depth + 1)) return false;
      if (!UnpackValue(L, p, len, pos, depth + 1)) return false;
      if (lua_isnil(L, -2)) {
        lua_pop(L, 2);
      } else {
        lua_rawset(L, -3);
      }
    }
    return true;
  };
  if (tag <= 0x7f) {
    lua_pushnumber(L, tag);
    return true;
  }
  if (tag >= 0xe0) {
    lua_pushnumber(L, static_cast<int8_t>(tag));
    return true;
  }
  if ((tag & 0xe0) == 0xa0) return str(tag & 0x1f);
  if ((tag & 0xf0) == 0x90) return array(tag & 0x0f);
  if ((tag & 0xf0) == 0x80) return map(tag & 0x0f);
  switch (tag) {
    case 0xc0:
      lua_pushnil(L);
      return true;
    case 0xc2:
    case 0xc3:
      lua_pushboolean(L, tag == 0xc3);
      return true;
    case 0xca: {
      if (!need(4)) return false;
      const uint32_t bits = static_cast<uint32_t>(big(4));
      float f;
      std::memcpy(&f, &bits, 4);
      lua_pushnumber(L, f);
      return true;
    }
    case 0xcb: {
      if (!need(8)) return false;
      const uint64_t bits = big(8);
      double d;
      std::memcpy(&d, &bits, 8);
      lua_pushnumber(L, d);
      return true;
    }
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf: {
      const size_t n = size_t{1} << (tag - 0xcc);
      if (!need(n)) return false;
      lua_pushnumber(L, static_cast<lua_Number>(big(n)));
      return true;
    }
    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3: {
      const size_t n = size_t{1} << (tag - 0xd0);
      if (!need(n)) return false;
      const uint64_t v =
          GetInteger(reinterpret_cast<const char*>(p + *pos), false, true, n);
      *pos += n;
      lua_pushnumber(L, static_cast<lua_Number>(static_cast<int64_t>(v)));
      return true;
    }
    case 0xc4:
    case 0xd9:
      return need(1) && str(big(1));
    case 0xc5:
    case 0xda:
      return need(2) && str(big(2));
    case 0xc6:
    case 0xdb:
      return need(4) && str(big(4));
    case 0xdc:
      return need(2) && array(big(2));
    case 0xdd:
      return need(4) && array(big(4));
    case 0xde:
      return need(2) && map(big(2));
    case 0xdf:
      return need(4) && map(big(4));
    default:
      return false;
  }
}

int MsgpackUnpack(lua_State* L) {
  size_t len;
  const char* s = luaL_checklstring(L, 1, &len);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(s);
  size_t pos = 0;
  int n = 0;
  const int base = lua_gettop(L);
  while (pos < len) {
    if (!UnpackValue(L, p, len, &pos, 0)) {
      lua_settop(L, base);
      return luaL_error(L, "Bad data format in input.");
    }
    n++;
  }
  return n;
}

void Register(lua_State* L, const char* name, const luaL_Reg* fns) {
  lua_newtable(L);
  for (const luaL_Reg* f = fns; f->name; f++) {
    lua_pushcfunction(L, f->func);
    lua_setfield(L, -2, f->name);
  }
  lua_setglobal(L, name);
}

}  // namespace

int OpenLuaStruct(lua_State* L) {
  static const luaL_Reg kFns[] = {
      {"pack", StructPack}, {"unpack", StructUnpack}, {"size", StructSize}, {nullptr, nullptr}};
  Register(L, "struct", kFns);
  return 0;
}

int OpenLuaCmsgpack(lua_State* L) {
  static const luaL_Reg kFns[] = {
      {"pack", MsgpackPack}, {"unpack", MsgpackUnpack}, {nullptr, nullptr}};
  Register(L, "cmsgpack", kFns);
  return 0;
}

}  // namespace deadbolt::server

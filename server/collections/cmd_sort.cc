// SORT and SORT_RO over a list, set or sorted set, as Redis 7.0's sort.c: numeric or ALPHA, BY a
// pattern of weight keys (or hash fields, "weight_*->field"), LIMIT, GET patterns ("#" for the
// element), ASC/DESC, STORE into a list.
//
// The keys a BY or GET pattern names are found while the command runs, so they cannot be locked
// or routed beforehand: they must live on the sorted key's shard, which a hash tag in both the key
// and the pattern makes sure of ("SORT {u1}ids BY {u1}weight_*"); one that does not is refused
// with an error saying so. With --threads 1 every key qualifies. STORE's destination may be on any
// shard (found, then stored there, under both keys' locks).

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/acl/acl.h"
#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "shard/db.h"
#include "shard/shard.h"

namespace deadbolt::server {

namespace {

struct SortArgs {
  bool desc = false, alpha = false, dontsort = false;
  int64_t limit_start = 0, limit_count = -1;
  std::optional<std::string> by;  // a pattern with '*'
  std::vector<std::string> gets;
  std::optional<std::string> store;
};

// The options; false after setting *error (Redis's order: the options before the key).
bool ParseSort(CmdArgs args, bool readonly, const acl::User* user, SortArgs* o,
               std::string* error) {
  const bool full_key_access = user == nullptr || user->KeyAllowed("*", acl::kKeyRead);
  for (size_t j = 2; j < args.size(); j++) {
    const size_t left = args.size() - j - 1;
    if (EqualsIgnoreCase(args[j], "asc")) {
      o->desc = false;
    } else if (EqualsIgnoreCase(args[j], "desc")) {
      o->desc = true;
    } else if (EqualsIgnoreCase(args[j], "alpha")) {
      o->alpha = true;
    } else if (EqualsIgnoreCase(args[j], "limit") && left >= 2) {
      if (!StringToInt64(args[j + 1], &o->limit_start) ||
          !StringToInt64(args[j + 2], &o->limit_count)) {
        *error = std::string(errors::kNotInteger);
        return false;
      }
      j += 2;
    } else if (!readonly && EqualsIgnoreCase(args[j], "store") && left >= 1) {
      o->store = std::string(args[++j]);
    } else if (EqualsIgnoreCase(args[j], "by") && left >= 1) {
      const std::string_view pattern = args[++j];
      if (pattern.find('*') == std::string_view::npos) {
        o->dontsort = true;  // BY nosort: no weights, the native order
        o->by.reset();
      } else {
        if (!full_key_access) {
          *error = "ERR BY option of SORT denied due to insufficient ACL permissions.";
          return false;
        }
        o->dontsort = false;
        o->by = std::string(pattern);
      }
    } else if (EqualsIgnoreCase(args[j], "get") && left >= 1) {
      if (!full_key_access) {
        *error = "ERR GET option of SORT denied due to insufficient ACL permissions.";
        return false;
      }
      o->gets.emplace_back(args[++j]);
    } else {
      *error = std::string(errors::kSyntax);
      return false;
    }
  }
  return true;
}

// Redis's lookupKeyByPattern: "#" is the element; the first '*' is replaced by it; "->field" after
// it reads a hash field. nullopt when missing (or of another type). A key on another shard sets
// *elsewhere.
std::optional<std::string> ByPattern(ShardCtx& ctx, const std::string& pattern,
                                     const std::string& element, bool* elsewhere) {
  if (pattern == "#") return element;
  // C strings in Redis: the pattern ends at a NUL byte.
  const std::string spat(pattern.c_str());
  const size_t star = spat.find('*');
  if (star == std::string::npos) return std::nullopt;
  std::string field;
  size_t fieldlen = 0;
  const size_t arrow = spat.find("->", star + 1);
  if (arrow != std::string::npos && arrow + 2 < spat.size()) {
    field = spat.substr(arrow + 2);
    fieldlen = field.size();
  }
  const size_t postfix = spat.size() - (star + 1) - (fieldlen ? fieldlen + 2 : 0);
  const std::string key = spat.substr(0, star) + element + spat.substr(star + 1, postfix);
  const Server& server = Reactor::Current()->server();
  if (server.ShardOf(key) != ctx.shard.index()) {
    *elsewhere = true;
    return std::nullopt;
  }
  if (fieldlen) {
    auto v = ctx.db.HGet(key, field, ctx.now_ms);
    if (!v.ok()) return std::nullopt;
    return std::string(*v);
  }
  auto s = ctx.db.Get(key, ctx.now_ms);
  if (!s.ok()) return std::nullopt;
  return std::string(*s);
}

struct Item {
  std::string element;
  double score = 0;
  std::optional<std::string> cmp;  // ALPHA BY: the weight's text
};

int CompareBinary(const std::string& a, const std::string& b) {
  const int c = std::memcmp(a.data(), b.data(), std::min(a.size(), b.size()));
  if (c != 0) return c;
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

// The outcome, found on the sorted key's shard: the reply's items (GETs flattened, a missing one
// nullopt), or an error.
struct Sorted {
  std::string error;
  std::vector<std::optional<std::string>> out;
};

void RunSort(CmdArgs args, bool readonly, ShardCtx& ctx, Sorted* r) {
  SortArgs o;
  if (!ParseSort(args, readonly, ctx.acl_user, &o, &r->error)) return;
  // The elements, in their native order.
  std::vector<std::string> elements;
  bool is_set = false;
  switch (ctx.db.Type(args[1], ctx.now_ms)) {
    case shard::ValueType::kNone:
      break;
    case shard::ValueType::kList: {
      auto v = ctx.db.ListRange(args[1], 0, -1, ctx.now_ms);
      if (v.ok()) elements = std::move(*v);
      break;
    }
    case shard::ValueType::kSet: {
      is_set = true;
      auto v = ctx.db.SetMembers(args[1], ctx.now_ms);
      if (v.ok()) elements = std::move(*v);
      break;
    }
    case shard::ValueType::kZSet: {
      shard::ZRangeSpec all;
      auto v = ctx.db.ZRange(args[1], all, ctx.now_ms);
      if (v.ok()) {
        for (auto& [m, s] : *v) elements.push_back(std::move(m));
      }
      break;
    }
    default:
      r->error = std::string(errors::kWrongType);
      return;
  }
  // A set has no order of its own to keep: one stored is sorted (ALPHA), as Redis does.
  if (o.dontsort && is_set && o.store) {
    o.dontsort = false;
    o.alpha = true;
    o.by.reset();
  }
  if (o.dontsort && o.desc && !is_set) std::reverse(elements.begin(), elements.end());
  const int64_t n = static_cast<int64_t>(elements.size());
  int64_t start = o.limit_start < 0 ? 0 : o.limit_start;
  int64_t end = o.limit_count < 0 ? n - 1 : start + o.limit_count - 1;
  if (start >= n) {
    start = n - 1;
    end = n - 2;
  }
  if (end >= n) end = n - 1;

  std::vector<Item> items(elements.size());
  for (size_t i = 0; i < elements.size(); i++) items[i].element = std::move(elements[i]);
  bool elsewhere = false;
  bool conversion_error = false;
  if (!o.dontsort) {
    for (Item& it : items) {
      std::optional<std::string> by;
      if (o.by) {
        by = ByPattern(ctx, *o.by, it.element, &elsewhere);
        if (!by) continue;
      }
      const std::string& text = o.by ? *by : it.element;
      if (o.alpha) {
        if (o.by) it.cmp = std::move(by);
        continue;
      }
      errno = 0;
      char* end_ptr;
      it.score = std::strtod(text.c_str(), &end_ptr);
      if (*end_ptr != '\0' || errno == ERANGE || std::isnan(it.score)) conversion_error = true;
    }
    const bool by_pattern = o.by.has_value();
    std::stable_sort(items.begin(), items.end(), [&](const Item& a, const Item& b) {
      int c;
      if (!o.alpha) {
        c = a.score > b.score ? 1 : (a.score < b.score ? -1 : CompareBinary(a.element, b.element));
      } else if (by_pattern) {
        if (!a.cmp || !b.cmp) {
          c = (a.cmp.has_value() == b.cmp.has_value()) ? 0 : (!a.cmp ? -1 : 1);
        } else {
          c = CompareBinary(*a.cmp, *b.cmp);
        }
      } else {
        c = CompareBinary(a.element, b.element);
      }
      return (o.desc ? -c : c) < 0;
    });
  }
  if (elsewhere) {
    r->error = std::string(errors::kSortPatternElsewhere);
    return;
  }
  if (conversion_error) {
    r->error = "ERR One or more scores can't be converted into double";
    return;
  }
  for (int64_t j = start; j <= end; j++) {
    const Item& it = items[static_cast<size_t>(j)];
    if (o.gets.empty()) r->out.emplace_back(it.element);
    for (const std::string& g : o.gets) {
      r->out.push_back(ByPattern(ctx, g, it.element, &elsewhere));
    }
  }
  if (elsewhere) {
    r->error = std::string(errors::kSortPatternElsewhere);
    r->out.clear();
  }
}

int64_t StoreSorted(const Sorted& r, const std::string& key, shard::Db& db, int64_t now) {
  db.Del(key, now);
  if (r.out.empty()) return 0;
  std::vector<std::string_view> values;
  values.reserve(r.out.size());
  for (const auto& v : r.out) values.push_back(v ? std::string_view(*v) : std::string_view());
  db.ListPush(key, values, shard::ListEnd::kRight, false, now);
  return static_cast<int64_t>(values.size());
}

void ReplySorted(const Sorted& r, protocol::ReplyBuilder& rb) {
  rb.ArrayHeader(r.out.size());
  for (const auto& v : r.out) {
    if (v) {
      rb.Bulk(*v);
    } else {
      rb.Null();
    }
  }
}

// The STORE key, as the search for it: the last one counts (SORT_RO has none).
int StoreKey(CmdArgs args) {
  int key = 0;
  for (size_t j = 2; j + 1 < args.size(); j++) {
    if (EqualsIgnoreCase(args[j], "store")) key = static_cast<int>(++j);
  }
  return key;
}

template <bool kReadOnly>
void SortOnShard(CmdArgs args, ShardCtx& ctx) {
  Sorted r;
  RunSort(args, kReadOnly, ctx, &r);
  if (!r.error.empty()) {
    ctx.rb.Error(r.error);
    return;
  }
  const int store = kReadOnly ? 0 : StoreKey(args);
  if (store > 0) {
    ctx.rb.Integer(StoreSorted(r, std::string(args[store]), ctx.db, ctx.now_ms));
  } else {
    ReplySorted(r, ctx.rb);
  }
}

// STORE into a key of another shard: sorted on the source's shard, stored on the destination's.
void SortAcross(CmdArgs args, Connection& conn, protocol::ReplyBuilder&) {
  const Server& server = conn.reactor().server();
  struct State {
    std::vector<std::string> args;
    int src = 0, dst = 0;
    Sorted sorted;
    int64_t stored = 0;
  };
  auto st = std::make_shared<State>();
  st->args.assign(args.begin(), args.end());
  const int store = StoreKey(args);
  st->src = server.ShardOf(args[1]);
  st->dst = server.ShardOf(args[store]);
  std::vector<Connection::ShardFn> phases;
  phases.push_back([st](ShardCtx& ctx) {
    if (ctx.shard.index() != st->src) return;
    std::vector<std::string_view> views(st->args.begin(), st->args.end());
    RunSort(CmdArgs(views.data(), views.size()), false, ctx, &st->sorted);
  });
  phases.push_back([st, store](ShardCtx& ctx) {
    if (ctx.shard.index() != st->dst || !st->sorted.error.empty()) return;
    st->stored = StoreSorted(st->sorted, st->args[static_cast<size_t>(store)], ctx.db, ctx.now_ms);
  });
  conn.FanOutPhases({std::min(st->src, st->dst), std::max(st->src, st->dst)}, std::move(phases),
                    [st](protocol::ReplyBuilder& rb) {
                      if (!st->sorted.error.empty()) {
                        rb.Error(st->sorted.error);
                      } else {
                        rb.Integer(st->stored);
                      }
                    });
}

}  // namespace

void RegisterSortCommands(CommandTable* t) {
  CommandSpec sort =
      MultiKeyCommand("sort", -2, kWrite | kDenyOom, SortAcross, SortOnShard<false>,
                      {"@write", "@set", "@sortedset", "@list", "@slow", "@dangerous"}, 1, 1, 1);
  sort.extra_key = StoreKey;
  t->Add(std::move(sort));
  // Movable keys in Redis's table too (its BY and GET patterns name keys), though none is routed.
  CommandSpec ro = Key1("sort_ro", -2, kReadOnly, SortOnShard<true>,
                        {"@read", "@set", "@sortedset", "@list", "@slow", "@dangerous"});
  ro.extra_key = [](CmdArgs) { return 0; };
  t->Add(std::move(ro));
}

}  // namespace deadbolt::server

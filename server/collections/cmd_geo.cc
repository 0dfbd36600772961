// Geo commands: GEOADD GEOPOS GEODIST GEOHASH GEOSEARCH GEOSEARCHSTORE GEORADIUS GEORADIUS_RO
// GEORADIUSBYMEMBER GEORADIUSBYMEMBER_RO, over sorted sets whose scores are geohashes
// (shard/base/geohash.h), as Redis 7.0's geo.c answers them: the same arguments in the same
// order, the same cells scanned in the same order, so even unsorted results match. A search that
// stores into a key of another shard finds on the source's shard, then writes on the
// destination's, under both keys' locks.

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/collections/zset_common.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/server.h"
#include "shard/base/geohash.h"
#include "shard/base/numeric.h"
#include "shard/db.h"
#include "shard/shard.h"

namespace deadbolt::server {

namespace {

namespace geo = shard::geo;
using shard::OpStatus;

// --- arguments, as geo.c reads them ---

bool ParseLonLat(CmdArgs args, size_t at, double* lon, double* lat, std::string* error) {
  if (!ParseScore(args[at], lon) || !ParseScore(args[at + 1], lat)) {
    *error = std::string(errors::kNotFloat);
    return false;
  }
  if (!geo::ValidLonLat(*lon, *lat)) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "ERR invalid longitude,latitude pair %f,%f", *lon, *lat);
    *error = buf;
    return false;
  }
  return true;
}

// Meters per unit, or -1.
double UnitToMeters(std::string_view u) {
  if (EqualsIgnoreCase(u, "m")) return 1;
  if (EqualsIgnoreCase(u, "km")) return 1000;
  if (EqualsIgnoreCase(u, "ft")) return 0.3048;
  if (EqualsIgnoreCase(u, "mi")) return 1609.34;
  return -1;
}

bool ParseUnit(std::string_view u, double* to_meters, std::string* error) {
  *to_meters = UnitToMeters(u);
  if (*to_meters < 0) *error = std::string(errors::kGeoUnit);
  return *to_meters >= 0;
}

bool ParseRadius(CmdArgs args, size_t at, geo::Shape* s, std::string* error) {
  if (!ParseScore(args[at], &s->radius)) {
    *error = "ERR need numeric radius";
    return false;
  }
  if (s->radius < 0) {
    *error = "ERR radius cannot be negative";
    return false;
  }
  s->box = false;
  return ParseUnit(args[at + 1], &s->to_meters, error);
}

bool ParseBox(CmdArgs args, size_t at, geo::Shape* s, std::string* error) {
  if (!ParseScore(args[at], &s->width)) {
    *error = "ERR need numeric width";
    return false;
  }
  if (!ParseScore(args[at + 1], &s->height)) {
    *error = "ERR need numeric height";
    return false;
  }
  if (s->height < 0 || s->width < 0) {
    *error = "ERR height or width cannot be negative";
    return false;
  }
  s->box = true;
  return ParseUnit(args[at + 2], &s->to_meters, error);
}

// --- GEOADD GEOPOS GEODIST GEOHASH ---

void GeoAdd(CmdArgs args, ShardCtx& ctx) {
  shard::ZAddOptions opts;
  bool ch = false;
  size_t at = 2;
  for (; at < args.size(); at++) {
    if (EqualsIgnoreCase(args[at], "nx")) {
      opts.nx = true;
    } else if (EqualsIgnoreCase(args[at], "xx")) {
      opts.xx = true;
    } else if (EqualsIgnoreCase(args[at], "ch")) {
      ch = true;
    } else {
      break;
    }
  }
  if ((args.size() - at) % 3 != 0 || (opts.nx && opts.xx) || at == args.size()) {
    ctx.rb.Error(errors::kSyntax);
    return;
  }
  std::vector<std::pair<double, std::string_view>> items;
  for (; at < args.size(); at += 3) {
    double lon, lat;
    std::string error;
    if (!ParseLonLat(args, at, &lon, &lat, &error)) {
      ctx.rb.Error(error);
      return;
    }
    items.emplace_back(static_cast<double>(geo::Score(lon, lat)), args[at + 2]);
  }
  auto r = ctx.db.ZAdd(args[1], opts, items, ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  ctx.rb.Integer(r->added + (ch ? r->updated : 0));
}

// Redis's addReplyHumanLongDouble: "%.17Lf" trimmed; a double in RESP3.
void ReplyCoordinate(protocol::ReplyBuilder& rb, double v) {
  const std::string s = shard::FormatLongDoubleHuman(v);
  if (rb.resp() >= 3) {
    rb.out()->append(",").append(s).append("\r\n");
  } else {
    rb.Bulk(s);
  }
}

void ReplyDistance(protocol::ReplyBuilder& rb, double meters) {
  char buf[128];
  const int n = std::snprintf(buf, sizeof(buf), "%.4f", meters);
  rb.Bulk(std::string_view(buf, static_cast<size_t>(n)));
}

// GEOPOS and GEOHASH: an array with fn's reply for each member's score (nullopt: missing).
template <typename Fn>
void ReplyPerMember(CmdArgs args, ShardCtx& ctx, Fn&& fn) {
  auto scores = ctx.db.ZMScore(args[1], args.subspan(2), ctx.now_ms);
  if (!scores.ok()) {
    ReplyStatus(ctx.rb, scores.status());
    return;
  }
  ctx.rb.ArrayHeader(args.size() - 2);
  for (const std::optional<double>& s : *scores) fn(s);
}

void GeoPos(CmdArgs args, ShardCtx& ctx) {
  ReplyPerMember(args, ctx, [&](const std::optional<double>& s) {
    double lon, lat;
    if (!s || !geo::Decode(*s, &lon, &lat)) {
      ctx.rb.NullArray();
      return;
    }
    ctx.rb.ArrayHeader(2);
    ReplyCoordinate(ctx.rb, lon);
    ReplyCoordinate(ctx.rb, lat);
  });
}

void GeoDist(CmdArgs args, ShardCtx& ctx) {
  double to_meters = 1;
  if (args.size() == 5) {
    std::string error;
    if (!ParseUnit(args[4], &to_meters, &error)) {
      ctx.rb.Error(error);
      return;
    }
  } else if (args.size() > 5) {
    ctx.rb.Error(errors::kSyntax);
    return;
  }
  auto scores = ctx.db.ZMScore(args[1], args.subspan(2, 2), ctx.now_ms);
  if (!scores.ok()) {
    ReplyStatus(ctx.rb, scores.status());
    return;
  }
  double lon1, lat1, lon2, lat2;
  const auto& s = *scores;
  if (!s[0] || !s[1] || !geo::Decode(*s[0], &lon1, &lat1) || !geo::Decode(*s[1], &lon2, &lat2)) {
    ctx.rb.Null();
    return;
  }
  ReplyDistance(ctx.rb, geo::Distance(lon1, lat1, lon2, lat2) / to_meters);
}

void GeoHash(CmdArgs args, ShardCtx& ctx) {
  ReplyPerMember(args, ctx, [&](const std::optional<double>& s) {
    std::string hash;
    if (!s || !geo::StandardHash(*s, &hash)) {
      ctx.rb.Null();
    } else {
      ctx.rb.Bulk(hash);
    }
  });
}

// --- the searches ---

enum SearchFlags : int {
  kRadiusCoords = 1,  // GEORADIUS: center and radius from fixed arguments
  kRadiusMember = 2,  // GEORADIUSBYMEMBER
  kNoStore = 4,       // the _RO forms
  kSearch = 8,        // GEOSEARCH
  kSearchStore = 16,  // GEOSEARCHSTORE
};

struct Point {
  double lon, lat, dist, score;
  std::string member;
};

// A search's outcome, found on the source key's shard.
struct Found {
  std::string error;  // a whole error line's text, when the call fails
  std::string store_key;
  bool store = false, store_dist = false;
  bool with_dist = false, with_hash = false, with_coord = false;
  bool source_missing = false;
  double to_meters = 1;
  std::vector<Point> points;  // sorted as asked and cut to COUNT
};

// The points of one cell in the shape, in score order; stops at `limit` points (0: none).
void PointsInCell(shard::Db& db, std::string_view key, geo::Bits cell, const geo::Shape& shape,
                  size_t limit, int64_t now, std::vector<Point>* out) {
  uint64_t min, max;
  geo::CellRange(cell, &min, &max);
  shard::ZRangeSpec range;
  range.by = shard::ZRangeSpec::By::kScore;
  range.min = static_cast<double>(min);
  range.max = static_cast<double>(max);
  range.max_exclusive = true;
  auto members = db.ZRange(key, range, now);
  if (!members.ok()) return;
  for (auto& [member, score] : *members) {
    Point p;
    if (geo::Within(shape, score, &p.lon, &p.lat, &p.dist)) {
      p.score = score;
      p.member = member;
      out->push_back(std::move(p));
    }
    if (!out->empty() && limit != 0 && out->size() >= limit) return;
  }
}

// georadiusGeneric up to its reply: arguments in Redis's order, interleaved with the lookups
// (a missing member or key changes which error comes first), then the cells, then the order.
void Search(CmdArgs args, int flags, shard::Db& db, int64_t now, Found* f) {
  const std::string_view key = args[(flags & kSearchStore) ? 2 : 1];
  auto card = db.ZCard(key, now);
  if (!card.ok()) {
    f->error = std::string(errors::ForStatus(card.status()));
    return;
  }
  const bool exists = *card > 0;
  geo::Shape shape;
  size_t base = 0;
  if (flags & kRadiusCoords) {
    base = 6;
    if (!ParseLonLat(args, 2, &shape.lon, &shape.lat, &f->error)) return;
    if (!ParseRadius(args, 4, &shape, &f->error)) return;
  } else if ((flags & kRadiusMember) && !exists) {
    base = 5;
  } else if (flags & kRadiusMember) {
    base = 5;
    auto score = db.ZScore(key, args[2], now);
    if (!score.ok() || !*score || !geo::Decode(**score, &shape.lon, &shape.lat)) {
      f->error = "ERR could not decode requested zset member";
      return;
    }
    if (!ParseRadius(args, 3, &shape, &f->error)) return;
  } else {
    base = (flags & kSearchStore) ? 3 : 2;
    if (flags & kSearchStore) {
      f->store = true;
      f->store_key = std::string(args[1]);
    }
  }
  bool any = false, from_member = false, from_lonlat = false, by_radius = false, by_box = false;
  enum { kNone, kAsc, kDesc } sort = kNone;
  int64_t count = 0;
  const bool search = flags & kSearch;
  const size_t remaining = args.size() - base;
  for (size_t i = 0; i < remaining; i++) {
    const std::string_view arg = args[base + i];
    if (EqualsIgnoreCase(arg, "withdist")) {
      f->with_dist = true;
    } else if (EqualsIgnoreCase(arg, "withhash")) {
      f->with_hash = true;
    } else if (EqualsIgnoreCase(arg, "withcoord")) {
      f->with_coord = true;
    } else if (EqualsIgnoreCase(arg, "any")) {
      any = true;
    } else if (EqualsIgnoreCase(arg, "asc")) {
      sort = kAsc;
    } else if (EqualsIgnoreCase(arg, "desc")) {
      sort = kDesc;
    } else if (EqualsIgnoreCase(arg, "count") && i + 1 < remaining) {
      if (!StringToInt64(args[base + i + 1], &count)) {
        f->error = std::string(errors::kNotInteger);
        return;
      }
      if (count <= 0) {
        f->error = "ERR COUNT must be > 0";
        return;
      }
      i++;
    } else if ((EqualsIgnoreCase(arg, "store") || EqualsIgnoreCase(arg, "storedist")) &&
               i + 1 < remaining && !(flags & kNoStore) && !search) {
      f->store = true;
      f->store_key = std::string(args[base + i + 1]);
      f->store_dist = EqualsIgnoreCase(arg, "storedist");
      i++;
    } else if (EqualsIgnoreCase(arg, "storedist") && search && (flags & kSearchStore)) {
      f->store_dist = true;
    } else if (EqualsIgnoreCase(arg, "frommember") && i + 1 < remaining && search && !from_lonlat) {
      if (exists) {
        auto score = db.ZScore(key, args[base + i + 1], now);
        if (!score.ok() || !*score || !geo::Decode(**score, &shape.lon, &shape.lat)) {
          f->error = "ERR could not decode requested zset member";
          return;
        }
      }
      from_member = true;
      i++;
    } else if (EqualsIgnoreCase(arg, "fromlonlat") && i + 2 < remaining && search && !from_member) {
      if (!ParseLonLat(args, base + i + 1, &shape.lon, &shape.lat, &f->error)) return;
      from_lonlat = true;
      i += 2;
    } else if (EqualsIgnoreCase(arg, "byradius") && i + 2 < remaining && search && !by_box) {
      if (!ParseRadius(args, base + i + 1, &shape, &f->error)) return;
      by_radius = true;
      i += 2;
    } else if (EqualsIgnoreCase(arg, "bybox") && i + 3 < remaining && search && !by_radius) {
      if (!ParseBox(args, base + i + 1, &shape, &f->error)) return;
      by_box = true;
      i += 3;
    } else {
      f->error = std::string(errors::kSyntax);
      return;
    }
  }
  if (f->store && (f->with_dist || f->with_hash || f->with_coord)) {
    f->error = std::string("ERR ") +
               ((flags & kSearchStore) ? "GEOSEARCHSTORE" : "STORE option in GEORADIUS") +
               " is not compatible with WITHDIST, WITHHASH and WITHCOORD options";
    return;
  }
  if (search && !(from_member || from_lonlat)) {
    f->error =
        "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + std::string(args[0]);
    return;
  }
  if (search && !(by_radius || by_box)) {
    f->error = "ERR exactly one of BYRADIUS and BYBOX can be specified for " + std::string(args[0]);
    return;
  }
  if (any && count == 0) {
    f->error = "ERR the ANY argument requires COUNT argument";
    return;
  }
  f->to_meters = shape.to_meters;
  if (!exists) {
    f->source_missing = true;
    return;
  }
  if (count != 0 && sort == kNone && !any) sort = kAsc;
  // The center's cell and its neighbours; a cell equal to the one scanned last is skipped (as
  // Redis, which never compares with the center's).
  const geo::Area area = geo::SearchArea(shape);
  const size_t limit = any ? static_cast<size_t>(count) : 0;
  int last = 0;
  for (int i = 0; i < 9; i++) {
    const geo::Bits cell = area.cells[i];
    if (cell.zero()) continue;
    if (last != 0 && cell.bits == area.cells[last].bits && cell.step == area.cells[last].step) {
      continue;
    }
    if (!f->points.empty() && limit != 0 && f->points.size() >= limit) break;
    PointsInCell(db, key, cell, shape, limit, now, &f->points);
    last = i;
  }
  if (sort != kNone) {
    std::stable_sort(f->points.begin(), f->points.end(), [sort](const Point& a, const Point& b) {
      return sort == kAsc ? a.dist < b.dist : a.dist > b.dist;
    });
  }
  if (count != 0 && f->points.size() > static_cast<size_t>(count)) {
    f->points.resize(static_cast<size_t>(count));
  }
  for (Point& p : f->points) p.dist /= shape.to_meters;
}

void ReplyFound(const Found& f, protocol::ReplyBuilder& rb) {
  const size_t options = (f.with_dist ? 1 : 0) + (f.with_hash ? 1 : 0) + (f.with_coord ? 1 : 0);
  rb.ArrayHeader(f.points.size());
  for (const Point& p : f.points) {
    if (options) rb.ArrayHeader(options + 1);
    rb.Bulk(p.member);
    if (f.with_dist) ReplyDistance(rb, p.dist);
    if (f.with_hash) rb.Integer(static_cast<int64_t>(p.score));
    if (f.with_coord) {
      rb.ArrayHeader(2);
      ReplyCoordinate(rb, p.lon);
      ReplyCoordinate(rb, p.lat);
    }
  }
}

// The stored set: members with their geohash or, with STOREDIST, their distance.
int64_t StoreFound(const Found& f, shard::Db& db, int64_t now) {
  shard::ZOwnedMembers members;
  for (const Point& p : f.points) members.emplace_back(p.member, f.store_dist ? p.dist : p.score);
  return db.ZStore(f.store_key, members, now);
}

template <int kFlags>
void SearchOnShard(CmdArgs args, ShardCtx& ctx) {
  Found f;
  Search(args, kFlags, ctx.db, ctx.now_ms, &f);
  if (!f.error.empty()) {
    ctx.rb.Error(f.error);
  } else if (f.store) {
    ctx.rb.Integer(StoreFound(f, ctx.db, ctx.now_ms));
  } else {
    ReplyFound(f, ctx.rb);
  }
}

// The destination on another shard than the source: find there, then store here.
template <int kFlags>
void SearchAcross(CmdArgs args, Connection& conn, protocol::ReplyBuilder&) {
  const Server& server = conn.reactor().server();
  const CommandSpec* spec = CommandTable::Get().Find(args[0]);
  struct State {
    std::vector<std::string> args;
    int src_shard = 0;
    int dst_shard = -1;
    Found found;
    int64_t stored = 0;
  };
  auto st = std::make_shared<State>();
  st->args.assign(args.begin(), args.end());
  st->src_shard = server.ShardOf(args[(kFlags & kSearchStore) ? 2 : 1]);
  std::vector<int> shards;
  spec->ForEachKey(args, [&](int i) { shards.push_back(server.ShardOf(args[i])); });
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  std::vector<Connection::ShardFn> phases;
  phases.push_back([st](ShardCtx& ctx) {
    if (ctx.shard.index() != st->src_shard) return;
    std::vector<std::string_view> views(st->args.begin(), st->args.end());
    Search(CmdArgs(views.data(), views.size()), kFlags, ctx.db, ctx.now_ms, &st->found);
  });
  phases.push_back([st, &server](ShardCtx& ctx) {
    const Found& f = st->found;
    if (!f.error.empty() || !f.store || server.ShardOf(f.store_key) != ctx.shard.index()) return;
    st->stored = StoreFound(f, ctx.db, ctx.now_ms);
  });
  conn.FanOutPhases(shards, std::move(phases), [st](protocol::ReplyBuilder& rb) {
    if (!st->found.error.empty()) {
      rb.Error(st->found.error);
    } else if (st->found.store) {
      rb.Integer(st->stored);
    } else {
      ReplyFound(st->found, rb);
    }
  });
}

// GEORADIUS[BYMEMBER]'s STORE / STOREDIST key, as Redis's georadiusGetKeys finds it.
// The last one counts, as in the search.
template <size_t kBase>
int StoreKeyOf(CmdArgs args) {
  int key = 0;
  for (size_t i = kBase; i + 1 < args.size(); i++) {
    if (EqualsIgnoreCase(args[i], "store") || EqualsIgnoreCase(args[i], "storedist")) {
      key = static_cast<int>(++i);
    }
  }
  return key;
}

CommandSpec SearchCommand(std::string name, int arity, uint32_t flags, ConnHandler across,
                          ShardHandler one, int last_key) {
  const bool write = flags & kWrite;
  return MultiKeyCommand(std::move(name), arity, flags, across, one,
                         {write ? "@write" : "@read", "@geo", "@slow"}, 1, last_key, 1);
}

}  // namespace

void RegisterGeoCommands(CommandTable* t) {
  const std::vector<std::string> kRead = {"@read", "@geo", "@slow"};
  t->Add(Key1("geoadd", -5, kWrite | kDenyOom, GeoAdd, {"@write", "@geo", "@slow"}));
  t->Add(Key1("geopos", -2, kReadOnly, GeoPos, kRead));
  t->Add(Key1("geodist", -4, kReadOnly, GeoDist, kRead));
  t->Add(Key1("geohash", -2, kReadOnly, GeoHash, kRead));
  t->Add(Key1("geosearch", -7, kReadOnly, SearchOnShard<kSearch>, kRead));
  t->Add(SearchCommand("geosearchstore", -8, kWrite | kDenyOom,
                       SearchAcross<kSearch | kSearchStore>, SearchOnShard<kSearch | kSearchStore>,
                       2));
  t->Add(Key1("georadius_ro", -6, kReadOnly, SearchOnShard<kRadiusCoords | kNoStore>, kRead));
  t->Add(
      Key1("georadiusbymember_ro", -5, kReadOnly, SearchOnShard<kRadiusMember | kNoStore>, kRead));
  CommandSpec radius = SearchCommand("georadius", -6, kWrite | kDenyOom,
                                     SearchAcross<kRadiusCoords>, SearchOnShard<kRadiusCoords>, 1);
  radius.extra_key = StoreKeyOf<6>;
  t->Add(std::move(radius));
  CommandSpec by_member =
      SearchCommand("georadiusbymember", -5, kWrite | kDenyOom, SearchAcross<kRadiusMember>,
                    SearchOnShard<kRadiusMember>, 1);
  by_member.extra_key = StoreKeyOf<5>;
  t->Add(std::move(by_member));
}

}  // namespace deadbolt::server

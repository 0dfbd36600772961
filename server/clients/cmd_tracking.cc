// Client-side caching's commands: CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO. What a
// tracking client's commands remember, and how invalidations reach it, is in
// server/core/pushed.cc; each shard's table in server/tracking/.

#include "server/clients/cmd_tracking.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;

bool Eq(std::string_view a, std::string_view b) { return EqualsIgnoreCase(a, b); }

// Two prefixes overlap when one starts with the other: a key under both would be told twice.
bool Overlap(std::string_view a, std::string_view b) {
  return a.substr(0, b.size()) == b.substr(0, a.size());
}

struct TrackingArgs {
  bool on = false;
  uint64_t redirect = 0;
  bool bcast = false;
  bool optin = false;
  bool optout = false;
  bool noloop = false;
  std::vector<std::string> prefixes;
};

// Parses CLIENT TRACKING's options as Redis does (in order, the first problem answered), or
// replies the error and returns false. ON/OFF itself is checked after the options.
bool ParseTracking(CmdArgs args, TrackingArgs* t, ReplyBuilder& rb) {
  for (size_t j = 3; j < args.size(); j++) {
    const bool more = j + 1 < args.size();
    if (Eq(args[j], "redirect") && more) {
      j++;
      if (t->redirect != 0) {
        rb.Error(errors::kTrackingOneRedirect);
        return false;
      }
      int64_t id = 0;
      if (!ParseNumber(args[j], &id)) {
        rb.Error(errors::kNotInteger);
        return false;
      }
      if (id <= 0) {  // no client has such an id
        rb.Error(errors::kTrackingNoRedirectClient);
        return false;
      }
      t->redirect = static_cast<uint64_t>(id);
    } else if (Eq(args[j], "bcast")) {
      t->bcast = true;
    } else if (Eq(args[j], "optin")) {
      t->optin = true;
    } else if (Eq(args[j], "optout")) {
      t->optout = true;
    } else if (Eq(args[j], "noloop")) {
      t->noloop = true;
    } else if (Eq(args[j], "prefix") && more) {
      j++;
      t->prefixes.emplace_back(args[j]);
    } else {
      rb.Error(errors::kSyntax);
      return false;
    }
  }
  if (Eq(args[2], "on")) {
    t->on = true;
  } else if (!Eq(args[2], "off")) {
    rb.Error(errors::kSyntax);
    return false;
  }
  return true;
}

// ON's checks against each other and the client's present mode, as Redis makes them.
bool CheckOn(const TrackingArgs& t, const Connection::TrackingState* cur, ReplyBuilder& rb) {
  if (!t.bcast && !t.prefixes.empty()) {
    rb.Error(errors::kTrackingPrefixNeedsBcast);
    return false;
  }
  if (cur && cur->on && cur->bcast != t.bcast) {
    rb.Error(errors::kTrackingSwitchBcast);
    return false;
  }
  if (t.bcast && (t.optin || t.optout)) {
    rb.Error(errors::kTrackingOptWithBcast);
    return false;
  }
  if (t.optin && t.optout) {
    rb.Error(errors::kTrackingOptinAndOptout);
    return false;
  }
  if (cur && cur->on && ((t.optin && cur->optout) || (t.optout && cur->optin))) {
    rb.Error(errors::kTrackingSwitchOpt);
    return false;
  }
  if (t.bcast) {
    for (size_t i = 0; i < t.prefixes.size(); i++) {
      if (cur) {
        for (const std::string& p : cur->prefixes) {
          if (Overlap(p, t.prefixes[i])) {
            rb.Error(errors::TrackingPrefixOverlapsExisting(t.prefixes[i], p));
            return false;
          }
        }
      }
      for (size_t k = i + 1; k < t.prefixes.size(); k++) {
        if (Overlap(t.prefixes[i], t.prefixes[k])) {
          rb.Error(errors::TrackingPrefixOverlapsGiven(t.prefixes[i], t.prefixes[k]));
          return false;
        }
      }
    }
  }
  return true;
}

// Tracking on, as `t` asks, with `added` prefixes (already on every shard) beside those it had;
// the CLIENT CACHING flag and what the shards were sent are kept.
void Enable(Connection& conn, const TrackingArgs& t, std::vector<std::string> added,
            int redirect_reactor) {
  Connection::TrackingState& s = conn.EnsureTracking();
  Connection::TrackingState next;
  next.on = true;
  next.bcast = t.bcast;
  next.optin = t.optin;
  next.optout = t.optout;
  next.noloop = t.noloop;
  next.caching = s.caching;
  next.prefixes_sent = s.prefixes_sent;
  next.redirect = t.redirect;
  next.redirect_reactor = redirect_reactor;
  next.prefixes = std::move(s.prefixes);
  for (std::string& p : added) next.prefixes.push_back(std::move(p));
  s = std::move(next);
}

}  // namespace

void ClientTracking(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  TrackingArgs t;
  if (!ParseTracking(args, &t, rb)) return;
  if (!t.on) {
    conn.StopTracking();
    rb.Ok();
    return;
  }
  if (!CheckOn(t, conn.tracking(), rb)) return;
  // The prefixes this call adds (BCAST with none: every key).
  std::vector<std::string> added;
  if (t.bcast) {
    if (t.prefixes.empty()) t.prefixes.emplace_back();
    const Connection::TrackingState* cur = conn.tracking();
    for (const std::string& p : t.prefixes) {
      bool had = false;
      if (cur) {
        for (const std::string& q : cur->prefixes) had = had || q == p;
      }
      if (!had) added.push_back(p);
    }
  }
  if (t.redirect == 0 && added.empty()) {
    Enable(conn, t, {}, -1);  // nothing to look up or register elsewhere
    rb.Ok();
    return;
  }
  // On every reactor: whether the client to redirect to is there, and this client's new
  // prefixes registered on its shard, all before the reply (a change made after OK is told).
  const uint64_t self = conn.id();
  const int home = conn.reactor().id();
  const uint64_t redirect = t.redirect;
  auto shared_added = std::make_shared<const std::vector<std::string>>(added);
  if (!added.empty()) conn.EnsureTracking().prefixes_sent = true;
  OnAllReactors(
      conn,
      [self, home, redirect, shared_added](Reactor& r) {
        for (const std::string& p : *shared_added) r.tracking().AddPrefix(p, Tracker{self, home});
        if (redirect == 0) return std::string();
        auto it = r.connections().find(redirect);
        return std::string(it != r.connections().end() && !it->second->closing() ? "1" : "");
      },
      [&conn, t, added = std::move(added)](std::vector<std::string>& found,
                                           ReplyBuilder& rb) mutable {
        int redirect_reactor = -1;
        for (size_t i = 0; i < found.size(); i++) {
          if (!found[i].empty()) redirect_reactor = static_cast<int>(i);
        }
        if (t.redirect != 0 && redirect_reactor < 0) {
          if (!added.empty()) ForgetTrackingPrefixes(conn.reactor(), conn.id(), std::move(added));
          rb.Error(errors::kTrackingNoRedirectClient);
          return;
        }
        Enable(conn, t, std::move(added), redirect_reactor);
        rb.Ok();
      });
}

void ClientCaching(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  Connection::TrackingState* t = conn.tracking();
  if (t == nullptr || !t->on) {
    rb.Error(errors::kCachingNotTracking);
    return;
  }
  if (Eq(args[2], "yes")) {
    if (!t->optin) {
      rb.Error(errors::kCachingYesNotOptin);
      return;
    }
  } else if (Eq(args[2], "no")) {
    if (!t->optout) {
      rb.Error(errors::kCachingNoNotOptout);
      return;
    }
  } else {
    rb.Error(errors::kSyntax);
    return;
  }
  t->caching = true;
  rb.Ok();
}

void ClientGetRedir(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  const Connection::TrackingState* t = conn.tracking();
  rb.Integer(t && t->on ? static_cast<int64_t>(t->redirect) : -1);
}

void ClientTrackingInfo(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  const Connection::TrackingState* t = conn.tracking();
  const bool on = t && t->on;
  std::vector<std::string_view> flags;
  flags.push_back(on ? "on" : "off");
  if (on) {
    if (t->bcast) flags.push_back("bcast");
    if (t->optin) {
      flags.push_back("optin");
      if (t->caching) flags.push_back("caching-yes");
    }
    if (t->optout) {
      flags.push_back("optout");
      if (t->caching) flags.push_back("caching-no");
    }
    if (t->noloop) flags.push_back("noloop");
    if (t->broken_redirect) flags.push_back("broken_redirect");
  }
  rb.MapHeader(3);
  rb.Bulk("flags");
  rb.SetHeader(flags.size());
  for (std::string_view f : flags) rb.Bulk(f);
  rb.Bulk("redirect");
  rb.Integer(on ? static_cast<int64_t>(t->redirect) : -1);
  rb.Bulk("prefixes");
  if (on && t->bcast) {
    rb.ArrayHeader(t->prefixes.size());
    for (const std::string& p : t->prefixes) rb.Bulk(p);
  } else {
    rb.ArrayHeader(0);
  }
}

}  // namespace deadbolt::server

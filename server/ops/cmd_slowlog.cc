// SLOWLOG and LATENCY: the slow log, the latency monitor and the per-command latency histograms.
// Every reactor keeps its own (server/core/reactor.h: EndCall, NoteSlowCall); these commands
// gather them all through one fan-out and merge.

#include <absl/strings/str_cat.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/observe/introspect.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;

// --- SLOWLOG ---

void SlowlogGet(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  int64_t count = 10;
  if (args.size() == 3 && (!StringToInt64(args[2], &count) || count < -1)) {
    rb.Error("ERR count should be greater than or equal to -1");
    return;
  }
  if (args.size() > 3) {
    rb.Error(errors::WrongArity("slowlog|get"));
    return;
  }
  OnAllReactors<std::vector<SlowlogEntry>>(
      conn,
      [](Reactor& r) {
        const auto& e = r.slowlog().entries();
        return std::vector<SlowlogEntry>(e.begin(), e.end());
      },
      [count](std::vector<std::vector<SlowlogEntry>>& parts, ReplyBuilder& rb) {
        std::vector<const SlowlogEntry*> all;
        for (auto& p : parts) {
          for (auto& e : p) all.push_back(&e);
        }
        std::sort(all.begin(), all.end(),
                  [](const SlowlogEntry* a, const SlowlogEntry* b) { return a->id > b->id; });
        size_t max_len = static_cast<size_t>(Reactor::Current()->config().slowlog_max_len);
        size_t n = std::min(all.size(), max_len);
        if (count >= 0) n = std::min<size_t>(n, static_cast<size_t>(count));
        rb.ArrayHeader(n);
        for (size_t i = 0; i < n; i++) {
          const SlowlogEntry& e = *all[i];
          rb.ArrayHeader(6);
          rb.Integer(static_cast<int64_t>(e.id));
          rb.Integer(e.unix_sec);
          rb.Integer(static_cast<int64_t>(e.usec));
          rb.ArrayHeader(e.args.size());
          for (const std::string& a : e.args) rb.Bulk(a);
          rb.Bulk(e.peer);
          rb.Bulk(e.name);
        }
      });
}

void SlowlogLen(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  OnAllReactors<size_t>(
      conn, [](Reactor& r) { return r.slowlog().entries().size(); },
      [](std::vector<size_t>& parts, ReplyBuilder& rb) {
        size_t total = 0;
        for (size_t p : parts) total += p;
        size_t max_len = static_cast<size_t>(Reactor::Current()->config().slowlog_max_len);
        rb.Integer(static_cast<int64_t>(std::min(total, max_len)));
      });
}

void SlowlogReset(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  OnAllReactors<int>(
      conn,
      [](Reactor& r) {
        r.slowlog().Reset();
        return 0;
      },
      [](std::vector<int>&, ReplyBuilder& rb) { rb.Ok(); });
}

void SlowlogHelp(CmdArgs, Connection&, ReplyBuilder& rb) {
  WriteHelp(rb,
            {"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "GET [<count>]",
             "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
             "    Entries are made of:",
             "    id, timestamp, time in microseconds, arguments array, client IP and port,",
             "    client name", "LEN", "    Return the length of the slowlog.", "RESET",
             "    Reset the slowlog.", "HELP", "    Prints this help."});
}

void Slowlog(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  static const Sub kSubs[] = {
      {"get", -2, SlowlogGet},
      {"len", 2, SlowlogLen},
      {"reset", 2, SlowlogReset},
      {"help", 2, SlowlogHelp},
  };
  RunSub("slowlog", kSubs, std::size(kSubs), args, conn, rb);
}

// --- LATENCY ---

// Every reactor's events of the latency monitor, merged.
void WithEvents(Connection& conn,
                absl::AnyInvocable<void(const LatencyEvents&, ReplyBuilder&)> finish) {
  OnAllReactors<LatencyEvents>(
      conn, [](Reactor& r) { return r.latency_events(); },
      [finish = std::move(finish)](std::vector<LatencyEvents>& parts, ReplyBuilder& rb) mutable {
        LatencyEvents merged;
        for (auto& p : parts) {
          for (auto& [name, series] : p) merged[name].Merge(series);
        }
        finish(merged, rb);
      });
}

void LatencyLatest(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  WithEvents(conn, [](const LatencyEvents& events, ReplyBuilder& rb) {
    size_t n = 0;
    for (auto& [name, s] : events) n += s.samples.empty() ? 0 : 1;
    rb.ArrayHeader(n);
    for (auto& [name, s] : events) {
      if (s.samples.empty()) continue;
      rb.ArrayHeader(4);
      rb.Bulk(name);
      rb.Integer(s.samples.back().unix_sec);
      rb.Integer(static_cast<int64_t>(s.samples.back().ms));
      rb.Integer(static_cast<int64_t>(s.max_ms));
    }
  });
}

void LatencyHistory(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  std::string event(args[2]);
  WithEvents(conn, [event](const LatencyEvents& events, ReplyBuilder& rb) {
    auto it = events.find(event);
    if (it == events.end()) {
      rb.ArrayHeader(0);
      return;
    }
    rb.ArrayHeader(it->second.samples.size());
    for (const LatencySample& s : it->second.samples) {
      rb.ArrayHeader(2);
      rb.Integer(s.unix_sec);
      rb.Integer(static_cast<int64_t>(s.ms));
    }
  });
}

void LatencyReset(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  std::vector<std::string> names;
  for (size_t i = 2; i < args.size(); i++) names.emplace_back(args[i]);
  OnAllReactors<std::vector<std::string>>(
      conn,
      [names](Reactor& r) {
        std::vector<std::string> reset;
        LatencyEvents& ev = r.latency_events();
        for (auto it = ev.begin(); it != ev.end();) {
          if (names.empty() || std::find(names.begin(), names.end(), it->first) != names.end()) {
            reset.push_back(it->first);
            it = ev.erase(it);
          } else {
            ++it;
          }
        }
        return reset;
      },
      [](std::vector<std::vector<std::string>>& parts, ReplyBuilder& rb) {
        std::vector<std::string> all;
        for (auto& p : parts) all.insert(all.end(), p.begin(), p.end());
        std::sort(all.begin(), all.end());
        all.erase(std::unique(all.begin(), all.end()), all.end());
        rb.Integer(static_cast<int64_t>(all.size()));
      });
}

// LATENCY HISTOGRAM [command ...]: per command (subcommands by their "parent|sub" name), its
// calls and a cumulative distribution over power-of-two microsecond buckets, as Redis replies.
void LatencyHistogramCmd(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  const auto& table = CommandTable::Get().StatsSpecs();
  std::vector<size_t> wanted;
  for (size_t i = 2; i < args.size(); i++) {
    std::string name = AsciiLower(args[i]);
    for (size_t c = 0; c < table.size(); c++) {
      if (table[c]->name == name && std::find(wanted.begin(), wanted.end(), c) == wanted.end()) {
        wanted.push_back(c);
      }
    }
  }
  const bool all = args.size() == 2;
  OnAllReactors<std::vector<CommandStats>>(
      conn, [](Reactor& r) { return r.stats().commands; },
      [wanted, all](std::vector<std::vector<CommandStats>>& parts, ReplyBuilder& rb) {
        const auto& table = CommandTable::Get().StatsSpecs();
        std::vector<LatencyHistogram> merged(table.size());
        for (auto& p : parts) {
          for (size_t c = 0; c < p.size() && c < merged.size(); c++) merged[c].Merge(p[c].latency);
        }
        std::vector<size_t> show;
        if (all) {
          for (size_t c = 0; c < merged.size(); c++) {
            if (merged[c].total()) show.push_back(c);
          }
        } else {
          for (size_t c : wanted) {
            if (merged[c].total()) show.push_back(c);
          }
        }
        const double per_usec = TickClock::TicksPerUsec();
        rb.MapHeader(show.size());
        for (size_t c : show) {
          rb.Bulk(table[c]->name);
          rb.MapHeader(2);
          rb.Bulk("calls");
          rb.Integer(static_cast<int64_t>(merged[c].total()));
          rb.Bulk("histogram_usec");
          // Cumulative counts at 1, 2, 4, ... microseconds, each listed when it grew.
          std::vector<std::pair<int64_t, uint64_t>> points;
          auto buckets = merged[c].Buckets();
          uint64_t cumulative = 0, last = 0;
          const uint64_t total = merged[c].total();
          size_t b = 0;
          for (int64_t bound = 1; cumulative < total; bound *= 2) {
            while (b < buckets.size() &&
                   static_cast<double>(buckets[b].first) / per_usec <= static_cast<double>(bound)) {
              cumulative += buckets[b++].second;
            }
            if (cumulative > last) points.emplace_back(bound, cumulative);
            last = cumulative;
          }
          rb.MapHeader(points.size());
          for (auto& [bound, n] : points) {
            rb.Integer(bound);
            rb.Integer(static_cast<int64_t>(n));
          }
        }
      });
}

void LatencyDoctor(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  WithEvents(conn, [](const LatencyEvents& events, ReplyBuilder& rb) {
    if (events.empty()) {
      rb.Verbatim(
          "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this deadbolt "
          "instance, or no latency spikes were recorded. You may use \"CONFIG SET "
          "latency-monitor-threshold <milliseconds>.\" in order to enable it.\n");
      return;
    }
    std::string out = "Latency spikes observed, per event:\n\n";
    int i = 1;
    for (auto& [name, s] : events) {
      uint64_t sum = 0;
      for (auto& x : s.samples) sum += x.ms;
      absl::StrAppend(&out, i++, ". ", name, ": ", s.samples.size(), " latency spikes (average ",
                      s.samples.empty() ? 0 : sum / s.samples.size(), "ms, worst ", s.max_ms,
                      "ms).\n");
    }
    rb.Verbatim(out);
  });
}

void LatencyHelp(CmdArgs, Connection&, ReplyBuilder& rb) {
  WriteHelp(rb,
            {"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "DOCTOR",
             "    Return a human readable latency analysis report.", "HISTORY <event>",
             "    Return time-latency samples for the <event> class.", "LATEST",
             "    Return the latest latency samples for all events.", "RESET [<event> ...]",
             "    Reset latency data of one or more <event> classes.",
             "    (default: reset all data for all event classes)", "HISTOGRAM [COMMAND ...]",
             "    Return a cumulative distribution of latencies in the format of a histogram for "
             "the specified command names.",
             "    If no commands are specified then all histograms are replied.", "HELP",
             "    Prints this help."});
}

void Latency(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  static const Sub kSubs[] = {
      {"latest", 2, LatencyLatest}, {"history", 3, LatencyHistory},
      {"reset", -2, LatencyReset},  {"histogram", -2, LatencyHistogramCmd},
      {"doctor", 2, LatencyDoctor}, {"help", 2, LatencyHelp},
  };
  RunSub("latency", kSubs, std::size(kSubs), args, conn, rb);
}

CommandSpec WithSubs(CommandSpec parent, std::initializer_list<std::pair<const char*, int>> subs) {
  for (auto& [name, arity] : subs) {  // (HELP's flags and categories: AsRedisSubcommand)
    parent.subcommands.push_back(
        ConnCommand(parent.name + "|" + name, arity, parent.flags, nullptr, parent.acl_categories));
  }
  parent.acl_categories = {"@slow"};
  return parent;
}

}  // namespace

void RegisterSlowlogCommands(CommandTable* t) {
  const uint32_t flags = kAdmin | kLoading | kStale;
  t->Add(WithSubs(ConnCommand("slowlog", -2, flags, Slowlog, {"@admin", "@slow", "@dangerous"}),
                  {{"get", -2}, {"len", 2}, {"reset", 2}, {"help", 2}}));
  t->Add(WithSubs(
      ConnCommand("latency", -2, flags | kNoScript, Latency, {"@admin", "@slow", "@dangerous"}),
      {{"latest", 2},
       {"history", 3},
       {"reset", -2},
       {"histogram", -2},
       {"doctor", 2},
       {"help", 2}}));
}

}  // namespace deadbolt::server

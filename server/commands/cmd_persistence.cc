// Persistence commands: WAITAOF, BGREWRITEAOF, SAVE, BGSAVE and LASTSAVE, over each shard's
// journal (server/core/journal.h). deadbolt writes no RDB file: its snapshot is the journal's
// rewrite (a fresh file holding each key's latest state), so SAVE and BGSAVE rewrite it.

#include <memory>
#include <string>

#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/journal.h"
#include "server/core/reactor.h"
#include "server/core/server.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;

std::string WaitAofReply(int resp, int64_t local) {
  std::string out;
  ReplyBuilder rb(&out, resp);
  rb.ArrayHeader(2);
  rb.Integer(local);
  rb.Integer(0);  // no replicas
  return out;
}

// WAITAOF numlocal numreplicas timeout: with the journal on, replies [1, 0] once every write
// made so far, on every shard, is on disk (so this client's writes are); [0, 0] with it off.
// There are no replicas: asking for some waits out the timeout (0: forever), as Redis does.
void WaitAof(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  // Checked in Redis's order, with its messages: numlocal in [0, 1], numreplicas >= 0, timeout.
  int64_t numlocal, numreplicas, timeout;
  if (!StringToInt64(args[1], &numlocal)) {
    rb.Error(errors::kNotInteger);
    return;
  }
  if (numlocal < 0 || numlocal > 1) {
    rb.Error(errors::kWaitAofNumLocalRange);
    return;
  }
  if (!StringToInt64(args[2], &numreplicas)) {
    rb.Error(errors::kNotInteger);
    return;
  }
  if (numreplicas < 0) {
    rb.Error(errors::kNotPositive);
    return;
  }
  if (!StringToInt64(args[3], &timeout)) {
    rb.Error(errors::kTimeoutNotInteger);
    return;
  }
  if (timeout < 0) {
    rb.Error(errors::kTimeoutNegative);
    return;
  }
  Reactor& here = conn.reactor();
  const bool on = here.config().appendonly;
  if (numlocal > 0 && !on) {
    rb.Error(errors::kWaitAofAppendOnly);
    return;
  }
  if (conn.in_exec() || (!on && numreplicas <= 0)) {
    // Inside EXEC nothing waits (Redis replies the state of the moment).
    rb.ArrayHeader(2);
    rb.Integer(on ? 1 : 0);
    rb.Integer(0);
    return;
  }
  auto done = std::make_shared<absl::AnyInvocable<void(std::string)>>(conn.ReplyLater());
  const int resp = conn.resp();
  const int origin = here.id();
  const int64_t deadline = timeout > 0 ? here.now_ms() + timeout : -1;
  auto local_done = [done, resp, numreplicas, deadline, on] {
    int64_t local = on ? 1 : 0;
    if (numreplicas <= 0) {
      (*done)(WaitAofReply(resp, local));
    } else if (deadline >= 0) {
      // No replica will ever acknowledge: the answer comes when the timeout runs out.
      Reactor::Current()->AddTimer(deadline,
                                   [done, resp, local] { (*done)(WaitAofReply(resp, local)); });
    }
    // numreplicas > 0 with timeout 0: blocks until the client goes, as in Redis.
  };
  if (!on) {
    local_done();
    return;
  }
  const int n = here.server().num_shards();
  auto left = std::make_shared<int>(n);
  auto one_done = [left, local_done]() mutable {
    if (--*left == 0) local_done();
  };
  for (int s = 0; s < n; s++) {
    here.Send(s, [origin, one_done]() mutable {
      Reactor* r = Reactor::Current();
      r->journal()->WhenSynced(
          [r, origin, one_done]() mutable { r->Send(origin, std::move(one_done)); });
    });
  }
}

// BGREWRITEAOF and BGSAVE: every shard starts rewriting its journal in the background; `reply`
// is told whether every shard was already rewriting.
void StartRewrites(Connection& conn, absl::AnyInvocable<void(ReplyBuilder&, bool all_busy)> reply) {
  auto refused = std::make_shared<std::vector<int>>(conn.reactor().server().num_shards(), 0);
  conn.FanOut(
      AllShards(conn.reactor().server()),
      [refused](ShardCtx&) {
        Reactor* r = Reactor::Current();
        std::string why;
        if (!r->journal()->StartRewrite(&why)) (*refused)[r->id()] = 1;
      },
      [refused, reply = std::move(reply)](ReplyBuilder& rb) mutable {
        bool all_busy = true;
        for (int x : *refused) all_busy = all_busy && x;
        reply(rb, all_busy);
      });
}

void BgRewriteAof(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  if (!conn.reactor().config().appendonly) {
    rb.Error(errors::kJournalOff);
    return;
  }
  StartRewrites(conn, [](ReplyBuilder& rb, bool all_busy) {
    if (all_busy) {
      rb.Error(errors::kRewriteInProgress);
    } else {
      rb.SimpleString("Background append only file rewriting started");
    }
  });
}

// SAVE: every shard rewrites its journal (or finishes the rewrite it is running), then syncs
// it; OK once all have, an error if a rewrite failed. Only this client waits: the shards go on
// serving, unlike Redis's SAVE.
void Save(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  Reactor& here = conn.reactor();
  if (!here.config().appendonly) {
    rb.Error(errors::kJournalOffSave);
    return;
  }
  auto done = std::make_shared<absl::AnyInvocable<void(std::string)>>(conn.ReplyLater());
  const int resp = conn.resp();
  const int origin = here.id();
  const int n = here.server().num_shards();
  auto left = std::make_shared<int>(n);
  auto all_ok = std::make_shared<bool>(true);
  // Runs on the origin, once per shard.
  auto one_done = [done, resp, left, all_ok](bool ok) {
    *all_ok = *all_ok && ok;
    if (--*left > 0) return;
    std::string out;
    ReplyBuilder reply(&out, resp);
    if (*all_ok) {
      reply.SimpleString("OK");
    } else {
      reply.Error(errors::kSaveFailed);
    }
    (*done)(std::move(out));
  };
  for (int s = 0; s < n; s++) {
    here.Send(s, [origin, one_done]() mutable {
      Reactor* r = Reactor::Current();
      Journal* j = r->journal();
      std::string why;
      if (!j->rewriting() && !j->StartRewrite(&why)) {
        r->Send(origin, [one_done]() mutable { one_done(false); });
        return;
      }
      j->WhenRewritten([r, origin, one_done](bool ok) mutable {
        if (!ok) {
          r->Send(origin, [one_done]() mutable { one_done(false); });
          return;
        }
        r->journal()->WhenSynced([r, origin, one_done]() mutable {
          r->Send(origin, [one_done]() mutable { one_done(true); });
        });
      });
    });
  }
}

// BGSAVE [SCHEDULE]: every shard starts rewriting its journal. When every shard is already
// rewriting, SCHEDULE is satisfied by those rewrites (they write the same state); without it
// the answer is Redis's "already in progress".
void BgSave(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  bool schedule = false;
  if (args.size() > 1) {
    if (args.size() != 2 || !EqualsIgnoreCase(args[1], "schedule")) {
      rb.Error(errors::kSyntax);
      return;
    }
    schedule = true;
  }
  if (!conn.reactor().config().appendonly) {
    rb.Error(errors::kJournalOffSave);
    return;
  }
  StartRewrites(conn, [schedule](ReplyBuilder& rb, bool all_busy) {
    if (!all_busy) {
      rb.SimpleString("Background saving started");
    } else if (schedule) {
      rb.SimpleString("Background saving scheduled");
    } else {
      rb.Error(errors::kBgSaveInProgress);
    }
  });
}

// LASTSAVE: the unix time of the last snapshot every shard has (Server::LastSave).
void LastSave(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  rb.Integer(conn.reactor().server().LastSave());
}

}  // namespace

void RegisterPersistenceCommands(CommandTable* t) {
  t->Add(ConnCommand("waitaof", 4, kNoScript, WaitAof, {"@slow", "@connection"}));
  t->Add(ConnCommand("bgrewriteaof", 1, kAdmin | kNoScript, BgRewriteAof,
                     {"@admin", "@slow", "@dangerous"}));
  t->Add(ConnCommand("save", 1, kAdmin | kNoScript | kNoMulti, Save,
                     {"@admin", "@slow", "@dangerous"}));
  t->Add(ConnCommand("bgsave", -1, kAdmin | kNoScript, BgSave, {"@admin", "@slow", "@dangerous"}));
  t->Add(ConnCommand("lastsave", 1, kFast | kLoading | kStale, LastSave,
                     {"@admin", "@fast", "@dangerous"}));
}

}  // namespace deadbolt::server

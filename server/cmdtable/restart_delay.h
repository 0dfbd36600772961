#pragma once
// --restart-delay: Redlock's "delayed restart", for a server that runs without persistence.
//
// A server that forgets its keys on restart could grant a lock that the previous incarnation had
// granted to someone else, whose lease has not run out yet. With --restart-delay <ms>, for <ms>
// milliseconds after the server starts serving it refuses every call that could create a key —
// and so take a lock — with a TRYAGAIN error; releases, extensions, deletes and reads work. Set
// it to at least the longest lease any client asks for (docs/LOCKS.md, "Restarting without
// persistence").
//
// Pure logic: time is a parameter, the reactor's clock (unix ms, as key expiry).

#include <cstdint>
#include <optional>
#include <string>

#include "server/cmdtable/command.h"

namespace deadbolt::server {

struct RestartDelay {
  int64_t since_ms = 0;  // unix ms when the server started serving
  int64_t delay_ms = 0;  // --restart-delay; 0: off

  // Milliseconds of the delay still to run at now_ms: 0 once it is over (or off). At most
  // delay_ms: a clock that went back before since_ms makes the wait longer, never shorter.
  int64_t RemainingMs(int64_t now_ms) const;
};

// Whether this call may create a key, and so grant a lock: a kMayCreate command, unless its
// CommandSpec::may_create says this call does not (EVALSHA of a release script).
bool MayCreateKey(const CommandSpec& spec, CmdArgs args);

// The error that refuses this call at now_ms (errors::RestartDelayRefusal), or nullopt when it
// may run: only calls that may create a key are refused, and only while the delay runs. Costs one
// flag test for other commands, and a comparison once the delay is over.
std::optional<std::string> RestartDelayRefusal(const RestartDelay& delay, const CommandSpec& spec,
                                               CmdArgs args, int64_t now_ms);

}  // namespace deadbolt::server

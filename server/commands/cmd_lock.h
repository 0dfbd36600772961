#pragma once
// SET's compare-and-set options (Redis 8.4): IFEQ value | IFNE value | IFDEQ digest |
// IFDNE digest, for SET's option parser (cmd_string.cc). The lock commands themselves (DELIFEQ,
// DELEX, DIGEST) are registered by RegisterLockCommands (cmd_lock.cc).
//
// Stateless functions, callable from any thread.

#include <string_view>

#include "shard/db.h"

namespace deadbolt::server {

// `opt` is an argument of SET in option position and `val` the argument after it. If `opt` is
// IFEQ, IFNE, IFDEQ or IFDNE (any case) and `opts` has no condition yet (opts->cond is kNone),
// stores the condition in opts->cond and opts->cond_value (a view of `val`: the arguments must
// outlive `opts`) and returns true: the caller then skips `val`. Returns false otherwise: `opt`
// is none of them, or a condition is already set (a second IF*, or NX/XX already stored in
// opts->cond). Redis replies "ERR syntax error" in every such case, as it does for an IF* option
// beside NX or XX in either order (a parser that stores NX/XX only after the loop checks that
// afterwards).
bool ParseSetCondition(std::string_view opt, std::string_view val, shard::SetOptions* opts);

// For a SET whose options parsed: the error text to reply instead of running it, or "" when
// there is none. An IFDEQ/IFDNE digest must be 16 characters long ("ERR must be exactly 16
// hexadecimal characters"); its bytes are not checked (a non-hex digest matches no value).
std::string_view SetConditionError(const shard::SetOptions& opts);

}  // namespace deadbolt::server

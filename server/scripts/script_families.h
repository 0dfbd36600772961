#pragma once
// The catalogue's scripts over sorted sets, lists and hashes that lock primitives other than a
// plain lock send: redis-semaphore's Semaphore and MultiSemaphore (script_semaphore.cc) and
// Redisson's read-write lock, semaphores, count-down latch, spin, fenced and fair locks
// (script_redisson.cc, script_redisson_queue.cc). Each runs on the one shard owning its keys,
// statement by statement, its redis.call()s made through ScriptRun::Call (the commands' own
// handlers).

#include <vector>

#include "server/scripts/script_catalog.h"

namespace deadbolt::server {

// Appends the scripts to the catalogue (called once, while it is built).
void AddSemaphoreScripts(std::vector<ScriptInfo>* out);
void AddRedissonScripts(std::vector<ScriptInfo>* out);  // calls AddRedissonQueueScripts
void AddRedissonQueueScripts(std::vector<ScriptInfo>* out);

// A catalogue entry; aborts on a malformed SHA1 (a typo in a table).
ScriptInfo MakeScript(std::string_view sha, std::string_view client, std::string_view name,
                      int num_keys, ScriptShardFn run, bool acquires = false);

}  // namespace deadbolt::server

#pragma once
// The catalogue's scripts over several unrelated keys (server/scripts/script_multikey.cc):
// node-redlock's acquire / extend / release and Redisson's batched watchdog renewal. Each runs in
// one step when its keys share a shard, and as an atomic multi-phase fan-out when they do not.

#include <vector>

#include "server/scripts/script_catalog.h"

namespace deadbolt::server {

// Appends the multi-key scripts to the catalogue (called once, while it is built).
void AddMultiKeyScripts(std::vector<ScriptInfo>* out);

}  // namespace deadbolt::server

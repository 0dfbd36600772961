#pragma once
// Who may connect: protected mode's rule, as Redis applies it at accept. Pure functions of the
// configuration and the peer's address; the accepting reactor's thread calls them.

#include <sys/socket.h>

#include "server/base/config.h"

namespace deadbolt::server {

// True for a peer Redis calls local: an IPv4 address 127.x.x.x or the IPv6 address ::1 (an
// IPv4-mapped ::ffff:127.0.0.1 is not, as in Redis).
bool IsLoopbackPeer(const sockaddr_storage& peer);

// True when protected mode refuses this peer: protected-mode yes, no password, and a peer that
// is not on the loopback interface.
bool ProtectedModeRefuses(const Config& config, const sockaddr_storage& peer);

}  // namespace deadbolt::server

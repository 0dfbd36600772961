#include "server/cmdtable/peer_policy.h"

#include <netinet/in.h>

#include <cstring>

namespace deadbolt::server {

bool IsLoopbackPeer(const sockaddr_storage& peer) {
  if (peer.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&peer);
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  }
  if (peer.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&peer);
    return memcmp(&a->sin6_addr, &in6addr_loopback, sizeof(in6_addr)) == 0;
  }
  return false;
}

bool ProtectedModeRefuses(const Config& config, const sockaddr_storage& peer) {
  return config.protected_mode && config.requirepass.empty() && !IsLoopbackPeer(peer);
}

}  // namespace deadbolt::server

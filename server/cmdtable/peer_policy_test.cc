#include "server/cmdtable/peer_policy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <string>

namespace deadbolt::server {
namespace {

sockaddr_storage V4(const char* ip) {
  sockaddr_storage ss{};
  auto* a = reinterpret_cast<sockaddr_in*>(&ss);
  a->sin_family = AF_INET;
  EXPECT_EQ(inet_pton(AF_INET, ip, &a->sin_addr), 1) << ip;
  return ss;
}

sockaddr_storage V6(const char* ip) {
  sockaddr_storage ss{};
  auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
  a->sin6_family = AF_INET6;
  EXPECT_EQ(inet_pton(AF_INET6, ip, &a->sin6_addr), 1) << ip;
  return ss;
}

TEST(PeerPolicyTest, LoopbackAsRedisSeesIt) {
  EXPECT_TRUE(IsLoopbackPeer(V4("127.0.0.1")));
  EXPECT_TRUE(IsLoopbackPeer(V4("127.1.2.3")));
  EXPECT_TRUE(IsLoopbackPeer(V6("::1")));
  EXPECT_FALSE(IsLoopbackPeer(V4("192.0.2.2")));
  EXPECT_FALSE(IsLoopbackPeer(V4("10.0.0.1")));
  EXPECT_FALSE(IsLoopbackPeer(V4("128.0.0.1")));
  EXPECT_FALSE(IsLoopbackPeer(V6("::ffff:127.0.0.1")));  // Redis compares the text "::1"
  EXPECT_FALSE(IsLoopbackPeer(V6("fe80::1")));
  EXPECT_FALSE(IsLoopbackPeer(sockaddr_storage{}));
}

TEST(PeerPolicyTest, ProtectedModeRefusesOnlyStrangersWithoutPassword) {
  Config c;
  ASSERT_TRUE(c.protected_mode);  // Redis's default
  EXPECT_TRUE(ProtectedModeRefuses(c, V4("192.0.2.2")));
  EXPECT_FALSE(ProtectedModeRefuses(c, V4("127.0.0.1")));
  EXPECT_FALSE(ProtectedModeRefuses(c, V6("::1")));
  c.requirepass = "pw";
  EXPECT_FALSE(ProtectedModeRefuses(c, V4("192.0.2.2")));
  c.requirepass.clear();
  ASSERT_FALSE(c.Set("protected-mode", "no").has_value());
  EXPECT_FALSE(ProtectedModeRefuses(c, V4("192.0.2.2")));
  ASSERT_FALSE(c.Set("protected-mode", "YES").has_value());
  EXPECT_TRUE(ProtectedModeRefuses(c, V4("192.0.2.2")));
}

}  // namespace
}  // namespace deadbolt::server

// Reactor::SubmitSendCall, the send a relay's last shard makes to another reactor's client
// (relay.cc, SendRepliesHere): its completion reaches `done` with the kernel's result, and a send
// the kernel still holds when the server stops reaches `drop` instead, once, after the ring is
// gone. The e2e tests cannot stop a server at the moment a socket is exactly full; here the
// socket is a socketpair this test fills itself.

#include "server/core/reactor.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <optional>
#include <string>
#include <thread>

#include "server/base/config.h"
#include "server/core/server.h"

namespace deadbolt::server {
namespace {

struct CountingCall : Reactor::IoCall {
  std::atomic<int> done_calls{0};
  std::atomic<int> drop_calls{0};
  std::atomic<int> result{0};
  std::atomic<bool> submitted{false};
};

void Done(Reactor::IoCall* call, int res) {
  auto* c = static_cast<CountingCall*>(call);
  c->result.store(res);
  c->done_calls.fetch_add(1);
}

void Drop(Reactor::IoCall* call) { static_cast<CountingCall*>(call)->drop_calls.fetch_add(1); }

Config OneReactor() {
  Config config;
  config.port = 0;  // any free port: the listener is not used here
  config.threads = 1;
  config.pin = Config::Pin::kNo;
  return config;
}

// Waits (without a deadline: ctest's timeout is the bound) until `ready` holds.
template <typename F>
void WaitFor(F ready) {
  while (!ready()) std::this_thread::yield();
}

class SendCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0);
    int small = 4096;
    ASSERT_EQ(setsockopt(fds_[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    ASSERT_EQ(setsockopt(fds_[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
  }
  void TearDown() override {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }

  // Submits a send of `data` on fds_[0] from the reactor's own thread.
  void Submit(Server& server, const std::string& data, CountingCall* call) {
    call->done = &Done;
    call->drop = &Drop;
    server.reactor(0).Post([this, &data, call] {
      Reactor::Current()->SubmitSendCall(fds_[0], data, call);
      call->submitted.store(true);
    });
    WaitFor([call] { return call->submitted.load(); });
  }

  // Writes into fds_[0] until the kernel takes no more (the socket itself stays blocking, so
  // that a send from the ring waits for room rather than failing).
  void Fill() {
    std::string chunk(4096, 'x');
    while (send(fds_[0], chunk.data(), chunk.size(), MSG_DONTWAIT) > 0) {
    }
  }

  int fds_[2] = {-1, -1};
};

TEST_F(SendCallTest, DoneGetsTheBytesSent) {
  CountingCall call;
  const std::string data = "+OK\r\n:1\r\n";
  {
    Server server(OneReactor());
    ASSERT_EQ(server.Start(), std::nullopt);
    Submit(server, data, &call);
    WaitFor([&] { return call.done_calls.load() == 1; });
    server.RequestShutdown();
    server.Wait();
  }
  EXPECT_EQ(call.result.load(), static_cast<int>(data.size()));
  EXPECT_EQ(call.drop_calls.load(), 0);  // done, so the stop has nothing to drop
  std::string got(data.size(), '\0');
  ASSERT_EQ(recv(fds_[1], got.data(), got.size(), MSG_DONTWAIT), static_cast<ssize_t>(data.size()));
  EXPECT_EQ(got, data);
}

TEST_F(SendCallTest, ASendStillWaitingAtStopIsDroppedOnce) {
  CountingCall call;
  const std::string data(1024, 'y');
  {
    Server server(OneReactor());
    ASSERT_EQ(server.Start(), std::nullopt);
    Fill();  // nobody reads fds_[1]: the send waits in the ring for room
    Submit(server, data, &call);
    server.RequestShutdown();
    server.Wait();
    EXPECT_EQ(call.done_calls.load(), 0);
    EXPECT_EQ(call.drop_calls.load(), 0);  // not while the reactor (and its ring) exist
  }
  EXPECT_EQ(call.done_calls.load(), 0);
  EXPECT_EQ(call.drop_calls.load(), 1);
}

}  // namespace
}  // namespace deadbolt::server

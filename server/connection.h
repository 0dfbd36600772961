#pragma once
// One client connection: its input, its replies in pipeline order, and its session state.

#include <absl/functional/any_invocable.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/reply_builder.h"
#include "protocol/resp_parser.h"
#include "server/command.h"

namespace deadbolt::server {

class Reactor;

// Owned by the reactor thread that accepted it; no other thread touches it. A command sent to
// another shard holds a reference (Ref/Unref, on this thread only) so the object outlives its
// socket until every reply has come back.
//
// Replies leave in pipeline order: a command that runs inline writes straight to the output
// buffer when nothing is outstanding; otherwise it takes a slot in `pending_`, and slots are
// flushed in order as they complete.
class Connection {
 public:
  Connection(Reactor* reactor, int fd, uint64_t id, std::string peer, std::string local);
  ~Connection();

  // Reactor thread: bytes arrived.
  void OnRead(const char* data, size_t n);
  // Reactor thread: runs as many complete commands from the input as possible.
  void ProcessInput();

  // --- for command handlers (reactor thread) ---
  Reactor& reactor() { return *reactor_; }
  uint64_t id() const { return id_; }
  int db_index() const { return db_index_; }
  void set_db_index(int i) { db_index_ = i; }
  int resp() const { return resp_; }
  void set_resp(int v) { resp_ = v; }
  bool authenticated() const { return authenticated_; }
  void set_authenticated(bool v) { authenticated_ = v; }
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  std::string& lib_name() { return lib_name_; }
  std::string& lib_ver() { return lib_ver_; }
  const std::string& peer() const { return peer_; }
  const std::string& local() const { return local_; }
  int64_t created_ms() const { return created_ms_; }
  int64_t last_interaction_ms() const { return last_interaction_ms_; }
  // The last command run, as CLIENT LIST shows it ("get", "client|list").
  std::string last_command() const;
  size_t query_buffer_size() const { return in_.size() - in_start_; }
  size_t output_buffer_size() const { return out_.size() + sending_.size(); }
  // Close after the replies so far have been written (QUIT, protocol errors, CLIENT KILL).
  void CloseAfterReply() { close_after_reply_ = true; }
  void Kill();

  // Runs per_shard on each shard in `shards` (inline for this reactor's shard, as a message to the
  // others), then finish() here, which writes the command's reply. per_shard is copied to every
  // shard; it may write only to state set aside for that shard. Replies keep pipeline order.
  using ShardFn = std::function<void(ShardCtx&)>;
  void FanOut(const std::vector<int>& shards, ShardFn per_shard,
              absl::AnyInvocable<void(protocol::ReplyBuilder&)> finish);

  // --- for the reactor ---
  int fd() const { return fd_; }
  void Ref() { refs_++; }
  void Unref();
  bool closing() const { return closing_; }
  bool CanFree() const { return closing_ && refs_ == 0 && !recv_armed_ && !send_in_flight_; }

 private:
  friend class Reactor;
  void Dispatch(CmdArgs args);
  void Execute(const CommandSpec* spec, CmdArgs args);
  void Forward(const CommandSpec* spec, CmdArgs args, int shard);
  uint64_t ReserveSlot();
  void CompleteSlot(uint64_t seq, std::string data);
  std::string* ReplyTarget();  // out_ when nothing is pending, else a fresh slot
  void ReplyError(std::string_view msg);
  void AfterOutput();

  Reactor* reactor_;
  int fd_;
  uint64_t id_;
  std::string peer_, local_;
  protocol::RespParser parser_;
  std::vector<std::string_view> args_;
  std::string in_;
  size_t in_start_ = 0;
  std::string out_;      // replies not yet handed to the kernel
  std::string sending_;  // the send in flight
  size_t sending_off_ = 0;
  struct Slot {
    std::string data;
    bool done = false;
  };
  std::deque<Slot> pending_;
  uint64_t pending_base_ = 0;  // sequence number of pending_.front()
  protocol::ReplyBuilder rb_;

  int db_index_ = 0;
  int resp_ = 2;
  bool authenticated_ = false;
  std::string name_, lib_name_, lib_ver_;
  const CommandSpec* last_spec_ = nullptr;
  std::string last_sub_;  // lower-case subcommand of a container command
  int64_t created_ms_ = 0;
  int64_t last_interaction_ms_ = 0;

  int refs_ = 0;
  bool recv_armed_ = false;
  bool send_in_flight_ = false;
  bool in_flush_list_ = false;
  bool in_free_list_ = false;
  bool closing_ = false;
  bool close_after_reply_ = false;
  bool processing_ = false;
};

}  // namespace deadbolt::server

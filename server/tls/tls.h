#pragma once
// TLS for client connections with OpenSSL, over memory BIOs: io_uring keeps doing the socket I/O.
// Received ciphertext is fed in and plaintext comes out; plaintext replies go in and the records
// to send come out. Nothing here touches a socket or blocks.

#include <openssl/ssl.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "server/base/config.h"

namespace deadbolt::server {

// The server's TLS settings (certificate, key, CA, protocols, ciphers, client verification),
// built by the main thread before the reactors start (or by CONFIG SET tls-* on one reactor),
// then only read, shared by pointer: each reactor makes its sessions from its copy of the
// pointer (SSL_new on a shared SSL_CTX is safe from several threads; the SSL holds a reference).
class TlsContext {
 public:
  // Loads --tls-cert-file, --tls-key-file, --tls-ca-cert-file and the rest. An error names the
  // file or setting at fault and OpenSSL's reason.
  static std::variant<std::unique_ptr<TlsContext>, std::string> Create(const Config& config);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  SSL_CTX* ctx() const { return ctx_; }

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

// Whether --tls-protocols names only TLSv1, TLSv1.1, TLSv1.2 and TLSv1.3 (Redis's words); the
// smallest and largest version named go in *min / *max (empty: TLSv1.2 and TLSv1.3).
bool ParseTlsProtocols(const std::string& value, int* min_version, int* max_version);
// Whether --tls-auth-clients is yes, no or optional.
bool ValidTlsAuthClients(const std::string& value);

// One connection's TLS state: the server side of the handshake, then records both ways. Owned by
// the connection, on its reactor's thread. Every failure is a value: the connection is closed
// and error() says why.
class TlsSession {
 public:
  explicit TlsSession(const TlsContext& ctx);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Received bytes: advances the handshake and appends the application data they complete to
  // *plain. Records to send in answer (the handshake's, alerts, session tickets) wait in the
  // session until Seal. False on a failure (bad bytes, a refused certificate); then close.
  bool Feed(const char* data, size_t n, std::string* plain);
  // Replaces the plaintext in *buf by the records to send: any waiting records, then *buf's
  // bytes encrypted. Before the handshake has finished *buf must be empty (the plaintext waits
  // in the connection). False on a failure.
  bool Seal(std::string* buf);
  // Records wait to be sent.
  bool wire_pending() const { return BIO_ctrl_pending(wbio_) > 0; }
  bool handshake_done() const { return handshake_done_; }
  // The peer sent close_notify: nothing more will come.
  bool peer_closed() const { return peer_closed_; }
  const std::string& error() const { return error_; }
  // After the handshake: "TLSv1.3 TLS_AES_256_GCM_SHA384".
  std::string Describe() const;

 private:
  bool Fail(int ssl_error, const char* where);
  SSL* ssl_ = nullptr;
  BIO* rbio_ = nullptr;  // ciphertext received, read by OpenSSL
  BIO* wbio_ = nullptr;  // records OpenSSL made, sent by the reactor
  bool handshake_done_ = false;
  bool peer_closed_ = false;
  std::string error_;
};

// Kernel TLS: whether this kernel has the `tls` upper-layer protocol, tried once with
// setsockopt(TCP_ULP, "tls") on a connected loopback socket. Returns nothing when it has, else
// the reason (e.g. "No such file or directory"). deadbolt keeps records in user space either
// way for now (docs/SECURITY.md); the log line at start says which is used.
std::optional<std::string> KernelTlsUnavailable();

}  // namespace deadbolt::server

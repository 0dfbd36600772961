#include "server/tls/tls.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace deadbolt::server {
namespace {

// OpenSSL's queued errors for this thread, as one line, and the queue emptied.
std::string OpenSslErrors() {
  std::string out;
  char buf[256];
  while (unsigned long e = ERR_get_error()) {
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown error" : out;
}

int VersionOf(const std::string& word) {
  if (strcasecmp(word.c_str(), "TLSv1") == 0) return TLS1_VERSION;
  if (strcasecmp(word.c_str(), "TLSv1.1") == 0) return TLS1_1_VERSION;
  if (strcasecmp(word.c_str(), "TLSv1.2") == 0) return TLS1_2_VERSION;
  if (strcasecmp(word.c_str(), "TLSv1.3") == 0) return TLS1_3_VERSION;
  return 0;
}

}  // namespace

bool ParseTlsProtocols(const std::string& value, int* min_version, int* max_version) {
  std::istringstream in(value);
  std::string word;
  int lo = 0, hi = 0;
  while (in >> word) {
    int v = VersionOf(word);
    if (v == 0) return false;
    if (lo == 0 || v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo == 0) {  // Redis's default: TLSv1.2 and TLSv1.3
    lo = TLS1_2_VERSION;
    hi = TLS1_3_VERSION;
  }
  *min_version = lo;
  *max_version = hi;
  return true;
}

bool ValidTlsAuthClients(const std::string& value) {
  return strcasecmp(value.c_str(), "yes") == 0 || strcasecmp(value.c_str(), "no") == 0 ||
         strcasecmp(value.c_str(), "optional") == 0;
}

std::variant<std::unique_ptr<TlsContext>, std::string> TlsContext::Create(const Config& config) {
  ERR_clear_error();
  if (config.tls_cert_file.empty() || config.tls_key_file.empty()) {
    return std::string("TLS: --tls-port needs --tls-cert-file and --tls-key-file");
  }
  const bool verify = strcasecmp(config.tls_auth_clients.c_str(), "no") != 0;
  if (verify && config.tls_ca_cert_file.empty()) {
    return std::string(
        "TLS: --tls-ca-cert-file must be specified when tls-auth-clients is yes or optional");
  }
  int min_v = 0, max_v = 0;
  if (!ParseTlsProtocols(config.tls_protocols, &min_v, &max_v)) {
    return "TLS: invalid tls-protocols '" + config.tls_protocols + "'";
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return "TLS: SSL_CTX_new failed: " + OpenSslErrors();
  std::unique_ptr<TlsContext> out(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, min_v);
  SSL_CTX_set_max_proto_version(ctx, max_v);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE);
  static const unsigned char kSessionContext[] = "deadbolt";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1);
  if (SSL_CTX_use_certificate_chain_file(ctx, config.tls_cert_file.c_str()) != 1) {
    return "TLS: failed to load certificate " + config.tls_cert_file + ": " + OpenSslErrors();
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, config.tls_key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return "TLS: failed to load private key " + config.tls_key_file + ": " + OpenSslErrors();
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return "TLS: the private key does not match the certificate: " + OpenSslErrors();
  }
  if (!config.tls_ca_cert_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, config.tls_ca_cert_file.c_str(), nullptr) != 1) {
      return "TLS: failed to load CA certificate(s) " + config.tls_ca_cert_file + ": " +
             OpenSslErrors();
    }
    // Clients are told which CAs the server accepts.
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(config.tls_ca_cert_file.c_str())) {
      SSL_CTX_set_client_CA_list(ctx, names);
    }
    ERR_clear_error();
  }
  if (strcasecmp(config.tls_auth_clients.c_str(), "yes") == 0) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  } else if (strcasecmp(config.tls_auth_clients.c_str(), "optional") == 0) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  if (!config.tls_ciphers.empty() &&
      SSL_CTX_set_cipher_list(ctx, config.tls_ciphers.c_str()) != 1) {
    return "TLS: failed to configure ciphers '" + config.tls_ciphers + "': " + OpenSslErrors();
  }
  if (!config.tls_ciphersuites.empty() &&
      SSL_CTX_set_ciphersuites(ctx, config.tls_ciphersuites.c_str()) != 1) {
    return "TLS: failed to configure ciphersuites '" + config.tls_ciphersuites +
           "': " + OpenSslErrors();
  }
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

TlsSession::TlsSession(const TlsContext& ctx) {
  ssl_ = SSL_new(ctx.ctx());
  rbio_ = BIO_new(BIO_s_mem());
  wbio_ = BIO_new(BIO_s_mem());
  if (ssl_ == nullptr || rbio_ == nullptr || wbio_ == nullptr) {
    // Out of memory: the first Feed fails and the connection is closed.
    error_ = "TLS: cannot allocate a session: " + OpenSslErrors();
    if (rbio_) BIO_free(rbio_);
    if (wbio_) BIO_free(wbio_);
    if (ssl_) SSL_free(ssl_);
    ssl_ = nullptr;
    rbio_ = wbio_ = nullptr;
    return;
  }
  // An empty memory BIO reads as "retry", not as end of file.
  BIO_set_mem_eof_return(rbio_, -1);
  BIO_set_mem_eof_return(wbio_, -1);
  SSL_set_bio(ssl_, rbio_, wbio_);  // the SSL object owns both now
  SSL_set_accept_state(ssl_);
}

TlsSession::~TlsSession() {
  if (ssl_) SSL_free(ssl_);
}

bool TlsSession::Fail(int ssl_error, const char* where) {
  std::string reason = ERR_peek_error() != 0 ? OpenSslErrors() : std::string();
  if (reason.empty()) {
    reason = ssl_error == SSL_ERROR_SYSCALL ? "unexpected end of stream"
                                            : "SSL error " + std::to_string(ssl_error);
  }
  error_ = std::string(where) + ": " + reason;
  return false;
}

bool TlsSession::Feed(const char* data, size_t n, std::string* plain) {
  if (ssl_ == nullptr) return false;
  ERR_clear_error();
  while (n > 0) {  // a memory BIO takes everything, but its write length is an int
    size_t written = 0;
    if (BIO_write_ex(rbio_, data, n, &written) != 1) return Fail(SSL_ERROR_SSL, "TLS read");
    data += written;
    n -= written;
  }
  if (!handshake_done_) {
    int r = SSL_do_handshake(ssl_);
    if (r != 1) {
      int e = SSL_get_error(ssl_, r);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return true;
      return Fail(e, "TLS handshake failed");
    }
    handshake_done_ = true;
  }
  char buf[16 * 1024];  // one record's worth
  for (;;) {
    size_t got = 0;
    int r = SSL_read_ex(ssl_, buf, sizeof(buf), &got);
    if (r == 1) {
      plain->append(buf, got);
      continue;
    }
    int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return true;
    if (e == SSL_ERROR_ZERO_RETURN) {
      peer_closed_ = true;
      return true;
    }
    return Fail(e, "TLS read failed");
  }
}

bool TlsSession::Seal(std::string* buf) {
  if (ssl_ == nullptr) return false;
  ERR_clear_error();
  if (!buf->empty()) {
    if (!handshake_done_) {
      error_ = "TLS: reply before the handshake finished";
      return false;
    }
    size_t written = 0;
    int r = SSL_write_ex(ssl_, buf->data(), buf->size(), &written);
    if (r != 1 || written != buf->size()) return Fail(SSL_get_error(ssl_, r), "TLS write failed");
  }
  size_t pending = BIO_ctrl_pending(wbio_);
  buf->resize(pending);
  size_t got = 0;
  if (pending > 0 && (BIO_read_ex(wbio_, buf->data(), pending, &got) != 1 || got != pending)) {
    return Fail(SSL_ERROR_SSL, "TLS write failed");
  }
  return true;
}

std::string TlsSession::Describe() const {
  if (ssl_ == nullptr) return "";
  return std::string(SSL_get_version(ssl_)) + " " + SSL_get_cipher_name(ssl_);
}

std::optional<std::string> KernelTlsUnavailable() {
  // TCP_ULP needs an established socket: a loopback listener, a connection to it, then the
  // setsockopt on the client's end. Nothing is sent.
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  std::optional<std::string> reason;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (lfd < 0 || cfd < 0 || bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(lfd, 1) != 0 || getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      connect(cfd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    reason = std::string("could not probe: ") + strerror(errno);
  } else if (setsockopt(cfd, IPPROTO_TCP, TCP_ULP, "tls", sizeof("tls")) != 0) {
    reason = strerror(errno);
  }
  if (cfd >= 0) close(cfd);
  if (lfd >= 0) close(lfd);
  return reason;
}

}  // namespace deadbolt::server

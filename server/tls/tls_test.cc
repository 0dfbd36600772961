#include "server/tls/tls.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace deadbolt::server {
namespace {

// A throwaway CA and a server certificate it signs, written as PEM files to a temporary folder.
class TlsFiles {
 public:
  TlsFiles() {
    char tmpl[] = "/tmp/deadbolt_tls_test_XXXXXX";
    dir_ = mkdtemp(tmpl);
    EVP_PKEY* ca_key = EVP_EC_gen("P-256");
    X509* ca = MakeCert(ca_key, ca_key, nullptr, "test CA", true);
    EVP_PKEY* srv_key = EVP_EC_gen("P-256");
    X509* srv = MakeCert(srv_key, ca_key, ca, "localhost", false);
    EVP_PKEY* cli_key = EVP_EC_gen("P-256");
    X509* cli = MakeCert(cli_key, ca_key, ca, "client", false);
    WriteCert(ca, "ca.crt");
    WriteCert(srv, "server.crt");
    WriteKey(srv_key, "server.key");
    client_cert_ = cli;
    client_key_ = cli_key;
    ca_cert_ = ca;
    X509_free(srv);
    EVP_PKEY_free(srv_key);
    EVP_PKEY_free(ca_key);
  }
  ~TlsFiles() {
    X509_free(client_cert_);
    EVP_PKEY_free(client_key_);
    X509_free(ca_cert_);
    for (const char* f : {"ca.crt", "server.crt", "server.key"}) unlink(Path(f).c_str());
    rmdir(dir_.c_str());
  }
  std::string Path(const char* name) const { return dir_ + "/" + name; }
  Config ServerConfig(const char* auth_clients) const {
    Config c;
    c.tls_port = 6380;
    c.tls_cert_file = Path("server.crt");
    c.tls_key_file = Path("server.key");
    c.tls_ca_cert_file = Path("ca.crt");
    c.tls_auth_clients = auth_clients;
    return c;
  }
  X509* client_cert_ = nullptr;
  EVP_PKEY* client_key_ = nullptr;
  X509* ca_cert_ = nullptr;

 private:
  static X509* MakeCert(EVP_PKEY* key, EVP_PKEY* signer, X509* issuer, const char* cn, bool ca) {
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), ca ? 1 : 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                               -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    if (ca) {
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, nullptr, NID_basic_constraints,
                                                "critical,CA:TRUE");
      X509_add_ext(x, ext, -1);
      X509_EXTENSION_free(ext);
    }
    X509_sign(x, signer, EVP_sha256());
    return x;
  }
  void WriteCert(X509* x, const char* name) {
    FILE* f = fopen(Path(name).c_str(), "w");
    PEM_write_X509(f, x);
    fclose(f);
  }
  void WriteKey(EVP_PKEY* k, const char* name) {
    FILE* f = fopen(Path(name).c_str(), "w");
    PEM_write_PrivateKey(f, k, nullptr, nullptr, 0, nullptr, nullptr);
    fclose(f);
  }
  std::string dir_;
};

// The client's side, in memory too: what it sends is fed to the server's session and back.
class TestClient {
 public:
  TestClient(const TlsFiles& files, bool with_cert) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_), files.ca_cert_);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (with_cert) {
      SSL_CTX_use_certificate(ctx_, files.client_cert_);
      SSL_CTX_use_PrivateKey(ctx_, files.client_key_);
    }
    ssl_ = SSL_new(ctx_);
    rbio_ = BIO_new(BIO_s_mem());
    wbio_ = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(rbio_, -1);
    SSL_set_bio(ssl_, rbio_, wbio_);
    SSL_set_connect_state(ssl_);
  }
  ~TestClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
  }
  // Takes what the client wants to send.
  std::string Out() {
    std::string s(BIO_ctrl_pending(wbio_), '\0');
    if (!s.empty()) BIO_read(wbio_, s.data(), static_cast<int>(s.size()));
    return s;
  }
  void In(const std::string& s) { BIO_write(rbio_, s.data(), static_cast<int>(s.size())); }
  bool Handshake() { return SSL_do_handshake(ssl_) == 1; }
  void Write(const std::string& s) {
    ASSERT_EQ(SSL_write(ssl_, s.data(), static_cast<int>(s.size())), static_cast<int>(s.size()));
  }
  std::string ReadAll() {
    std::string out;
    char buf[4096];
    int n;
    while ((n = SSL_read(ssl_, buf, sizeof(buf))) > 0) out.append(buf, n);
    return out;
  }

 private:
  SSL_CTX* ctx_;
  SSL* ssl_;
  BIO* rbio_;
  BIO* wbio_;
};

// Runs the handshake between client and server to its end (or a failure). True when both sides
// are done.
bool Shake(TestClient& client, TlsSession& server) {
  for (int i = 0; i < 10; i++) {
    bool client_done = client.Handshake();
    std::string to_server = client.Out();
    std::string plain;
    if (!to_server.empty() && !server.Feed(to_server.data(), to_server.size(), &plain)) {
      return false;
    }
    EXPECT_TRUE(plain.empty());
    std::string to_client;
    if (!server.Seal(&to_client)) return false;
    client.In(to_client);
    if (client_done && server.handshake_done() && to_client.empty()) return true;
  }
  return false;
}

TEST(Tls, HandshakeThenBothWays) {
  TlsFiles files;
  auto ctx = TlsContext::Create(files.ServerConfig("no"));
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<TlsContext>>(ctx))
      << std::get<std::string>(ctx);
  TlsSession server(*std::get<std::unique_ptr<TlsContext>>(ctx));
  TestClient client(files, false);
  ASSERT_TRUE(Shake(client, server)) << server.error();
  EXPECT_NE(server.Describe().find("TLSv1.3"), std::string::npos) << server.Describe();

  // A command in, split at every awkward place: the plaintext comes out whole.
  client.Write("*1\r\n$4\r\nPING\r\n");
  std::string wire = client.Out();
  std::string plain;
  for (char ch : wire) ASSERT_TRUE(server.Feed(&ch, 1, &plain)) << server.error();
  EXPECT_EQ(plain, "*1\r\n$4\r\nPING\r\n");

  // A reply of 1 MB out: many records, one buffer.
  std::string reply(1 << 20, 'x');
  for (size_t i = 0; i < reply.size(); i += 4097) reply[i] = static_cast<char>('a' + i % 26);
  std::string buf = reply;
  ASSERT_TRUE(server.Seal(&buf)) << server.error();
  EXPECT_GT(buf.size(), reply.size());
  EXPECT_EQ(buf.find("xxxxxxxxxxxxxxxx"), std::string::npos);  // encrypted
  client.In(buf);
  EXPECT_EQ(client.ReadAll(), reply);
}

TEST(Tls, PlainTextToTheTlsPortFails) {
  TlsFiles files;
  auto ctx = TlsContext::Create(files.ServerConfig("no"));
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<TlsContext>>(ctx));
  TlsSession server(*std::get<std::unique_ptr<TlsContext>>(ctx));
  std::string plain;
  const std::string resp = "*1\r\n$4\r\nPING\r\n";
  EXPECT_FALSE(server.Feed(resp.data(), resp.size(), &plain));
  EXPECT_TRUE(plain.empty());
  EXPECT_NE(server.error().find("handshake"), std::string::npos) << server.error();
  EXPECT_FALSE(server.handshake_done());
}

TEST(Tls, AuthClientsYesRefusesAClientWithoutCertificate) {
  TlsFiles files;
  auto ctx = TlsContext::Create(files.ServerConfig("yes"));
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<TlsContext>>(ctx));
  {
    TlsSession server(*std::get<std::unique_ptr<TlsContext>>(ctx));
    TestClient client(files, false);
    EXPECT_FALSE(Shake(client, server));
    EXPECT_NE(server.error().find("certificate"), std::string::npos) << server.error();
  }
  {
    TlsSession server(*std::get<std::unique_ptr<TlsContext>>(ctx));
    TestClient client(files, true);
    EXPECT_TRUE(Shake(client, server)) << server.error();
  }
  // optional: a client without one is let in.
  auto opt = TlsContext::Create(files.ServerConfig("optional"));
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<TlsContext>>(opt));
  TlsSession server(*std::get<std::unique_ptr<TlsContext>>(opt));
  TestClient client(files, false);
  EXPECT_TRUE(Shake(client, server)) << server.error();
}

TEST(Tls, ContextErrorsNameTheCause) {
  TlsFiles files;
  Config c = files.ServerConfig("no");
  c.tls_cert_file = files.Path("missing.crt");
  auto r = TlsContext::Create(c);
  ASSERT_TRUE(std::holds_alternative<std::string>(r));
  EXPECT_NE(std::get<std::string>(r).find("missing.crt"), std::string::npos);

  c = files.ServerConfig("yes");
  c.tls_ca_cert_file.clear();
  r = TlsContext::Create(c);
  ASSERT_TRUE(std::holds_alternative<std::string>(r));
  EXPECT_NE(std::get<std::string>(r).find("tls-ca-cert-file"), std::string::npos);

  c = files.ServerConfig("no");
  c.tls_protocols = "TLSv1.3 SSLv3";
  r = TlsContext::Create(c);
  ASSERT_TRUE(std::holds_alternative<std::string>(r));
  EXPECT_NE(std::get<std::string>(r).find("tls-protocols"), std::string::npos);

  c = files.ServerConfig("no");
  c.tls_ciphersuites = "NOT_A_SUITE";
  r = TlsContext::Create(c);
  ASSERT_TRUE(std::holds_alternative<std::string>(r));
}

TEST(Tls, ProtocolsAndAuthClientsWords) {
  int lo = 0, hi = 0;
  ASSERT_TRUE(ParseTlsProtocols("", &lo, &hi));
  EXPECT_EQ(lo, TLS1_2_VERSION);
  EXPECT_EQ(hi, TLS1_3_VERSION);
  ASSERT_TRUE(ParseTlsProtocols("TLSv1.2", &lo, &hi));
  EXPECT_EQ(lo, TLS1_2_VERSION);
  EXPECT_EQ(hi, TLS1_2_VERSION);
  ASSERT_TRUE(ParseTlsProtocols("tlsv1.3  TLSv1.2", &lo, &hi));
  EXPECT_EQ(lo, TLS1_2_VERSION);
  EXPECT_EQ(hi, TLS1_3_VERSION);
  EXPECT_FALSE(ParseTlsProtocols("TLSv1.4", &lo, &hi));
  EXPECT_TRUE(ValidTlsAuthClients("optional"));
  EXPECT_FALSE(ValidTlsAuthClients("maybe"));
}

TEST(Tls, TlsProtocolsLimitTheVersion) {
  TlsFiles files;
  Config c = files.ServerConfig("no");
  c.tls_protocols = "TLSv1.2";
  auto ctx = TlsContext::Create(c);
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<TlsContext>>(ctx));
  TlsSession server(*std::get<std::unique_ptr<TlsContext>>(ctx));
  TestClient client(files, false);
  ASSERT_TRUE(Shake(client, server)) << server.error();
  EXPECT_NE(server.Describe().find("TLSv1.2"), std::string::npos) << server.Describe();
}

TEST(Tls, KernelTlsProbeAnswers) {
  // This machine's kernel has no tls ULP; either way the probe must answer without failing.
  auto why = KernelTlsUnavailable();
  if (why) {
    EXPECT_FALSE(why->empty());
  }
}

}  // namespace
}  // namespace deadbolt::server

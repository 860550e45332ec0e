#include "runtime/base/errors.hpp"
#include "tests/support/refusal.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/transport/socket_test_util.hpp"
#include "transport/gate.hpp"
#include "transport/tls_identity.hpp"
#include "transport/tls_stream.hpp"

#include <boost/test/unit_test.hpp>

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace deepcee::transport;
using namespace deepcee::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const std::string token = "3f9c1a7be04d52c86a1e9f0b7d23c4e5a8b61f0d9e2c7a43b5d81e6f0c9a2b74";

/// Two CAs and their node certificates, made with the openssl command line in a fresh
/// directory (no key is kept beyond the test).
struct pki {
  temp_dir dir;
  fs::path at(const std::string& f) const { return dir.path / f; }
  void sh(const std::string& cmd) const {
    const auto full = "cd '" + dir.path.string() + "' && (" + cmd + ") >/dev/null 2>&1";
    BOOST_REQUIRE_MESSAGE(std::system(full.c_str()) == 0, cmd);
  }
  void ca(const std::string& name) const {
    sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + name +
       ".key -out " + name + ".pem -days 2 -subj /CN=" + name);
  }
  /// A certificate of node `node` from CA `ca`, valid for `days` (0: expired a second on).
  void node(const std::string& file, const std::string& cn, const std::string& san,
            const std::string& ca, int days = 2,
            const std::string& usage = "serverAuth,clientAuth") const {
    sh("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + file +
       ".key -out " + file + ".csr -subj /CN=" + cn +
       (san.empty() ? "" : " -addext subjectAltName=" + san) +
       (usage.empty() ? "" : " -addext extendedKeyUsage=" + usage) + " && openssl x509 -req -in " +
       file + ".csr -CA " + ca + ".pem -CAkey " + ca + ".key -CAcreateserial -out " + file +
       ".pem -days " + std::to_string(days) + " -copy_extensions copy");
  }
  tls_files files(const std::string& node, const std::string& ca = "ca") const {
    return {at(node + ".pem"), at(node + ".key"), at(ca + ".pem")};
  }
  pki() {
    ca("ca");
    ca("other");
    node("n0", "n0", "", "ca");
    node("n1", "n1", "DNS:n1,DNS:n1.example", "ca");
    node("n2", "n2", "", "ca");
    node("stranger", "n1", "", "other"); // n1's name, another CA
  }
};

std::vector<std::string> names_in(const fs::path& pem) {
  FILE* f = std::fopen(pem.c_str(), "r");
  BOOST_REQUIRE(f);
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  BOOST_REQUIRE(cert);
  auto names = certificate_names(cert);
  X509_free(cert);
  return names;
}

std::string load_error(const tls_files& files, const std::string& node) {
  return refusal<deepcee::runtime::input_error>([&] { tls_context ctx(files, node); });
}

gate_settings tls_settings(std::shared_ptr<const tls_context> ctx, std::vector<std::string> peers,
                           log_lines* log, const std::string& tok = token) {
  gate_settings s{tok, 2000ms, 16, log ? log->sink() : nullptr};
  s.tls = std::move(ctx);
  s.peers = std::move(peers);
  return s;
}

/// Through a tunnel of `client` to a gate of `server`: what the echo gives back for `text`,
/// and the tunnel's refusal.
struct attempt {
  std::string echoed, refusal, gate_log;
  int inside_accepted = 0;
};
attempt through(const tls_context& server, const tls_context& client, const std::string& dialled,
                const std::string& text, const std::string& client_token = token) {
  echo_server inside;
  const endpoint outside{"127.0.0.1", free_port()};
  log_lines log;
  auto no_delete = [](const tls_context*) {};
  gate g(tls_settings({&server, no_delete}, {"n0", "n1", "n2"}, &log), outside, inside.port);
  tunnel t(tls_settings({&client, no_delete}, {}, nullptr, client_token), dialled, outside);
  const int c = connect_local(t.local_port());
  ::send(c, text.data(), text.size(), MSG_NOSIGNAL);
  attempt a;
  a.echoed = receive(c, text.size());
  ::close(c);
  std::this_thread::sleep_for(50ms);
  a.refusal = t.refusal();
  a.gate_log = log.all();
  a.inside_accepted = inside.accepted;
  return a;
}

} // namespace

BOOST_AUTO_TEST_SUITE(gate_tls)

BOOST_AUTO_TEST_CASE(a_certificate_names_its_node_by_cn_or_dns_alt_name_exactly) {
  pki p;
  const auto names = names_in(p.at("n1.pem"));
  BOOST_CHECK_EQUAL(names_text(names), "n1, n1.example");
  BOOST_CHECK(names_node(names, "n1"));
  BOOST_CHECK(names_node(names, "n1.example"));
  BOOST_CHECK(!names_node(names, "n0"));
  BOOST_CHECK(!names_node(names, "n"));
  BOOST_CHECK(!names_node(names, "N1"));
  BOOST_CHECK(!names_node(names, ""));
  BOOST_CHECK_EQUAL(names_text({}), "no name");
  BOOST_CHECK_EQUAL(names_text(names_in(p.at("n0.pem"))), "n0");
  // RFC 6125: where a certificate has DNS names, its CN is not one of them.
  p.node("san", "n2", "DNS:elsewhere", "ca");
  BOOST_CHECK_EQUAL(names_text(names_in(p.at("san.pem"))), "elsewhere");
  const auto cn_beside_san = load_error(p.files("san"), "n2");
  BOOST_CHECK_MESSAGE(
      contains(cn_beside_san, "san.pem: the certificate names elsewhere, not node n2"),
      cn_beside_san);
}

BOOST_AUTO_TEST_CASE(a_node_certificate_needs_server_and_client_auth) {
  pki p;
  p.node("plain", "n0", "", "ca", 2, "");
  p.node("server", "n2", "", "ca", 2, "serverAuth");
  const auto none = load_error(p.files("plain"), "n0");
  BOOST_CHECK_MESSAGE(contains(none, "plain.pem: the certificate lacks the extended key usage "
                                     "serverAuth and clientAuth"),
                      none);
  const auto server_only = load_error(p.files("server"), "n2");
  BOOST_CHECK_MESSAGE(contains(server_only, "server.pem: the certificate lacks the extended key "
                                            "usage clientAuth ("),
                      server_only);
  // A client that shows a certificate without key usages (a context with it put in by hand,
  // past the check at load), which OpenSSL's own check lets pass, is refused by the gate.
  tls_context n0(p.files("n0"), "n0"), n2(p.files("n2"), "n2");
  BOOST_REQUIRE(
      SSL_CTX_use_certificate_file(n2.native(), p.at("plain.pem").c_str(), SSL_FILETYPE_PEM) == 1);
  BOOST_REQUIRE(
      SSL_CTX_use_PrivateKey_file(n2.native(), p.at("plain.key").c_str(), SSL_FILETYPE_PEM) == 1);
  const auto a = through(n0, n2, "n0", "hello");
  BOOST_CHECK_EQUAL(a.echoed, "");
  BOOST_CHECK_EQUAL(a.inside_accepted, 0);
  BOOST_CHECK_MESSAGE(contains(a.gate_log, ": its certificate lacks the extended key usage "
                                           "clientAuth"),
                      a.gate_log);
}

BOOST_AUTO_TEST_CASE(a_node_refuses_to_start_with_files_that_cannot_serve) {
  pki p;
  BOOST_CHECK_EQUAL(load_error(p.files("n0"), "n0"), "");
  const auto missing = load_error({p.at("none.pem"), p.at("n0.key"), p.at("ca.pem")}, "n0");
  BOOST_CHECK_MESSAGE(missing == p.at("none.pem").string() +
                                     ": the certificate is missing or not a regular file",
                      missing);
  const auto not_pem = load_error({p.at("n0.csr"), p.at("n0.key"), p.at("ca.pem")}, "n0");
  BOOST_CHECK_MESSAGE(contains(not_pem, "n0.csr: the certificate is not a PEM certificate"),
                      not_pem);
  const auto wrong_key = load_error({p.at("n0.pem"), p.at("n1.key"), p.at("ca.pem")}, "n0");
  BOOST_CHECK_MESSAGE(
      contains(wrong_key, "n1.key: the private key does not belong to the certificate"), wrong_key);
  const auto other_ca = load_error(p.files("stranger"), "n1");
  BOOST_CHECK_MESSAGE(
      contains(other_ca, "stranger.pem: the certificate does not chain to the CA in") &&
          contains(other_ca, "unable to get local issuer certificate"),
      other_ca);
  const auto wrong_name = load_error(p.files("n1"), "n0");
  BOOST_CHECK_MESSAGE(contains(wrong_name, "n1.pem: the certificate names n1, n1.example, "
                                           "not node n0"),
                      wrong_name);
  p.node("old", "n0", "", "ca", 0);
  std::this_thread::sleep_for(1100ms); // valid for no second past its start
  const auto expired = load_error(p.files("old"), "n0");
  BOOST_CHECK_MESSAGE(contains(expired, "old.pem: the certificate does not chain to the CA in") &&
                          contains(expired, "certificate has expired"),
                      expired);
  p.sh("chmod 640 n0.key");
  const auto shared_key = load_error(p.files("n0"), "n0");
  BOOST_CHECK_MESSAGE(contains(shared_key, "n0.key: the private key may be read by group or "
                                           "others (mode 0640)") &&
                          contains(shared_key, "chmod 600"),
                      shared_key);
  p.sh("chmod 000 n0.key");
  if (::access(p.at("n0.key").c_str(), R_OK) != 0) { // root reads it anyway
    const auto unreadable = load_error(p.files("n0"), "n0");
    BOOST_CHECK_MESSAGE(contains(unreadable, "n0.key: cannot read the private key"), unreadable);
  }
}

BOOST_AUTO_TEST_CASE(nodes_of_one_ca_talk_through_tls_both_ways) {
  pki p;
  tls_context n0(p.files("n0"), "n0"), n1(p.files("n1"), "n1");
  std::string big(100000, 'x'); // many TLS records
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>('a' + i % 26);
  const auto a = through(n0, n1, "n0", big);
  BOOST_CHECK(a.echoed == big);
  BOOST_CHECK_EQUAL(a.refusal, "");
  BOOST_CHECK_EQUAL(a.gate_log, "");
}

BOOST_AUTO_TEST_CASE(a_peer_posing_as_another_node_is_refused_by_name) {
  pki p;
  tls_context n1(p.files("n1"), "n1"), n2(p.files("n2"), "n2");
  // n2 dials n0's address, where n1's certificate answers.
  const auto a = through(n1, n2, "n0", "hello");
  BOOST_CHECK_EQUAL(a.echoed, "");
  BOOST_CHECK_EQUAL(a.inside_accepted, 0);
  BOOST_CHECK_MESSAGE(contains(a.refusal, "cannot authenticate node n0 at 127.0.0.1:") &&
                          contains(a.refusal, ": its certificate names n1, n1.example, "
                                              "not node n0"),
                      a.refusal);
}

BOOST_AUTO_TEST_CASE(a_certificate_of_another_ca_is_refused_on_both_sides) {
  pki p;
  tls_context n0(p.files("n0"), "n0");
  // A node of another CA (whose CA it trusts itself): it cannot verify n0, and n0 refuses it.
  p.node("n1b", "n1", "", "other");
  tls_context stranger(p.files("n1b", "other"), "n1");
  const auto a = through(n0, stranger, "n0", "hello");
  BOOST_CHECK_EQUAL(a.echoed, "");
  BOOST_CHECK_EQUAL(a.inside_accepted, 0);
  BOOST_CHECK_MESSAGE(contains(a.refusal, ": its certificate does not chain to the job's CA"),
                      a.refusal);
  BOOST_CHECK_MESSAGE(contains(a.gate_log, "refused a connection from 127.0.0.1:"), a.gate_log);
  // A client of another CA that trusts the job's CA (it verifies n0): n0's gate refuses its
  // certificate, and the client hears why.
  p.sh("cat ca.pem >> other.pem"); // now trusts both
  tls_context both({p.at("n1b.pem"), p.at("n1b.key"), p.at("other.pem")}, "n1");
  const auto b = through(n0, both, "n0", "hello");
  BOOST_CHECK_EQUAL(b.echoed, "");
  BOOST_CHECK_EQUAL(b.inside_accepted, 0);
  BOOST_CHECK_MESSAGE(contains(b.gate_log, ": its certificate does not chain to the job's CA"),
                      b.gate_log);
  BOOST_CHECK_MESSAGE(contains(b.refusal, "it refused this node's certificate (") &&
                          contains(b.refusal, "alert"),
                      b.refusal);
}

BOOST_AUTO_TEST_CASE(the_token_still_counts_inside_tls_and_raw_bytes_are_refused) {
  pki p;
  tls_context n0(p.files("n0"), "n0"), n1(p.files("n1"), "n1");
  const auto a = through(n0, n1, "n0", "hello", "ffffffffffffffffffffffffffffffff");
  BOOST_CHECK_EQUAL(a.echoed, "");
  BOOST_CHECK_EQUAL(a.inside_accepted, 0);
  BOOST_CHECK_MESSAGE(contains(a.refusal, ": it does not hold the job's token"), a.refusal);
  // Bytes that are no TLS (a CAF header claiming 4 GiB) at a TLS gate.
  echo_server inside;
  const endpoint outside{"127.0.0.1", free_port()};
  log_lines log;
  auto no_delete = [](const tls_context*) {};
  gate g(tls_settings({&n0, no_delete}, {"n1"}, &log), outside, inside.port);
  const int raw = connect_local(outside.port);
  std::vector<uint8_t> header(32, 0);
  header[8] = header[9] = header[10] = header[11] = 0xff;
  ::send(raw, header.data(), header.size(), MSG_NOSIGNAL);
  receive(raw, 1); // an alert at most, then the end
  ::close(raw);
  std::this_thread::sleep_for(100ms);
  BOOST_CHECK_EQUAL(inside.accepted, 0);
  BOOST_CHECK_EQUAL(g.refused(), 1u);
  BOOST_CHECK_MESSAGE(contains(log.all(), "refused a connection from 127.0.0.1:") &&
                          contains(log.all(), "the TLS handshake failed"),
                      log.all());
}

BOOST_AUTO_TEST_CASE(a_token_proof_relayed_from_another_session_is_refused) {
  // The attacker holds n1's certificate and key but not the token. It answers n2's tunnel as
  // n1, takes n2's token proof, and replays it into its own session with n0's gate.
  pki p;
  tls_context n0(p.files("n0"), "n0"), n1(p.files("n1"), "n1"), n2(p.files("n2"), "n2");
  echo_server inside;
  const endpoint outside{"127.0.0.1", free_port()};
  log_lines log;
  auto no_delete = [](const tls_context*) {};
  gate g(tls_settings({&n0, no_delete}, {"n0", "n1", "n2"}, &log), outside, inside.port);
  std::string error;
  const int lure = listen_socket({"127.0.0.1", 0}, error);
  sockaddr_in at{};
  socklen_t len = sizeof at;
  ::getsockname(lure, reinterpret_cast<sockaddr*>(&at), &len);
  tunnel victim(tls_settings({&n2, no_delete}, {}, nullptr), "n1",
                {"127.0.0.1", ntohs(at.sin_port)});
  const int caf = connect_local(victim.local_port());
  const int from_victim = ::accept(lure, nullptr, nullptr);
  BOOST_REQUIRE(from_victim >= 0);
  const auto deadline = tls_stream::clock::now() + 3s;
  tls_stream as_n1(n1, from_victim, true);
  BOOST_REQUIRE_EQUAL(as_n1.handshake(deadline, {}, {"n2"}), "");
  key32 proof{};
  BOOST_REQUIRE(as_n1.read_exact(proof.data(), proof.size(), deadline)); // n2's, for this session
  const int to_gate = connect_local(outside.port);
  tls_stream into_n0(n1, to_gate, false);
  BOOST_REQUIRE_EQUAL(into_n0.handshake(deadline, "n0", {}), ""); // n1's certificate passes
  BOOST_REQUIRE(into_n0.write_all(proof.data(), proof.size(), deadline));
  key32 answer{};
  BOOST_CHECK(!into_n0.read_exact(answer.data(), answer.size(), deadline)); // n0 proves nothing
  BOOST_CHECK(into_n0.ending() == tls_ending::closed);
  std::this_thread::sleep_for(100ms);
  BOOST_CHECK_EQUAL(inside.accepted, 0);
  BOOST_CHECK_EQUAL(g.refused(), 1u);
  BOOST_CHECK_MESSAGE(contains(log.all(), "refused a connection from 127.0.0.1:") &&
                          contains(log.all(), ": it does not hold the job's token"),
                      log.all());
  for (int fd : {caf, from_victim, to_gate, lure})
    ::close(fd);
}

BOOST_AUTO_TEST_CASE(a_gate_with_certificates_refuses_a_client_with_the_psk_alone) {
  // A client with the job's token as a PSK and no certificate, which takes any certificate
  // it is shown: the gate must not let the PSK stand in for the client's certificate.
  pki p;
  tls_context n0(p.files("n0"), "n0");
  tls_context psk_only(token);
  SSL_CTX_set_verify(psk_only.native(), SSL_VERIFY_NONE, nullptr);
  echo_server inside;
  const endpoint outside{"127.0.0.1", free_port()};
  log_lines log;
  auto no_delete = [](const tls_context*) {};
  gate g(tls_settings({&n0, no_delete}, {"n0", "n1"}, &log), outside, inside.port);
  const int fd = connect_local(outside.port);
  tls_stream client(psk_only, fd, false);
  const auto deadline = tls_stream::clock::now() + 2s;
  client.handshake(deadline, "n0", {});
  const std::string hello = "hello";
  client.write_all(reinterpret_cast<const uint8_t*>(hello.data()), hello.size(), deadline);
  std::array<uint8_t, 5> back{};
  BOOST_CHECK(!client.read_exact(back.data(), back.size(), deadline));
  ::close(fd);
  std::this_thread::sleep_for(100ms);
  BOOST_CHECK_EQUAL(inside.accepted, 0);
  BOOST_CHECK_EQUAL(g.refused(), 1u);
  BOOST_CHECK_MESSAGE(contains(log.all(), "refused a connection from 127.0.0.1:"), log.all());
  // And the tunnel of a token-only node at a gate with certificates: refused, not taken in.
  const auto a = [&] {
    tunnel t({token, 2000ms, 16, {}}, "n0", outside);
    const int c = connect_local(t.local_port());
    ::send(c, "x", 1, MSG_NOSIGNAL);
    receive(c, 1);
    ::close(c);
    std::this_thread::sleep_for(50ms);
    return t.refusal();
  }();
  BOOST_CHECK_MESSAGE(contains(a, "it answered with a certificate, not with the job's PSK"), a);
  BOOST_CHECK_EQUAL(inside.accepted, 0);
}

BOOST_AUTO_TEST_SUITE_END()

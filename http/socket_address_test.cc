#include "http/socket_address.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "http/http_server.h"

namespace edgetrain::http {
namespace {

TEST(SocketAddressTest, SplitsHostAndPortBracketsOffAnIpv6Host) {
  auto v4 = SplitHostPort("127.0.0.1:8080");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, "8080");
  auto v6 = SplitHostPort("[::1]:9");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_FALSE(SplitHostPort("localhost").ok());
  EXPECT_FALSE(SplitHostPort("localhost:").ok());
}

// One reading of a port for every address the agent takes (--coordinator,
// --http, the HTTP client), where three had each their own.
TEST(SocketAddressTest, APortIsDigitsFromZeroTo65535) {
  EXPECT_EQ(*ParsePort("0"), 0);
  EXPECT_EQ(*ParsePort("8080"), 8080);
  EXPECT_EQ(*ParsePort("65535"), 65535);
  for (const char* bad : {"", "65536", "99999999999", "-1", "+80", " 80", "80 ", "80a", "0x50"}) {
    EXPECT_FALSE(ParsePort(bad).ok()) << '"' << bad << '"';
  }
}

// Why a server could not listen, in the system's words: gRPC's failure to
// listen said nothing of it, a port in use read as an address not this
// machine's (found in review).
TEST(SocketAddressTest, WhyNoListeningSaysWhatTheSystemSays) {
  auto server = HttpServer::Start("127.0.0.1:0");
  ASSERT_TRUE(server.ok());
  EXPECT_EQ(WhyNoListening((*server)->address()), "Address already in use");
  EXPECT_EQ(WhyNoListening("192.0.2.1:0"), "Cannot assign requested address") << "not this machine's";
  EXPECT_EQ(WhyNoListening("127.0.0.1:0"), "");
  EXPECT_NE(WhyNoListening("127.0.0.1:99999").find("not a port number"), std::string::npos);
}

// `edgetrain run --http-port P` puts its agents on P, P+1, ...: a test that
// chooses P needs the whole run free, not its first port alone.
TEST(SocketAddressTest, ARunOfFreePortsCanAllBeServedOn) {
  const int first = FreeLoopbackPorts(3);
  ASSERT_GT(first, 0);
  std::vector<std::unique_ptr<HttpServer>> servers;
  for (int port = first; port < first + 3; ++port) {
    auto server = HttpServer::Start("127.0.0.1:" + std::to_string(port));
    ASSERT_TRUE(server.ok()) << port << ": " << server.status().ToString();
    servers.push_back(std::move(*server));
  }
}

}  // namespace
}  // namespace edgetrain::http

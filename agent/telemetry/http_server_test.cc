#include "agent/telemetry/http_server.h"

#include <gtest/gtest.h>

#include "agent/telemetry/http_client.h"

namespace edgetrain::agent {
namespace {

TEST(HttpServerTest, ServesHandlersOnAnOsChosenPort) {
  auto server = HttpServer::Start("127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string& address = (*server)->address();
  EXPECT_EQ(address.rfind("127.0.0.1:", 0), 0u);
  EXPECT_NE(address, "127.0.0.1:0");
  int calls = 0;
  (*server)->Handle("/progress", [&] {
    ++calls;
    return HttpResponse{200, "application/json", "{\"iteration\": " + std::to_string(calls) + "}"};
  });

  auto first = HttpGet(address, "/progress");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->body, "{\"iteration\": 1}");
  auto second = HttpGet(address, "/progress");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->body, "{\"iteration\": 2}");

  auto missing = HttpGet(address, "/progress/extra");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
}

TEST(HttpServerTest, TwoServersGetDifferentPortsAndAStoppedOneIsUnavailable) {
  std::string gone;
  {
    auto a = HttpServer::Start("127.0.0.1:0");
    auto b = HttpServer::Start("127.0.0.1:0");
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_NE((*a)->address(), (*b)->address());
    gone = (*a)->address();
  }
  auto reply = HttpGet(gone, "/healthz");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(HttpServer::Start("no-port").ok());
}

}  // namespace
}  // namespace edgetrain::agent

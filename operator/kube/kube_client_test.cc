#include "operator/kube/kube_client.h"

#include <gtest/gtest.h>

namespace edgetrain::kube {
namespace {

std::vector<WatchEvent> Decode(const std::vector<std::string>& pieces) {
  WatchDecoder decoder;
  std::vector<WatchEvent> events;
  for (const auto& piece : pieces) {
    EXPECT_TRUE(decoder.Feed(piece, [&](WatchEvent e) { events.push_back(std::move(e)); }).ok());
  }
  return events;
}

TEST(WatchDecoderTest, EventsSplitAcrossPiecesOrSeveralInOneComeOutWhole) {
  const std::string two = R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
                          "\n"
                          R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"42"}}})"
                          "\n";
  for (size_t cut = 1; cut < two.size(); ++cut) {
    auto events = Decode({two.substr(0, cut), two.substr(cut)});
    ASSERT_EQ(events.size(), 2u) << "cut at " << cut;
    EXPECT_EQ(events[0].type, WatchEventType::kAdded);
    EXPECT_EQ(events[0].object["metadata"]["name"], "a");
    EXPECT_EQ(events[1].type, WatchEventType::kBookmark);
    EXPECT_EQ(events[1].object["metadata"]["resourceVersion"], "42");
  }
  std::vector<std::string> bytes;
  for (char c : two) bytes.emplace_back(1, c);
  EXPECT_EQ(Decode(bytes).size(), 2u) << "a byte at a time";
}

TEST(WatchDecoderTest, AnErrorEventCarriesItsStatusAndGarbageIsRefused) {
  auto events = Decode({R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})" "\n"});
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEventType::kError);
  EXPECT_EQ(events[0].object["code"], 410);
  WatchDecoder decoder;
  EXPECT_FALSE(decoder.Feed("not json\n", [](WatchEvent) {}).ok());
  EXPECT_FALSE(decoder.Feed(R"({"type":"RENAMED","object":{}})" "\n", [](WatchEvent) {}).ok());
}

TEST(FromHttpTest, MapsTheApiServersStatusesAsClientGoDoes) {
  struct Case {
    int http;
    const char* reason;
    bool creating;
    StatusCode want;
  } cases[] = {
      {404, "NotFound", false, StatusCode::kNotFound},
      {409, "AlreadyExists", true, StatusCode::kAlreadyExists},
      {409, "Conflict", false, StatusCode::kAborted},
      {410, "Expired", false, StatusCode::kOutOfRange},
      {422, "Invalid", true, StatusCode::kInvalidArgument},
      {403, "Forbidden", false, StatusCode::kFailedPrecondition},
      {429, "TooManyRequests", false, StatusCode::kUnavailable},
      {503, "ServiceUnavailable", false, StatusCode::kUnavailable},
  };
  for (const auto& c : cases) {
    Status s = FromHttp(c.http, {{"kind", "Status"}, {"reason", c.reason}, {"message", "said so"}}, c.creating);
    EXPECT_EQ(s.code(), c.want) << c.http << " " << c.reason;
    EXPECT_EQ(s.message(), "said so");
  }
}

}  // namespace
}  // namespace edgetrain::kube

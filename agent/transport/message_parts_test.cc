#include "agent/transport/message_parts.h"

#include <gtest/gtest.h>

namespace edgetrain::agent {
namespace {

TEST(PartBytesTest, AboutTenMillisecondsOfTheLinkWithinBounds) {
  const int64_t model = 437'544;
  EXPECT_EQ(PartBytes(model, 60), 75'000);         // 60 Mbit/s: 75 kB in 10 ms
  EXPECT_EQ(PartBytes(model, 1), 16 * 1024);        // a slow link: the floor
  EXPECT_EQ(PartBytes(model, 0), 16 * 1024);        // not yet measured: the floor
  EXPECT_EQ(PartBytes(model, 10'000), model / 4);   // loopback: four parts, still timed
  EXPECT_EQ(PartBytes(20'000, 10'000), 16 * 1024);  // small messages: the floor
}

TEST(CutIntoPartsTest, RowsStayWholeAndInOrder) {
  google::protobuf::RepeatedPtrField<v1::Row> rows;
  for (uint32_t id = 0; id < 10; ++id) {
    v1::Row* row = rows.Add();
    row->set_id(id);
    row->set_values(std::string(1000, 'x'));
  }
  auto parts = CutIntoParts<v1::Update>(
      rows, 2500,
      [](int part) {
        v1::Update u;
        u.set_part(part);
        return u;
      },
      [](v1::Update& u) { return &u; });
  ASSERT_EQ(parts.size(), 5u);  // two rows of 1000 bytes fit in 2500, three do not
  uint32_t next = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    EXPECT_EQ(parts[p].part(), static_cast<int>(p));
    for (const v1::Row& row : parts[p].rows()) {
      EXPECT_EQ(row.id(), next++);
      EXPECT_EQ(row.values().size(), 1000u);
    }
  }
  EXPECT_EQ(next, 10u);
}

}  // namespace
}  // namespace edgetrain::agent

namespace edgetrain::agent {
namespace {

// A file's name need not be UTF-8, and a worker's report quotes them: as
// strings, a report that did was refused by the parser at the coordinator,
// and with it every report of that worker's (it went unseen: found in
// review). Its fields are bytes, which carry any.
TEST(WireTest, AReportQuotingANameThatIsNotUtf8GoesOverTheWire) {
  const std::string name = "/in/worker-1/caf\xe9.csv";
  v1::WorkerMessage sent;
  v1::StreamStats& stream = *sent.mutable_push()->mutable_stats()->mutable_stream();
  stream.set_last_refused(name + ":1: expected 65 values");
  stream.set_read_through(name);
  std::string wire;
  ASSERT_TRUE(sent.SerializeToString(&wire));
  v1::WorkerMessage received;
  ASSERT_TRUE(received.ParseFromString(wire));
  EXPECT_EQ(received.push().stats().stream().read_through(), name);
  v1::WorkerMessage failed;
  failed.mutable_failed()->set_reason("cannot read " + name);
  ASSERT_TRUE(failed.SerializeToString(&wire));
  ASSERT_TRUE(received.ParseFromString(wire));
  EXPECT_EQ(received.failed().reason(), "cannot read " + name);
}

}  // namespace
}  // namespace edgetrain::agent

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

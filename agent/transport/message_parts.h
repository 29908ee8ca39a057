#pragma once
// Large pushes and updates go out as several messages of about a given size,
// rows never split: a slow link then still delivers something several times a
// second, a dead one is told from a slow one, and each arrival times the link.

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "edgetrain/v1/training.pb.h"

namespace edgetrain::agent {

// The least part of a large message: smaller ones cost more in per-message
// work than they tell.
inline constexpr int64_t kLeastPartBytes = 16 * 1024;

// The size of each part of a message of `message_bytes` over a link measured at
// `link_mbps` (0: not yet measured): about 10 ms of the link, so a slow link
// still delivers something several times a second; at least 16 KB, as smaller
// messages cost more in per-message work than they tell; and at most a quarter
// of the message, so that even on a fast link its parts' arrivals can be timed.
inline int64_t PartBytes(int64_t message_bytes, double link_mbps) {
  constexpr double kPartSeconds = 0.010;
  const auto by_link = static_cast<int64_t>(link_mbps * 1e6 / 8 * kPartSeconds);
  return std::max(kLeastPartBytes, std::min(by_link, message_bytes / 4));
}

// Moves `rows` into messages made by `start(part)` (part 0 first), each holding
// about `max_bytes` of row values; `rows_of(message)` is where its rows go.
template <class Message, class Start, class RowsOf>
std::vector<Message> CutIntoParts(google::protobuf::RepeatedPtrField<v1::Row>& rows, int64_t max_bytes, Start start,
                                  RowsOf rows_of) {
  std::vector<Message> parts;
  Message current = start(0);
  int64_t size = 0;
  for (v1::Row& row : rows) {
    const int64_t bytes = static_cast<int64_t>(row.values().size());
    if (size > 0 && size + bytes > max_bytes) {
      parts.push_back(std::move(current));
      current = start(static_cast<int>(parts.size()));
      size = 0;
    }
    size += bytes;
    *rows_of(current)->add_rows() = std::move(row);
  }
  parts.push_back(std::move(current));
  return parts;
}

}  // namespace edgetrain::agent

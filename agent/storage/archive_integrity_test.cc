#include "agent/storage/archive_integrity.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "agent/storage/crc32.h"

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;

void Put(std::string& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// A zip archive of stored entries as LibTorch writes one: each entry's local
// header without its CRC-32 and sizes (flag bit 3), its bytes, then a
// descriptor with them; then the list of entries, which has them too, and
// the record that ends it.
std::string Archive(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out, list;
  for (const auto& [name, data] : entries) {
    const auto local = static_cast<uint32_t>(out.size());
    const auto size = static_cast<uint32_t>(data.size());
    Put(out, 0x04034b50, 4);
    Put(out, 20, 2);      // version needed
    Put(out, 0x808, 2);   // a descriptor follows; UTF-8 names
    Put(out, 0, 2);       // stored
    Put(out, 0, 4);       // time, date
    Put(out, 0, 12);      // CRC-32 and sizes: in the descriptor
    Put(out, static_cast<uint32_t>(name.size()), 2);
    Put(out, 0, 2);  // no extra field
    out += name + data;
    Put(out, 0x08074b50, 4);
    Put(out, Crc32(data), 4);
    Put(out, size, 4);
    Put(out, size, 4);
    Put(list, 0x02014b50, 4);
    Put(list, 20, 2);  // version made by
    Put(list, 20, 2);  // version needed
    Put(list, 0x808, 2);
    Put(list, 0, 2);  // stored
    Put(list, 0, 4);  // time, date
    Put(list, Crc32(data), 4);
    Put(list, size, 4);
    Put(list, size, 4);
    Put(list, static_cast<uint32_t>(name.size()), 2);
    Put(list, 0, 2);   // extra
    Put(list, 0, 2);   // comment
    Put(list, 0, 2);   // disk
    Put(list, 0, 2);   // internal attributes
    Put(list, 0, 4);   // external attributes
    Put(list, local, 4);
    list += name;
  }
  const auto list_at = static_cast<uint32_t>(out.size());
  out += list;
  Put(out, 0x06054b50, 4);
  Put(out, 0, 4);  // disks
  Put(out, static_cast<uint32_t>(entries.size()), 2);
  Put(out, static_cast<uint32_t>(entries.size()), 2);
  Put(out, static_cast<uint32_t>(list.size()), 4);
  Put(out, list_at, 4);
  Put(out, 0, 2);  // no comment
  return out;
}

std::string Write(const std::string& name, const std::string& bytes) {
  const fs::path p = fs::path(::testing::TempDir()) / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

TEST(ArchiveIntegrityTest, AnArchiveAsWrittenPassesAndOneAlteredOrTornIsDamaged) {
  const std::string good = Archive({{"archive/data.pkl", "pickled"}, {"archive/data/0", std::string(4096, '\7')}});
  EXPECT_TRUE(CheckArchiveIntegrity(Write("good.pt", good)).ok());

  std::string altered = good;
  altered[altered.find(std::string(16, '\7')) + 100] ^= 0x5A;  // a tensor's byte flipped
  const Status flipped = CheckArchiveIntegrity(Write("altered.pt", altered));
  EXPECT_EQ(flipped.code(), StatusCode::kDataLoss);
  EXPECT_NE(flipped.message().find("altered.pt is damaged (CRC-32 mismatch in archive/data/0: torn or altered)"),
            std::string::npos)
      << flipped.message();

  // Torn: the list of entries, at the end, went with it.
  const Status torn = CheckArchiveIntegrity(Write("torn.pt", good.substr(0, good.size() / 2)));
  EXPECT_EQ(torn.code(), StatusCode::kDataLoss);
  EXPECT_NE(torn.message().find("torn.pt is damaged (the end of its list of entries is missing: torn)"),
            std::string::npos)
      << torn.message();

  const Status listless = CheckArchiveIntegrity(Write("listless.pt", good.substr(0, good.size() - 10)));
  EXPECT_EQ(listless.code(), StatusCode::kDataLoss) << listless.message();

  EXPECT_EQ(CheckArchiveIntegrity(Write("text.pt", "not an archive")).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(CheckArchiveIntegrity((fs::path(::testing::TempDir()) / "missing.pt").string()).ok());
}

}  // namespace
}  // namespace edgetrain::agent

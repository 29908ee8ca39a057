#pragma once
// Tests only: data files written byte by byte into a fresh folder, so each
// reader is tested on exactly the bytes its format's writers produce.

#include <zlib.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace edgetrain::agent::testing_files {

namespace fs = std::filesystem;

// An empty folder of the running test's own, under gtest's temp dir.
inline fs::path FreshDir() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(::testing::TempDir()) / "edgetrain-data" / (std::string(test->test_suite_name()) + "." + test->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

inline std::string Write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

inline std::string WriteGz(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  return path.string();
}

// The bytes of `values` as `T`, little-endian.
template <typename T, typename V>
std::string Bytes(const std::vector<V>& values) {
  static_assert(std::endian::native == std::endian::little);
  std::string s;
  for (V v : values) {
    T t = static_cast<T>(v);
    s.append(reinterpret_cast<const char*>(&t), sizeof t);
  }
  return s;
}

// A .npy file as numpy.save writes it: the header dict padded with spaces to a
// multiple of 64 bytes and ended by '\n'.
inline std::string Npy(const std::string& descr, const std::string& shape, const std::string& data,
                       bool fortran_order = false, int major = 1) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran_order ? "True" : "False") +
                     ", 'shape': " + shape + ", }";
  const size_t prefix = major == 1 ? 10 : 12;
  size_t total = prefix + dict.size() + 1;
  total = (total + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string s = "\x93NUMPY";
  s += static_cast<char>(major);
  s += '\0';
  const size_t len = dict.size();
  s += static_cast<char>(len & 0xff);
  s += static_cast<char>((len >> 8) & 0xff);
  if (major >= 2) {
    s += static_cast<char>((len >> 16) & 0xff);
    s += static_cast<char>((len >> 24) & 0xff);
  }
  return s + dict + data;
}

// An IDX file: type byte, big-endian sizes, then `data` (already big-endian).
inline std::string Idx(uint8_t type, const std::vector<uint32_t>& dims, const std::string& data) {
  std::string s = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift : {24, 16, 8, 0}) s.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  return s + data;
}

inline std::string U8(const std::vector<int>& values) { return Bytes<uint8_t>(values); }

}  // namespace edgetrain::agent::testing_files

#include "agent/data/image_folders.h"

#include <sys/stat.h>

#include <stb_image_write.h>

#include <gtest/gtest.h>

#include "agent/data/test_files.h"

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;
using testing_files::FreshDir;
using testing_files::Write;

// `pixels` row by row, each pixel's `channels` values together.
void Png(const fs::path& path, int width, int height, int channels, const std::vector<uint8_t>& pixels) {
  fs::create_directories(path.parent_path());
  ASSERT_EQ(pixels.size(), static_cast<size_t>(width * height * channels));
  ASSERT_TRUE(stbi_write_png(path.c_str(), width, height, channels, pixels.data(), width * channels));
}

DatasetInfo Shape(int channels, int height, int width, int classes) { return {channels, height, width, classes, 0, 0}; }

TEST(ImageFoldersTest, ClassesAreTheFoldersInNameOrder) {
  const fs::path root = FreshDir();
  Png(root / "b-dog" / "1.png", 3, 2, 1, {10, 11, 12, 13, 14, 15});
  Png(root / "a-cat" / "2.png", 3, 2, 1, {20, 21, 22, 23, 24, 25});
  Png(root / "a-cat" / "1.png", 3, 2, 1, {0, 51, 102, 153, 204, 255});
  // Hidden entries and files beside the class folders are no one's samples.
  Write(root / "a-cat" / ".DS_Store", "junk");
  Write(root / ".cache" / "x.png", "junk");
  Write(root / "README.txt", "my camera frames");

  auto read = ReadImageFolders(root.string(), Shape(1, 2, 3, 2));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->class_names, (std::vector<std::string>{"a-cat", "b-dog"}));
  const Dataset& d = *read;
  ASSERT_EQ(d.size(), 3);
  EXPECT_EQ(d.labels, (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(d.pixels.size(), 18u) << "bytes stay bytes";
  EXPECT_EQ(d.pixels[0], 0) << "a-cat/1.png comes before a-cat/2.png";
  EXPECT_EQ(d.pixels[6], 20);
  EXPECT_EQ(d.pixels[12], 10);
  std::vector<float> x(6);
  d.CopySamples(0, 1, x.data());
  EXPECT_FLOAT_EQ(x[1], 0.2f);
  EXPECT_FLOAT_EQ(x[5], 1.0f);
}

TEST(ImageFoldersTest, ColourIsChannelsFirstAndConvertedToTheDeclaredChannels) {
  const fs::path root = FreshDir();
  // 2x1 RGB: a red pixel and a blue one.
  Png(root / "c" / "rgb.png", 2, 1, 3, {255, 0, 0, 0, 0, 255});
  Png(root / "c" / "grey.png", 2, 1, 1, {7, 9});

  auto rgb = ReadImageFolders(root.string(), Shape(3, 1, 2, 1));
  ASSERT_TRUE(rgb.ok()) << rgb.status().ToString();
  // grey.png first (name order), each grey level in all three planes; then rgb.png's R, G and B planes.
  EXPECT_EQ(rgb->pixels, (std::vector<uint8_t>{7, 9, 7, 9, 7, 9, 255, 0, 0, 0, 0, 255}));

  auto grey = ReadImageFolders(root.string(), Shape(1, 1, 2, 1));
  ASSERT_TRUE(grey.ok()) << grey.status().ToString();
  ASSERT_EQ(grey->pixels.size(), 4u);
  EXPECT_EQ(grey->pixels[0], 7);
  EXPECT_NEAR(grey->pixels[2], 77, 2) << "red's luma";
  EXPECT_NEAR(grey->pixels[3], 29, 2) << "blue's luma";
}

TEST(ImageFoldersTest, DecodesJpeg) {
  const fs::path root = FreshDir();
  std::vector<uint8_t> flat(8 * 8 * 3);
  for (size_t i = 0; i < flat.size(); i += 3) flat[i] = 200, flat[i + 1] = 100, flat[i + 2] = 50;
  fs::create_directories(root / "only");
  // Named .png: images are told apart by content, not by name.
  ASSERT_TRUE(stbi_write_jpg((root / "only" / "frame.png").c_str(), 8, 8, 3, flat.data(), 100));
  auto d = ReadImageFolders(root.string(), Shape(3, 8, 8, 1));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->pixels.size(), 192u);
  EXPECT_NEAR(d->pixels[0], 200, 3);
  EXPECT_NEAR(d->pixels[64], 100, 3);
  EXPECT_NEAR(d->pixels[191], 50, 3);
}

TEST(ImageFoldersTest, RefusesWhatItCannotUse) {
  const fs::path root = FreshDir();
  auto tiny = [](const fs::path& p) { Png(p, 2, 2, 1, {1, 2, 3, 4}); };
  tiny(root / "good" / "a" / "1.png");
  tiny(root / "good" / "b" / "1.png");
  tiny(root / "other-names" / "a" / "1.png");
  tiny(root / "other-names" / "c" / "1.png");
  tiny(root / "empty" / "a" / "1.png");
  fs::create_directories(root / "empty" / "b");
  tiny(root / "big" / "a" / "1.png");
  Png(root / "big" / "b" / "1.png", 3, 2, 1, {1, 2, 3, 4, 5, 6});
  tiny(root / "text" / "a" / "1.png");
  Write(root / "text" / "b" / "notes.txt", "not an image");
  tiny(root / "nested" / "a" / "1.png");
  tiny(root / "nested" / "b" / "more" / "1.png");
  Write(root / "a-file", "x");
  // A BMP stb would decode, which the reader takes for no image of its formats.
  tiny(root / "bmp" / "a" / "1.png");
  fs::create_directories(root / "bmp" / "b");
  const uint8_t grey[] = {1, 2, 3, 4};
  ASSERT_TRUE(stbi_write_bmp((root / "bmp" / "b" / "1.bmp").c_str(), 2, 2, 1, grey));
  // A PNG's header of 15000x15000 with no pixels: judged by its header, before
  // it is decoded (one of that size whole took 600 MB to decode before it was
  // refused: found in review).
  tiny(root / "huge" / "a" / "1.png");
  {
    std::string header("\x89PNG\r\n\x1a\n", 8);
    header += std::string("\0\0\0\x0d", 4) + "IHDR";
    for (int side = 0; side < 2; ++side) header += std::string("\0\0\x3a\x98", 4);  // 15000, big-endian
    header += std::string("\x08\0\0\0\0", 5) + std::string(4, '\0');              // 8-bit grey; its CRC
    Write(root / "huge" / "b" / "1.png", header);
  }
  // A PNG's signature on 17 MiB (sparse): more than any image of 2x2 holds,
  // refused by its size before it is read whole (a video of a gigabyte in a
  // class folder was read into memory to be refused: found in review).
  tiny(root / "vast" / "a" / "1.png");
  Write(root / "vast" / "b" / "1.png", std::string("\x89PNG\r\n\x1a\n", 8));
  fs::resize_file(root / "vast" / "b" / "1.png", 17 << 20);
  // A pipe has no end to read to.
  tiny(root / "pipe" / "a" / "1.png");
  fs::create_directories(root / "pipe" / "b");
  ASSERT_EQ(::mkfifo((root / "pipe" / "b" / "1.png").c_str(), 0600), 0);
  // Named a PNG, cut short after its signature: a PNG that cannot be decoded.
  tiny(root / "cut" / "a" / "1.png");
  Write(root / "cut" / "b" / "1.png", std::string("\x89PNG\r\n\x1a\n", 8) + "garbage");

  const std::string r = root.string();
  const std::vector<std::string> train_classes = {"a", "b"};
  struct Case {
    std::string folder;
    DatasetInfo info;
    std::vector<std::string> same_classes_as;
    std::string error;
  } cases[] = {
      {r + "/absent", Shape(1, 2, 2, 2), {}, r + "/absent: no such folder"},
      {r + "/a-file", Shape(1, 2, 2, 2), {}, r + "/a-file: not a folder (images are read from class folders)"},
      {r + "/good", Shape(1, 2, 2, 3), {}, r + "/good: expected 3 class folders (classes), found 2: a, b"},
      {r + "/good", Shape(5, 2, 2, 2), {},
       r + "/good: inputShape has 5 channels; images have 1 (grey), 2 (grey and alpha), 3 (RGB) or 4 (RGBA)"},
      {r + "/other-names", Shape(1, 2, 2, 2), train_classes,
       r + "/other-names: class 1 is folder 'c', the train set's is 'b'"},
      {r + "/empty", Shape(1, 2, 2, 2), {}, r + "/empty/b: empty class folder"},
      {r + "/big", Shape(1, 2, 2, 2), {}, r + "/big/b/1.png: image is 2x3 (height x width), inputShape says 2x2"},
      {r + "/huge", Shape(1, 2, 2, 2), {},
       r + "/huge/b/1.png: image is 15000x15000 (height x width), inputShape says 2x2"},
      {r + "/text", Shape(1, 2, 2, 2), {}, r + "/text/b/notes.txt: not a PNG or JPEG image (its first bytes are neither's"},
      {r + "/bmp", Shape(1, 2, 2, 2), {}, r + "/bmp/b/1.bmp: not a PNG or JPEG image (its first bytes are neither's; "
                                              "other formats, BMP or GIF among them, are not read"},
      {r + "/cut", Shape(1, 2, 2, 2), {}, r + "/cut/b/1.png: not a PNG or JPEG image that can be decoded ("},
      {r + "/nested", Shape(1, 2, 2, 2), {}, r + "/nested/b/more: a folder inside a class folder"},
      {r + "/vast", Shape(1, 2, 2, 2), {},
       r + "/vast/b/1.png: a file of 17 MiB, more than any image of this folder's size holds (2x2, inputShape)"},
      {r + "/pipe", Shape(1, 2, 2, 2), {}, r + "/pipe/b/1.png: not a regular file (a pipe or a device)"},
  };
  for (const auto& c : cases) {
    auto d = ReadImageFolders(c.folder, c.info, c.same_classes_as);
    ASSERT_FALSE(d.ok()) << c.error;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(d.status().message().starts_with(c.error)) << d.status().message();
  }
  EXPECT_TRUE(ReadImageFolders(r + "/good", Shape(1, 2, 2, 2), train_classes).ok());
}

}  // namespace
}  // namespace edgetrain::agent

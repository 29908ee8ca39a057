#include "agent/data/image_folders.h"

#include <stb_image.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;

bool Hidden(const fs::path& p) { return p.filename().string().starts_with("."); }

// The entries of `dir` not hidden, sorted by name so that classes and samples
// come in the same order on every machine.
StatusOr<std::vector<fs::path>> Entries(const fs::path& dir) {
  std::vector<fs::path> entries;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!Hidden(it->path())) entries.push_back(it->path());
  }
  if (ec) return InvalidArgumentError(dir.string() + ": " + ec.message());
  std::sort(entries.begin(), entries.end());
  return entries;
}

bool IsDirectory(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);  // follows symbolic links, as a user would expect
}

// A PNG or JPEG by its name, as a person names one.
bool LooksLikeAnImage(const fs::path& file) {
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

// A PNG or JPEG by its first bytes: stb decodes BMP, GIF, TGA and more,
// which were read unsaid where the docs and the errors name PNG and JPEG
// only (a user's trial).
bool IsPngOrJpeg(const std::string& bytes) {
  static constexpr std::string_view kPng("\x89PNG\r\n\x1a\n", 8), kJpeg("\xFF\xD8\xFF", 3);
  return bytes.starts_with(kPng) || bytes.starts_with(kJpeg);
}

// The most bytes a PNG or JPEG of the folder's dimensions can hold: its
// pixels at four bytes each, eight times over (a PNG of noise stored
// uncompressed, a JPEG at quality 100), and 16 MiB of metadata (EXIF, its
// thumbnail, a colour profile). Also under stb's int lengths.
uint64_t MostBytesOfAnImage(const DatasetInfo& info) {
  const uint64_t pixels = static_cast<uint64_t>(std::max<int64_t>(1, info.height)) *
                          static_cast<uint64_t>(std::max<int64_t>(1, info.width));
  return std::min<uint64_t>(pixels * 4 * 8 + (uint64_t{1} << 24), std::numeric_limits<int>::max());
}

Status AppendImage(const fs::path& file, int label, Dataset& d) {
  const std::string path = file.string();
  if (IsDirectory(file)) return InvalidArgumentError(path + ": a folder inside a class folder");
  std::error_code ec;
  // A pipe in a class folder would be read forever.
  if (!fs::is_regular_file(file, ec)) return InvalidArgumentError(path + ": not a regular file (a pipe or a device)");
  const uint64_t file_bytes = fs::file_size(file, ec);
  if (ec) return InvalidArgumentError(path + ": " + ec.message());
  std::ifstream in(file, std::ios::binary);
  if (!in.is_open()) return InvalidArgumentError(path + ": cannot be read");
  // Its kind by its first bytes and its size before the whole is read: a
  // video of a gigabyte left in a class folder was read whole, 2 GB of
  // memory, to be refused for its first bytes (found in review).
  const size_t head = static_cast<size_t>(std::min<uint64_t>(file_bytes, 8));
  std::string bytes(head, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(head));
  if (in.bad()) return InvalidArgumentError(path + ": cannot be read");
  if (!bytes.empty() && !IsPngOrJpeg(bytes)) {
    return InvalidArgumentError(path + ": not a PNG or JPEG image (its first bytes are neither's; other formats, "
                                       "BMP or GIF among them, are not read: convert it, or move it out of the folder)");
  }
  if (file_bytes > MostBytesOfAnImage(d.info)) {
    return InvalidArgumentError(path + ": a file of " + std::to_string((file_bytes + (1 << 20) - 1) >> 20) +
                                " MiB, more than any image of this folder's size holds (" +
                                std::to_string(d.info.height) + "x" + std::to_string(d.info.width) +
                                ", inputShape): a PNG or JPEG of other contents, or of other dimensions");
  }
  bytes.resize(static_cast<size_t>(file_bytes));
  in.read(bytes.data() + head, static_cast<std::streamsize>(file_bytes - head));
  if (in.bad()) return InvalidArgumentError(path + ": cannot be read");
  bytes.resize(head + static_cast<size_t>(in.gcount()));  // cut since it was looked at: what is there
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int size = static_cast<int>(bytes.size());
  const int channels = d.info.channels;
  int width = 0, height = 0, in_file = 0;
  // Height first, as inputShape has it; images are not resized, since a
  // silently squashed frame trains a different model than the one meant.
  const auto misshapen = [&] {
    return InvalidArgumentError(path + ": image is " + std::to_string(height) + "x" + std::to_string(width) +
                                " (height x width), inputShape says " + std::to_string(d.info.height) + "x" +
                                std::to_string(d.info.width));
  };
  // Its size judged from its header, before it is decoded: a 219 KB PNG of
  // 15000x15000 took 600 MB to decode before it was refused for its size
  // (found in review), which on a small device ends the agent instead.
  if (stbi_info_from_memory(data, size, &width, &height, &in_file) &&
      (width != d.info.width || height != d.info.height)) {
    return misshapen();
  }
  stbi_uc* image = stbi_load_from_memory(data, size, &width, &height, &in_file, channels);
  if (!image) {
    // stb's reason is terse and, for a cut file, often empty.
    const char* reason = stbi_failure_reason();
    return InvalidArgumentError(path + ": not a PNG or JPEG image that can be decoded (" +
                                (reason && *reason ? reason : "corrupt or truncated") + ")");
  }
  if (width != d.info.width || height != d.info.height) {
    stbi_image_free(image);
    return misshapen();
  }
  // stb gives pixels with their channels interleaved; a sample is channels first.
  const size_t plane = static_cast<size_t>(width) * static_cast<size_t>(height);
  const size_t base = d.pixels.size();
  d.pixels.resize(base + plane * static_cast<size_t>(channels));
  for (size_t p = 0; p < plane; ++p) {
    for (int c = 0; c < channels; ++c) d.pixels[base + c * plane + p] = image[p * channels + c];
  }
  stbi_image_free(image);
  d.labels.push_back(label);
  return Status::Ok();
}

}  // namespace

StatusOr<Dataset> ReadImageFolders(const std::string& root, const DatasetInfo& info,
                                        const std::vector<std::string>& same_classes_as) {
  std::error_code ec;
  const fs::file_status status = fs::status(root, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    return InvalidArgumentError(root + ": " + ec.message());  // not "no such folder": see ReadDataFile
  }
  if (!fs::exists(status)) return InvalidArgumentError(root + ": no such folder");
  if (!fs::is_directory(status)) return InvalidArgumentError(root + ": not a folder (images are read from class folders)");
  if (info.channels < 1 || info.channels > 4) {
    return InvalidArgumentError(root + ": inputShape has " + std::to_string(info.channels) +
                                " channels; images have 1 (grey), 2 (grey and alpha), 3 (RGB) or 4 (RGBA)");
  }
  EDGETRAIN_ASSIGN_OR_RETURN(std::vector<fs::path> entries, Entries(root));
  Dataset out;
  std::vector<fs::path> folders;
  for (const auto& e : entries) {
    if (IsDirectory(e)) {
      folders.push_back(e);
      out.class_names.push_back(e.filename().string());
    } else if (LooksLikeAnImage(e)) {
      // No folder says its class: it was left out, unsaid (a new user's
      // trial). Other files beside the class folders (a README) are no one's.
      return InvalidArgumentError(e.string() + ": an image beside the class folders, which no folder gives a class: "
                                  "move it into its class's folder");
    }
  }
  if (static_cast<int>(folders.size()) != info.classes) {
    // Named, so that a folder made by mistake (an empty one, a backup) is
    // seen among them (a user's trial had to list the folder to find it).
    std::string names;
    for (size_t i = 0; i < out.class_names.size() && i < 20; ++i) names += (i ? ", " : "") + out.class_names[i];
    if (out.class_names.size() > 20) names += ", ...";
    return InvalidArgumentError(root + ": expected " + std::to_string(info.classes) + " class folders (classes), found " +
                                std::to_string(folders.size()) + (names.empty() ? "" : ": " + names));
  }
  if (!same_classes_as.empty() && out.class_names != same_classes_as) {
    size_t i = 0;
    while (i < out.class_names.size() && i < same_classes_as.size() && out.class_names[i] == same_classes_as[i]) ++i;
    auto at = [&](const std::vector<std::string>& names) { return i < names.size() ? "'" + names[i] + "'" : "none"; };
    return InvalidArgumentError(root + ": class " + std::to_string(i) + " is folder " + at(out.class_names) +
                                ", the train set's is " + at(same_classes_as));
  }
  out.info = info;
  out.pixel_scale = 1.0f / 255;
  for (size_t label = 0; label < folders.size(); ++label) {
    EDGETRAIN_ASSIGN_OR_RETURN(std::vector<fs::path> files, Entries(folders[label]));
    if (files.empty()) return InvalidArgumentError(folders[label].string() + ": empty class folder");
    for (const auto& file : files) EDGETRAIN_RETURN_IF_ERROR(AppendImage(file, static_cast<int>(label), out));
  }
  return out;
}

}  // namespace edgetrain::agent

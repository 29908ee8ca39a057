#include "agent/data/npy_format.h"

#include <cctype>
#include <optional>
#include <string>

namespace edgetrain::agent {
namespace {

// The dict literal numpy.lib.format writes, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 28, 28), }
// Only what that writer produces is read; anything else is a bad header.
class HeaderReader {
 public:
  explicit HeaderReader(std::string_view text) : s_(text) {}

  bool Consume(char c) {
    SkipSpace();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  std::optional<std::string> String() {
    SkipSpace();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) return std::nullopt;
    const char quote = s_[i_++];
    const size_t end = s_.find(quote, i_);
    if (end == std::string_view::npos) return std::nullopt;
    std::string out(s_.substr(i_, end - i_));
    i_ = end + 1;
    return out;
  }
  std::optional<bool> Bool() {
    SkipSpace();
    for (auto [word, value] : {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}}) {
      if (s_.substr(i_, word.size()) == word) {
        i_ += word.size();
        return value;
      }
    }
    return std::nullopt;
  }
  // "(3, 4)", "(3,)" or "()".
  std::optional<std::vector<int64_t>> Shape() {
    if (!Consume('(')) return std::nullopt;
    std::vector<int64_t> dims;
    if (Consume(')')) return dims;
    for (;;) {
      std::optional<int64_t> d = Integer();
      if (!d) return std::nullopt;
      dims.push_back(*d);
      if (Consume(')')) return dims;
      if (!Consume(',')) return std::nullopt;
      if (Consume(')')) return dims;
    }
  }

 private:
  std::optional<int64_t> Integer() {
    SkipSpace();
    const size_t begin = i_;
    int64_t d = 0;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      if (d > (int64_t{1} << 55)) return std::nullopt;
      d = d * 10 + (s_[i_++] - '0');
    }
    if (i_ == begin) return std::nullopt;
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 wrote longs as 3L
    return d;
  }
  void SkipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  std::string_view s_;
  size_t i_ = 0;
};

// '<f4' → float32 little-endian; nullopt for what no data set holds (complex,
// bool, strings, objects, structured types).
std::optional<NumericArray> TypeOf(const std::string& descr) {
  if (descr.size() < 3) return std::nullopt;
  NumericArray a;
  const char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') return std::nullopt;
  a.big_endian = order == '>';
  const std::string kind_size = descr.substr(1);
  static constexpr std::pair<std::string_view, ElementType> kTypes[] = {
      {"u1", ElementType::kUint8},  {"i1", ElementType::kInt8},     {"u2", ElementType::kUint16},
      {"i2", ElementType::kInt16},  {"u4", ElementType::kUint32},   {"i4", ElementType::kInt32},
      {"u8", ElementType::kUint64}, {"i8", ElementType::kInt64},    {"f4", ElementType::kFloat32},
      {"f8", ElementType::kFloat64},
  };
  for (auto [name, type] : kTypes) {
    if (kind_size == name) {
      a.type = type;
      return a;
    }
  }
  return std::nullopt;
}

}  // namespace

StatusOr<NumericArray> ParseNpy(std::string_view bytes, std::string_view source) {
  auto bad = [&](const std::string& why) { return InvalidArgumentError(std::string(source) + ": " + why); };
  auto u8 = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
  // An empty file, and numpy.savez's archive of arrays, said as what they
  // are: both read "bad magic string" (a new user's trial).
  if (bytes.empty()) return bad("an empty file, not a NumPy .npy file");
  if (bytes.substr(0, 4) == std::string_view("PK\x03\x04", 4)) {
    return bad("a zip archive (numpy.savez's .npz?), not a NumPy .npy file: save each array with numpy.save");
  }
  if (bytes.size() < 10 || bytes.substr(0, 6) != "\x93NUMPY") return bad("not a NumPy .npy file (bad magic string)");
  const int major = u8(6);
  if (major < 1 || major > 3) {
    return bad("npy version " + std::to_string(major) + "." + std::to_string(u8(7)) +
               " is not supported (1.0, 2.0 or 3.0)");
  }
  size_t start = 10;
  size_t length = u8(8) | (size_t{u8(9)} << 8);
  if (major >= 2) {
    if (bytes.size() < 12) return bad("truncated npy header");
    start = 12;
    length = u8(8) | (size_t{u8(9)} << 8) | (size_t{u8(10)} << 16) | (size_t{u8(11)} << 24);
  }
  if (bytes.size() - start < length) return bad("truncated npy header");
  HeaderReader header(bytes.substr(start, length));
  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<int64_t>> shape;
  if (!header.Consume('{')) return bad("bad npy header (not a dict)");
  while (!header.Consume('}')) {
    std::optional<std::string> key = header.String();
    if (!key || !header.Consume(':')) return bad("bad npy header");
    if (*key == "descr") {
      descr = header.String();
      if (!descr) return bad("structured dtypes are not supported");
    } else if (*key == "fortran_order") {
      fortran_order = header.Bool();
      if (!fortran_order) return bad("bad npy header (fortran_order)");
    } else if (*key == "shape") {
      shape = header.Shape();
      if (!shape) return bad("bad npy header (shape)");
    } else {
      return bad("bad npy header (unknown key '" + *key + "')");
    }
    if (header.Consume('}')) break;
    if (!header.Consume(',')) return bad("bad npy header");
  }
  if (!descr || !fortran_order || !shape) return bad("bad npy header (needs descr, fortran_order and shape)");
  std::optional<NumericArray> array = TypeOf(*descr);
  // Which of the two the file is for, the reader does not know: it says both.
  if (!array) {
    return bad("dtype '" + *descr + "' is not supported: features are float32, float64 or uint8, labels integers "
               "(int8-int64, uint8-uint64) or whole numbers as floats");
  }
  array->dims = *shape;
  int longer_than_one = 0;
  for (int64_t d : array->dims) longer_than_one += d > 1;
  // With at most one dimension longer than 1, both orders lay the elements out alike.
  if (*fortran_order && longer_than_one > 1) {
    return bad("array is in Fortran order; save it in C order (np.ascontiguousarray)");
  }
  EDGETRAIN_RETURN_IF_ERROR(TakePayload(bytes, start + length, *array, source));
  return *array;
}

StatusOr<Dataset> ReadNpyFiles(const std::string& features_path, const std::string& labels_path,
                               const DatasetInfo& info) {
  return ReadArrayFiles(features_path, labels_path, info, ParseNpy);
}

}  // namespace edgetrain::agent

#include "agent/data/numeric_array.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "agent/data/gzip_file.h"

namespace edgetrain::agent {
namespace {

bool IsFloat(ElementType t) { return t == ElementType::kFloat32 || t == ElementType::kFloat64; }
bool IsSigned(ElementType t) {
  return t == ElementType::kInt8 || t == ElementType::kInt16 || t == ElementType::kInt32 || t == ElementType::kInt64;
}

// Element `i` of `a` as the unsigned integer of its width, in this machine's byte order.
uint64_t Bits(const NumericArray& a, int64_t i) {
  const int size = SizeOf(a.type);
  const char* p = a.data.data() + i * size;
  const bool swap = a.big_endian != (std::endian::native == std::endian::big);
  switch (size) {
    case 1: return static_cast<uint8_t>(*p);
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return swap ? __builtin_bswap16(v) : v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return swap ? __builtin_bswap32(v) : v;
    }
    default: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return swap ? __builtin_bswap64(v) : v;
    }
  }
}

double FloatAt(const NumericArray& a, int64_t i) {
  const uint64_t bits = Bits(a, i);
  if (a.type == ElementType::kFloat32) return std::bit_cast<float>(static_cast<uint32_t>(bits));
  return std::bit_cast<double>(bits);
}

// A signed element sign-extended from its width.
int64_t SignedAt(const NumericArray& a, int64_t i) {
  const uint64_t bits = Bits(a, i);
  switch (SizeOf(a.type)) {
    case 1: return static_cast<int8_t>(bits);
    case 2: return static_cast<int16_t>(bits);
    case 4: return static_cast<int32_t>(bits);
    default: return static_cast<int64_t>(bits);
  }
}

Status SetFeatures(const NumericArray& a, const std::string& path, Dataset& d) {
  if (a.type == ElementType::kUint8) {
    d.pixels.assign(a.data.begin(), a.data.end());
    d.pixel_scale = 1.0f / 255;
    return Status::Ok();
  }
  if (!IsFloat(a.type)) {
    return InvalidArgumentError(path + ": features of type " + std::string(NameOf(a.type)) +
                                " are not supported: features are float32, float64 or uint8");
  }
  const int64_t n = ElementCount(a.dims);
  d.features.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double v = FloatAt(a, i);
    // A NaN or an infinity would only show up later as a loss that is NaN.
    if (!std::isfinite(v)) {
      return InvalidArgumentError(path + ": sample " + std::to_string(i / d.SampleSize()) + " has a value that is not finite (" +
                                  (std::isnan(v) ? "nan" : "inf") + ")");
    }
    // Features are float32: a float64 beyond its range would be an infinity.
    const auto f = static_cast<float>(v);
    if (!std::isfinite(f)) {
      std::ostringstream value;
      value << v;
      return InvalidArgumentError(path + ": sample " + std::to_string(i / d.SampleSize()) +
                                  " has a value beyond float32's range (" + value.str() + "), which features are kept in");
    }
    d.features[static_cast<size_t>(i)] = f;
  }
  return Status::Ok();
}

Status SetLabels(const NumericArray& a, const std::string& path, Dataset& d) {
  const int64_t n = a.dims.empty() ? 0 : a.dims[0];
  const int64_t classes = d.info.classes;
  d.labels.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    std::string text;
    if (IsFloat(a.type)) {
      // Float labels of whole numbers are taken, as a CSV's 2.0 is: numpy
      // gives floats from np.loadtxt and from arithmetic (a user's trial).
      const double v = FloatAt(a, i);
      if (std::isfinite(v) && v == std::floor(v) && v >= 0 && v < static_cast<double>(classes)) {
        d.labels[static_cast<size_t>(i)] = static_cast<int64_t>(v);
        continue;
      }
      std::ostringstream value;
      value << v;
      if (!std::isfinite(v) || v != std::floor(v)) {
        return InvalidArgumentError(path + ": label " + value.str() + " at index " + std::to_string(i) +
                                    " is not a whole number: a label is its sample's class, 0 to " +
                                    std::to_string(classes - 1));
      }
      text = value.str();
    } else if (IsSigned(a.type)) {
      const int64_t v = SignedAt(a, i);
      if (v >= 0 && v < classes) d.labels[static_cast<size_t>(i)] = v;
      else text = std::to_string(v);
    } else {
      const uint64_t v = Bits(a, i);
      if (v < static_cast<uint64_t>(classes)) d.labels[static_cast<size_t>(i)] = static_cast<int64_t>(v);
      else text = std::to_string(v);
    }
    if (!text.empty()) {
      return InvalidArgumentError(path + ": label " + text + " at index " + std::to_string(i) +
                                  OutOfTheClasses(classes));
    }
  }
  return Status::Ok();
}

}  // namespace

std::string_view NameOf(ElementType type) {
  switch (type) {
    case ElementType::kUint8: return "uint8";
    case ElementType::kInt8: return "int8";
    case ElementType::kUint16: return "uint16";
    case ElementType::kInt16: return "int16";
    case ElementType::kUint32: return "uint32";
    case ElementType::kInt32: return "int32";
    case ElementType::kUint64: return "uint64";
    case ElementType::kInt64: return "int64";
    case ElementType::kFloat32: return "float32";
    case ElementType::kFloat64: return "float64";
  }
  return "?";
}

int SizeOf(ElementType type) {
  switch (type) {
    case ElementType::kUint8:
    case ElementType::kInt8: return 1;
    case ElementType::kUint16:
    case ElementType::kInt16: return 2;
    case ElementType::kUint32:
    case ElementType::kInt32:
    case ElementType::kFloat32: return 4;
    case ElementType::kUint64:
    case ElementType::kInt64:
    case ElementType::kFloat64: return 8;
  }
  return 1;
}

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

int64_t ElementCount(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && count > std::numeric_limits<int64_t>::max() / d)) return -1;
    count *= d;
  }
  return count;
}

Status TakePayload(std::string_view bytes, size_t header, NumericArray& array, std::string_view source) {
  const int64_t count = ElementCount(array.dims);
  const uint64_t size = static_cast<uint64_t>(SizeOf(array.type));
  const uint64_t promised = static_cast<uint64_t>(count) * size;
  if (count < 0 || promised / size != static_cast<uint64_t>(count) || bytes.size() - header != promised) {
    // The shape too: a dimension of -5 written unsigned read only as
    // "429496729100 bytes" (a user's trial).
    return InvalidArgumentError(std::string(source) + ": header promises " +
                                (count < 0 ? std::string("more") : std::to_string(promised)) + " bytes of data (shape " +
                                ShapeText(array.dims) + " of " + std::to_string(size) + "-byte values), file has " +
                                std::to_string(bytes.size() - header));
  }
  array.data = bytes.substr(header);
  return Status::Ok();
}

StatusOr<Dataset> ReadArrayFiles(const std::string& features_path, const std::string& labels_path,
                                 const DatasetInfo& info, ArrayParser parse) {
  EDGETRAIN_ASSIGN_OR_RETURN(std::string feature_bytes, ReadDataFile(features_path));
  EDGETRAIN_ASSIGN_OR_RETURN(std::string label_bytes, ReadDataFile(labels_path));
  EDGETRAIN_ASSIGN_OR_RETURN(NumericArray features, parse(feature_bytes, features_path));
  EDGETRAIN_ASSIGN_OR_RETURN(NumericArray labels, parse(label_bytes, labels_path));
  return DatasetFromArrays(features, features_path, labels, labels_path, info);
}

StatusOr<Dataset> DatasetFromArrays(const NumericArray& features, const std::string& features_path,
                                    const NumericArray& labels, const std::string& labels_path,
                                    const DatasetInfo& info) {
  Dataset d;
  d.info = info;
  const std::vector<int64_t>& f = features.dims;
  if (f.empty()) {
    return InvalidArgumentError(features_path + ": shape () holds no samples; expected (samples, ...)");
  }
  if (f[0] == 0) return InvalidArgumentError(features_path + ": no samples");
  const int64_t per_sample = ElementCount({f.begin() + 1, f.end()});
  if (per_sample != d.SampleSize()) {
    return InvalidArgumentError(features_path + ": a sample has " + std::to_string(per_sample) +
                                (per_sample == 1 ? " value" : " values") + " (shape " +
                                ShapeText(f) + "), inputShape has " + std::to_string(d.SampleSize()));
  }
  const std::vector<int64_t>& l = labels.dims;
  if (l.empty() || l.size() > 2 || (l.size() == 2 && l[1] != 1)) {
    return InvalidArgumentError(labels_path + ": labels have shape " + ShapeText(l) +
                                ", expected one label a sample: (samples,) or (samples, 1)");
  }
  if (l[0] != f[0]) {
    return InvalidArgumentError(features_path + " has " + std::to_string(f[0]) + " samples but " + labels_path +
                                " has " + std::to_string(l[0]) + " labels");
  }
  EDGETRAIN_RETURN_IF_ERROR(SetFeatures(features, features_path, d));
  EDGETRAIN_RETURN_IF_ERROR(SetLabels(labels, labels_path, d));
  return d;
}

}  // namespace edgetrain::agent

#include "agent/data/csv_format.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "agent/data/gzip_file.h"

namespace edgetrain::agent {
namespace {

// Spaces, tabs and a Windows line end's '\r'.
std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A field as spreadsheets may write it: " 3.5" or "\"3.5\"".
std::string_view TrimField(std::string_view s) {
  s = TrimSpace(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

bool ParseNumber(std::string_view field, double& out) {
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  if (field.empty()) return false;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), out);
  if (end != field.data() + field.size()) return false;
  // A number past a double's range is a number still: 1e400 the infinity
  // it rounds to, said as beyond float32's range below, 1e-400 the 0 it
  // rounds to. Both read "is not a number" (found in review).
  if (ec == std::errc::result_out_of_range) {
    out = std::strtod(std::string(field).c_str(), nullptr);
    return true;
  }
  return ec == std::errc();
}

// Whether a field that parsed as infinite was written as a number too large,
// not as "inf".
bool WrittenLarge(std::string_view field) {
  return std::any_of(field.begin(), field.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// A field as an error quotes it: a byte that is not printable ASCII as \xNN (a
// file in another encoding: the message goes on as UTF-8, into JSON, where a
// Latin-1 byte had aborted the agent), and a long one cut (a line of another
// separator is one field).
std::string Quoted(std::string_view field) {
  constexpr size_t kShown = 40;
  std::string out = "'";
  for (size_t i = 0; i < field.size() && i < kShown; ++i) {
    const auto c = static_cast<unsigned char>(field[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02X", c);
      out += escaped;
    }
  }
  out += "'";
  if (field.size() > kShown) out += " (cut at " + std::to_string(kShown) + " of its " + std::to_string(field.size()) + " bytes)";
  return out;
}

// Why a field that is not a number may not be one: a file of another separator.
std::string SeparatorHint(std::string_view field) {
  for (char c : {';', '\t', '|'}) {
    if (field.find(c) != std::string_view::npos) {
      return std::string("; fields are separated by commas, and this one holds ") + (c == '\t' ? "tabs" : std::string("'") + c + "'");
    }
  }
  return "";
}

// A header's name for the label's column, lower-cased: where a header names
// one, the column it names is the label's.
bool NamesTheLabel(std::string_view field) {
  std::string name(field);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return name == "label" || name == "labels" || name == "class" || name == "target";
}

// A header whose label is in another column than the one read: a file with
// its label last, as pandas and many exporters write it, trained on its first
// feature as the label, with no word said (a new user's trial).
std::string LabelElsewhere(const std::vector<std::string_view>& header, int64_t label_column) {
  if (label_column < int64_t(header.size()) && NamesTheLabel(header[static_cast<size_t>(label_column)])) return "";
  for (size_t i = 0; i < header.size(); ++i) {
    if (!NamesTheLabel(header[i])) continue;
    return "the header names column " + std::to_string(i + 1) + " of " + std::to_string(header.size()) + " " +
           Quoted(header[i]) + ", but each sample's label is read from its " +
           (label_column == 0 ? std::string("first column") : "column " + std::to_string(label_column + 1)) +
           ": write the label first, then the features (docs/own-model.md)" +
           // A first column without a name is pandas' index, written unless
           // told not to: the way out is that, not moving the label (a new
           // user's trial).
           (i == 1 && header[0].empty() ? std::string("; an unnamed first column is pandas' index: write the file "
                                                       "with to_csv(..., index=False)")
                                        : std::string());
  }
  return "";
}

}  // namespace

StatusOr<Dataset> ParseCsv(std::string_view text, const DatasetInfo& info, const CsvOptions& options,
                           std::string_view source) {
  Dataset d;
  d.info = info;
  const int64_t sample_size = d.SampleSize();
  const size_t columns = static_cast<size_t>(sample_size) + 1;
  const int64_t label_column = options.label_column >= 0 ? options.label_column : int64_t(columns) + options.label_column;
  if (label_column < 0 || label_column >= int64_t(columns) || options.max_level < 0 || options.max_level > 255) {
    return InternalError(std::string(source) + ": CSV options do not fit the data's shape");
  }
  if (options.max_level > 0) d.pixel_scale = 1.0f / static_cast<float>(options.max_level);

  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // the byte-order mark spreadsheets write
  std::vector<std::string_view> fields;
  std::vector<double> values;
  int64_t line_no = 0;
  bool first = true;
  std::string header_line;  // the first line, when it was taken for a header
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = TrimSpace(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (line.empty()) continue;
    auto bad = [&](const std::string& why) {
      return InvalidArgumentError(std::string(source) + ":" + std::to_string(line_no) + ": " + why);
    };

    // Split no further than one field past a sample's: a line of ten
    // million fields held 24 bytes a field in these vectors before it was
    // refused for its count (found in review); the rest are only counted.
    fields.clear();
    size_t found = 0;
    for (size_t at = 0;;) {
      const size_t comma = line.find(',', at);
      if (fields.size() > columns) {
        found = fields.size() + 1 + static_cast<size_t>(std::count(line.begin() + at, line.end(), ','));
        break;
      }
      fields.push_back(TrimField(line.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at)));
      if (comma == std::string_view::npos) break;
      at = comma + 1;
    }
    if (found == 0) found = fields.size();
    values.resize(fields.size());
    size_t not_a_number = fields.size();
    size_t names = 0;  // fields that are not numbers
    for (size_t i = 0; i < fields.size(); ++i) {
      if (ParseNumber(fields[i], values[i])) continue;
      if (not_a_number == fields.size()) not_a_number = i;
      ++names;
    }
    // A header names its columns: a first line of numbers with a typo in
    // one of them is a sample, refused as any other line would be (it was
    // dropped as a header, unsaid: a new user's trial). So does one that
    // names the label alone beside its columns' numbers ("label,0,1,...",
    // refused as "'label' is not a number": another). A line that numbers
    // every column from 0, as pandas writes a frame of unnamed columns, is
    // a sample like any: "0,1,2" is one too.
    const bool header =
        first && (names * 2 > fields.size() || (names == 1 && NamesTheLabel(fields[not_a_number])));
    first = false;
    if (not_a_number < fields.size()) {
      if (header) {
        if (const std::string elsewhere = LabelElsewhere(fields, label_column); !elsewhere.empty()) return bad(elsewhere);
        header_line = Quoted(line);
        continue;
      }
      // A label written as its class's name: said as the label, with what
      // one is (it read as any value that is not a number: a user's trial).
      if (static_cast<int64_t>(not_a_number) == label_column && fields.size() == columns) {
        return bad("label " + Quoted(fields[not_a_number]) + " is not a number: a label is its class's number, 0 to " +
                   std::to_string(info.classes - 1) + " (write each class's name as its number)");
      }
      return bad(Quoted(fields[not_a_number]) + " is not a number" + SeparatorHint(fields[not_a_number]));
    }
    if (found != columns) {
      // A sample's count comes from the data's shape (a manifest's
      // inputShape), which may be what is wrong: said (a user's trial).
      return bad("expected " + std::to_string(columns) + " values, a label and a sample's " +
                 std::to_string(sample_size) + (options.shape_from.empty() ? "" : " (" + options.shape_from + ")") +
                 ", found " + std::to_string(found));
    }

    const double label = values[static_cast<size_t>(label_column)];
    if (!std::isfinite(label) || label != std::floor(label)) {
      return bad("label " + Quoted(fields[static_cast<size_t>(label_column)]) + " is not an integer");
    }
    if (label < 0 || label >= info.classes) {
      return bad("label " + std::string(fields[static_cast<size_t>(label_column)]) + OutOfTheClasses(info.classes));
    }
    d.labels.push_back(static_cast<int64_t>(label));
    for (size_t i = 0; i < columns; ++i) {
      if (static_cast<int64_t>(i) == label_column) continue;
      const double v = values[i];
      if (options.max_level > 0) {
        if (v < 0 || v > options.max_level || v != std::floor(v)) {
          return bad("value " + Quoted(fields[i]) + " is not a whole number from 0 to " +
                     std::to_string(options.max_level));
        }
        d.pixels.push_back(static_cast<uint8_t>(v));
      } else {
        // A NaN or an infinity would only show up later as a loss that is NaN.
        if (!std::isfinite(v) && !(std::isinf(v) && WrittenLarge(fields[i]))) {
          return bad(Quoted(fields[i]) + " is not a finite number");
        }
        // Features are float32: 1e39 read as a double became an infinity
        // there, and the loss NaN, blamed on the learning rate (a new
        // user's trial).
        const auto f = static_cast<float>(v);
        if (!std::isfinite(f)) return bad(Quoted(fields[i]) + " is beyond float32's range (3.4e38), which features are kept in");
        d.features.push_back(f);
      }
    }
  }
  if (d.labels.empty()) {
    // A file of one bad row read as "no samples", as if that row were a
    // header (a new user's trial): the line taken for one is shown.
    return InvalidArgumentError(std::string(source) + ": no samples" +
                                (header_line.empty() ? "" : " (its first line, taken for a header: " + header_line + ")"));
  }
  return d;
}

StatusOr<Dataset> ReadCsvFile(const std::string& path, const DatasetInfo& info, const CsvOptions& options) {
  EDGETRAIN_ASSIGN_OR_RETURN(std::string text, ReadDataFile(path));
  return ParseCsv(text, info, options, path);
}

}  // namespace edgetrain::agent

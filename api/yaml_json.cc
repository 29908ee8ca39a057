#include "api/yaml_json.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <stdexcept>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include "api/yaml_scalars.h"
#include "core/quoted_text.h"
#include "core/utf8.h"

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;

std::string Where(const std::string& source, const YAML::Mark& mark) {
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// The parser finds an unclosed `{`, `[` or quote only where the text ends
// or stops making sense, lines after it (a new user's trial read the error
// one line late and looked there): an opener before `mark`'s line that the
// whole text never closes, as " (the `{` at line 5, column 10 is never
// closed)", or nothing (an error inside brackets that do close, a missing
// comma, is not theirs). A quote counts where a scalar may begin (a line's
// start, after `: `, `- `, `{`, `[` or `,`), not as an apostrophe inside a
// plain scalar.
// The first line up to the error's that a tab indents: YAML indents with
// spaces only, and yaml-cpp says "illegal map value" or "end of map not
// found" of one (a user's trial).
std::string TabIndentBefore(std::string_view text, const YAML::Mark& mark) {
  int line = 0;
  for (size_t start = 0; start < text.size() && line <= mark.line; ++line) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view row = text.substr(start, end - start);
    const size_t first = row.find_first_not_of(" \t");
    if (first != std::string_view::npos && row.substr(0, first).find('\t') != std::string_view::npos) {
      return " (line " + std::to_string(line + 1) + " is indented with a tab: YAML indents with spaces)";
    }
    start = end + 1;
  }
  return "";
}

std::string UnclosedBefore(std::string_view text, const YAML::Mark& mark) {
  struct Open {
    char c;
    int line, column;
  };
  std::vector<Open> open;
  std::optional<Open> quoted;  // open now
  char before = '\n';  // the last character outside spaces, '\n' at a line's start
  int line = 0, column = 0;
  auto advance = [&](char c) {
    if (c == '\n') {
      ++line;
      column = 0;
      before = '\n';
    } else {
      ++column;
    }
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '\\' && quoted->c == '"' && i + 1 < text.size()) {
        advance(c);
        advance(text[++i]);  // its escaped character, a line's end too
        continue;
      }
      if (c == quoted->c) {
        if (c == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
          advance(c);
          advance(text[++i]);  // '' inside single quotes
          continue;
        }
        quoted.reset();
        before = c;
      }
    } else if (c == '#' && (before == '\n' || text[i - 1] == ' ' || text[i - 1] == '\t')) {
      while (i + 1 < text.size() && text[i + 1] != '\n') advance(text[i++]);  // a comment
    } else if ((c == '"' || c == '\'') && std::string_view("\n:-{[,").find(before) != std::string_view::npos) {
      quoted = Open{c, line, column};
    } else if (c == '{' || c == '[') {
      open.push_back({c, line, column});
    } else if ((c == '}' || c == ']') && !open.empty()) {
      open.pop_back();
    }
    if (!quoted && c != ' ' && c != '\t' && c != '\n') before = c;
    advance(c);
  }
  // A quote left open swallowed the brackets after it: it is the one to name.
  std::optional<Open> left = quoted;
  for (auto o = open.rbegin(); !left && o != open.rend(); ++o) {
    if (o->line < mark.line) left = *o;
  }
  if (!left || left->line >= mark.line) return "";  // on the line named: no news
  return std::string(" (the `") + left->c + "` at line " + std::to_string(left->line + 1) + ", column " +
         std::to_string(left->column + 1) + " is never closed)";
}

// The most values a document may hold once its aliases are expanded: a
// TrainingJob has a few hundred, a cluster profile of 5,000 nodes under a
// hundred thousand. Nested aliases (a "billion laughs") name each other so
// that a file of a few lines expands to billions, which took gigabytes
// before anything looked at them (a user's trial).
constexpr int64_t kMostValues = 500000;

// yaml-cpp 0.7 can read text that is UTF-8 into a scalar that is not: a NUL
// in a plain scalar folded over lines came out with a lone 0x85 byte (NEL),
// and writing the JSON made of it threw (found by tests/fuzz). Refused, as
// such text is, by its field.
Status CheckScalarUtf8(const YAML::Node& node, const std::string& source, const std::string& path) {
  const size_t bad = FirstInvalidUtf8(node.Scalar());
  if (bad == std::string::npos) return Status::Ok();
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(node.Scalar()[bad]));
  return InvalidArgumentError(Where(source, node.Mark()) + ": " + (path.empty() ? "" : path + ": ") +
                              "not UTF-8 text once read as YAML (byte " + byte +
                              "; a NUL or another control character in it?)");
}

// `path`: the node's field, as validation names it (spec.optimizer.learningRate).
// `lines`, if any, gets where each field under `path` was written.
StatusOr<Json> ToJson(const YAML::Node& node, const std::string& source, const std::string& path, int64_t& left,
                      FieldLines* lines) {
  if (--left < 0) {
    return InvalidArgumentError(source + ": more than " + std::to_string(kMostValues) +
                                " values once its aliases (*name) are expanded: no manifest or cluster profile is "
                                "that large");
  }
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return Json(nullptr);
    case YAML::NodeType::Scalar: {
      EDGETRAIN_RETURN_IF_ERROR(CheckScalarUtf8(node, source, path));
      // "?" marks a plain scalar; "!" a quoted one; anything else an explicit tag.
      StatusOr<Json> value = ResolveTaggedScalar(node.Tag(), node.Scalar());
      if (!value.ok()) {
        return InvalidArgumentError(Where(source, node.Mark()) + ": " + (path.empty() ? "" : path + ": ") +
                                    std::string(value.status().message()));
      }
      // JSON has no NaN or infinity, and no range check compares with them
      // (NaN passes every one): refused here (found by tests/fuzz). 1e999 is
      // beyond a double, so infinite.
      if (value->is_number_float() && !std::isfinite(value->get<double>())) {
        return InvalidArgumentError(Where(source, node.Mark()) + ": " + (path.empty() ? "" : path + ": ") +
                                    QuotedExcerpt(node.Scalar()) + " is not a finite number");
      }
      return *std::move(value);
    }
    case YAML::NodeType::Sequence: {
      Json array = Json::array();
      for (const auto& item : node) {
        const std::string at = path + "[" + std::to_string(array.size()) + "]";
        if (lines && item.Mark().line >= 0) lines->emplace(at, item.Mark().line + 1);
        EDGETRAIN_ASSIGN_OR_RETURN(Json value, ToJson(item, source, at, left, lines));
        array.push_back(std::move(value));
      }
      return array;
    }
    case YAML::NodeType::Map: {
      Json object = Json::object();
      std::vector<Json> merged;  // the maps its merge keys name, in the order they take precedence
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
          return InvalidArgumentError(Where(source, entry.first.Mark()) + ": mapping keys must be strings");
        }
        EDGETRAIN_RETURN_IF_ERROR(CheckScalarUtf8(entry.first, source, path));
        const std::string& key = entry.first.Scalar();
        // A plain "<<" is YAML 1.1's merge key, which kubectl reads: the
        // keys of the map (or maps) it names, less those written here.
        if (key == "<<" && entry.first.Tag() == "?") {
          EDGETRAIN_ASSIGN_OR_RETURN(Json value, ToJson(entry.second, source, path, left, nullptr));
          const bool maps = value.is_object() || (value.is_array() && !value.empty() &&
                                                  std::all_of(value.begin(), value.end(),
                                                              [](const Json& v) { return v.is_object(); }));
          if (!maps) {
            return InvalidArgumentError(Where(source, entry.second.Mark()) + ": " + (path.empty() ? "" : path + ": ") +
                                        "<< (a merge key) takes a map or a list of maps, such as <<: *defaults");
          }
          if (value.is_object()) {
            merged.push_back(std::move(value));
          } else {
            for (Json& m : value) merged.push_back(std::move(m));
          }
          continue;
        }
        if (object.contains(key)) {
          return InvalidArgumentError(Where(source, entry.first.Mark()) + ": duplicate key \"" + key + "\"");
        }
        const std::string at = path.empty() ? key : path + "." + key;
        if (lines && entry.first.Mark().line >= 0) lines->emplace(at, entry.first.Mark().line + 1);
        EDGETRAIN_ASSIGN_OR_RETURN(Json value, ToJson(entry.second, source, at, left, lines));
        object[key] = std::move(value);
      }
      for (Json& m : merged) {
        for (auto& [key, value] : m.items()) {
          if (!object.contains(key)) object[key] = std::move(value);
        }
      }
      return object;
    }
  }
  return Json(nullptr);
}

Status CheckUtf8(std::string_view text, const std::string& source) {
  const size_t bad = FirstInvalidUtf8(text);
  if (bad == std::string_view::npos) return Status::Ok();
  const std::string_view before = text.substr(0, bad);
  const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
  const size_t line_start = before.rfind('\n');
  const size_t column = bad - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[bad]));
  return InvalidArgumentError(source + ":" + std::to_string(line) + ":" + std::to_string(column) +
                              ": not UTF-8 text (byte " + byte + ")");
}

// yaml-cpp 0.7 (Debian 12's) loops for ever in LoadAll on some malformed
// streams, a stray "," among them (its issue 1040, found here by
// tests/fuzz/manifest_fuzzer): its parser reports one empty document after
// another without reading on. A stream holds at most one document more than
// it has markers, so counting them first, with a parser that builds nothing,
// tells such a stream from a real one before LoadAll sees it.
class DocumentCounter final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

Status CheckDocumentsEnd(const std::string& text, const std::string& source) {
  size_t markers = 0;
  for (const char* marker : {"---", "..."}) {
    for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + 3)) ++markers;
  }
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentCounter counter;
  for (size_t documents = 0; parser.HandleNextDocument(counter);) {
    if (++documents > markers + 1) {
      return InvalidArgumentError(source + ": not YAML: the parser stops making sense of it (a stray ',' or the like)");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<Json>> ParseYamlDocuments(std::string_view given, const std::string& source,
                                               std::vector<FieldLines>* lines) {
  // UTF-16, which kubectl reads, said as such: "not UTF-8 text (byte 0xFF)"
  // named no encoding (a user's trial).
  if (given.starts_with("\xFF\xFE") || given.starts_with("\xFE\xFF")) {
    return InvalidArgumentError(source + " is UTF-16 text (its byte-order mark says so): save it as UTF-8, which "
                                "edgetrain reads");
  }
  // A line break is CR, LF or CR LF in YAML; yaml-cpp reads the first only
  // as part of the second, and a file of CR-only line breaks (an old Mac's)
  // read as one line, "illegal map value" (a user's trial).
  std::string normalised;
  if (given.find('\r') != std::string_view::npos) {
    normalised.reserve(given.size());
    for (size_t i = 0; i < given.size(); ++i) {
      if (given[i] != '\r') {
        normalised += given[i];
      } else if (i + 1 == given.size() || given[i + 1] != '\n') {
        normalised += '\n';
      }
    }
    given = normalised;
  }
  const std::string_view text = given;
  std::vector<YAML::Node> nodes;
  try {
    EDGETRAIN_RETURN_IF_ERROR(CheckUtf8(text, source));
    EDGETRAIN_RETURN_IF_ERROR(CheckDocumentsEnd(std::string(text), source));
    nodes = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    std::string hint = UnclosedBefore(text, e.mark) + TabIndentBefore(text, e.mark);
    // yaml-cpp's words for a line indented one space off say nothing of
    // indenting (a user's trial: "end of sequence not found").
    // ("illegal map value" is most often a value holding ": ", not this.)
    if (hint.empty() && (e.msg == "end of sequence not found" || e.msg == "end of map not found")) {
      hint = " (most likely a line at or above it indented unlike its neighbours: the items of a list, and the keys "
             "of a map, start in the same column)";
    }
    return InvalidArgumentError(Where(source, e.mark) + ": " + e.msg + hint);
  }
  std::vector<Json> documents;
  if (lines) lines->clear();
  const size_t first_break = text.find('\n');
  const bool one_line = first_break == std::string_view::npos || first_break + 1 == text.size();
  for (const auto& node : nodes) {
    int64_t left = kMostValues;
    FieldLines* mine = lines ? &lines->emplace_back() : nullptr;
    if (one_line) mine = nullptr;
    EDGETRAIN_ASSIGN_OR_RETURN(Json doc, ToJson(node, source, "", left, mine));
    documents.push_back(std::move(doc));
  }
  return documents;
}

void DropEmptyDocuments(std::vector<Json>& documents, std::vector<FieldLines>& lines) {
  size_t kept = 0;
  for (size_t d = 0; d < documents.size(); ++d) {
    if (documents[d].is_null()) continue;
    if (kept != d) {  // not onto itself: a map moved onto itself is left empty
      documents[kept] = std::move(documents[d]);
      if (d < lines.size()) lines[kept] = std::move(lines[d]);
    }
    ++kept;
  }
  documents.resize(kept);
  lines.resize(std::min(lines.size(), kept));
}

}  // namespace edgetrain::api

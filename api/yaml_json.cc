#include "api/yaml_json.h"

#include <cmath>
#include <regex>
#include <set>

#include <yaml-cpp/yaml.h>

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;

std::string Where(const std::string& source, const YAML::Mark& mark) {
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

Json ResolvePlainScalar(const std::string& s) {
  static const std::set<std::string> kNull{"", "~", "null", "Null", "NULL"};
  static const std::set<std::string> kTrue{"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const std::set<std::string> kFalse{"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
  static const std::regex kInt(R"([-+]?[0-9]+)");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (kNull.count(s)) return nullptr;
  if (kTrue.count(s)) return true;
  if (kFalse.count(s)) return false;
  if (std::regex_match(s, kInt)) {
    try {
      size_t used = 0;
      long long v = std::stoll(s, &used);
      if (used == s.size()) return v;
    } catch (const std::out_of_range&) {
      // Too large for an integer: keep it as a number, as a JSON decoder would.
    }
    return std::stod(s);
  }
  if (std::regex_match(s, kFloat)) return std::stod(s);
  if (s == ".inf" || s == "+.inf" || s == ".Inf") return std::numeric_limits<double>::infinity();
  if (s == "-.inf" || s == "-.Inf") return -std::numeric_limits<double>::infinity();
  if (s == ".nan" || s == ".NaN") return std::nan("");
  return s;
}

StatusOr<Json> ToJson(const YAML::Node& node, const std::string& source) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return Json(nullptr);
    case YAML::NodeType::Scalar:
      // "?" marks a plain scalar; "!" a quoted one; anything else an explicit tag.
      if (node.Tag() == "?") return ResolvePlainScalar(node.Scalar());
      if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return Json(node.Scalar());
      return ResolvePlainScalar(node.Scalar());
    case YAML::NodeType::Sequence: {
      Json array = Json::array();
      for (const auto& item : node) {
        EDGETRAIN_ASSIGN_OR_RETURN(Json value, ToJson(item, source));
        array.push_back(std::move(value));
      }
      return array;
    }
    case YAML::NodeType::Map: {
      Json object = Json::object();
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
          return InvalidArgumentError(Where(source, entry.first.Mark()) + ": mapping keys must be strings");
        }
        const std::string& key = entry.first.Scalar();
        if (object.contains(key)) {
          return InvalidArgumentError(Where(source, entry.first.Mark()) + ": duplicate key \"" + key + "\"");
        }
        EDGETRAIN_ASSIGN_OR_RETURN(Json value, ToJson(entry.second, source));
        object[key] = std::move(value);
      }
      return object;
    }
  }
  return Json(nullptr);
}

}  // namespace

StatusOr<std::vector<Json>> ParseYamlDocuments(std::string_view text, const std::string& source) {
  std::vector<YAML::Node> nodes;
  try {
    nodes = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(Where(source, e.mark) + ": " + e.msg);
  }
  std::vector<Json> documents;
  for (const auto& node : nodes) {
    EDGETRAIN_ASSIGN_OR_RETURN(Json doc, ToJson(node, source));
    documents.push_back(std::move(doc));
  }
  return documents;
}

}  // namespace edgetrain::api

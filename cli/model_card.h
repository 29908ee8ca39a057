#pragma once
// What a saved model's model.json (the card the agent writes beside
// model.pt: agent/job_driver.cc) says of it, for the runner and evaluate.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace edgetrain::cli {

// The model.json beside `model_path`; null when there is none to read.
inline nlohmann::json ModelCard(const std::string& model_path) {
  std::ifstream in(std::filesystem::path(model_path).parent_path() / "model.json");
  if (!in) return nullptr;
  nlohmann::json card = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return card.is_object() ? card : nlohmann::json(nullptr);
}

// The string `key` of the model.json beside `model_path` ("dataset", "job");
// empty when there is none to read.
inline std::string ModelCardField(const std::string& model_path, const char* key) {
  const nlohmann::json card = ModelCard(model_path);
  return card.is_object() && card.contains(key) && card[key].is_string() ? card[key].get<std::string>() : "";
}

// The classes' names its model.json lists (image folders', label i the
// i-th); empty where it lists none.
inline std::vector<std::string> ModelCardClasses(const std::string& model_path) {
  const nlohmann::json card = ModelCard(model_path);
  std::vector<std::string> names;
  if (!card.is_object() || !card.contains("classes") || !card["classes"].is_array()) return names;
  for (const nlohmann::json& name : card["classes"]) {
    if (!name.is_string()) return {};
    names.push_back(name.get<std::string>());
  }
  return names;
}

}  // namespace edgetrain::cli

#pragma once
// What a saved model's model.json (the card the agent writes beside
// model.pt: agent/job_driver.cc) says of it, for the runner and evaluate.

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace edgetrain::cli {

// The string `key` of the model.json beside `model_path` ("dataset", "job");
// empty when there is none to read.
inline std::string ModelCardField(const std::string& model_path, const char* key) {
  std::ifstream in(std::filesystem::path(model_path).parent_path() / "model.json");
  if (!in) return "";
  const nlohmann::json card = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return card.is_object() && card.contains(key) && card[key].is_string() ? card[key].get<std::string>() : "";
}

}  // namespace edgetrain::cli

#include "agent/dp/checkpoint.h"

#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "agent/storage/atomic_file.h"

namespace edgetrain::agent {
namespace {

constexpr std::string_view kMagic = "EDGETRAIN-CHECKPOINT 1\n";

// FNV-1a, 64 bits: enough to tell a torn or flipped file from a whole one.
uint64_t Checksum(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

template <typename T>
void AppendArray(std::string& out, const std::vector<T>& v) {
  uint64_t n = v.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

template <typename T>
bool ReadArray(std::string_view& in, std::vector<T>& v) {
  uint64_t n = 0;
  if (in.size() < sizeof n) return false;
  std::memcpy(&n, in.data(), sizeof n);
  in.remove_prefix(sizeof n);
  if (n > in.size() / sizeof(T)) return false;
  v.resize(n);
  std::memcpy(v.data(), in.data(), n * sizeof(T));
  in.remove_prefix(n * sizeof(T));
  return true;
}

}  // namespace

std::string EncodeCheckpoint(const CoordinatorCheckpoint& c) {
  nlohmann::json header = {{"job", c.job},         {"generation", c.generation}, {"iteration", c.iteration},
                           {"samples", c.samples}, {"elapsedSeconds", c.elapsed_s},
                           {"complete", c.complete}};
  std::string out(kMagic);
  out += header.dump() + "\n";
  AppendArray(out, c.parameters);
  AppendArray(out, c.optimizer.first);
  AppendArray(out, c.optimizer.second);
  AppendArray(out, c.optimizer.steps);
  AppendArray(out, c.pushed);
  AppendArray(out, c.iterations);
  AppendArray(out, c.versions);
  uint64_t sum = Checksum(out);
  out.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  return out;
}

StatusOr<CoordinatorCheckpoint> DecodeCheckpoint(std::string_view bytes, const std::string& source) {
  auto damaged = [&](const std::string& why) { return DataLossError(source + ": damaged checkpoint (" + why + ")"); };
  if (bytes.substr(0, kMagic.size()) != kMagic) return damaged("not an edgetrain checkpoint");
  if (bytes.size() < kMagic.size() + sizeof(uint64_t)) return damaged("truncated");
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - sizeof stored, sizeof stored);
  std::string_view body = bytes.substr(0, bytes.size() - sizeof stored);
  if (Checksum(body) != stored) return damaged("checksum mismatch: torn or altered");

  std::string_view in = body.substr(kMagic.size());
  size_t nl = in.find('\n');
  if (nl == std::string_view::npos) return damaged("no header");
  nlohmann::json header = nlohmann::json::parse(in.substr(0, nl), nullptr, false);
  in.remove_prefix(nl + 1);
  CoordinatorCheckpoint c;
  try {
    c.job = header.at("job").get<std::string>();
    c.generation = header.at("generation").get<int64_t>();
    c.iteration = header.at("iteration").get<int64_t>();
    c.samples = header.at("samples").get<int64_t>();
    c.elapsed_s = header.at("elapsedSeconds").get<double>();
    c.complete = header.at("complete").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    return damaged(std::string("header: ") + e.what());
  }
  if (!ReadArray(in, c.parameters) || !ReadArray(in, c.optimizer.first) || !ReadArray(in, c.optimizer.second) ||
      !ReadArray(in, c.optimizer.steps) || !ReadArray(in, c.pushed) || !ReadArray(in, c.iterations) ||
      !ReadArray(in, c.versions) || !in.empty()) {
    return damaged("sections do not add up");
  }
  return c;
}

Status SaveCheckpoint(const std::string& path, const CoordinatorCheckpoint& c) {
  return WriteFileAtomically(path, EncodeCheckpoint(c));
}

StatusOr<std::optional<CoordinatorCheckpoint>> LoadCheckpoint(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<CoordinatorCheckpoint>();
  EDGETRAIN_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path));
  EDGETRAIN_ASSIGN_OR_RETURN(CoordinatorCheckpoint c, DecodeCheckpoint(bytes, path));
  return std::optional<CoordinatorCheckpoint>(std::move(c));
}

}  // namespace edgetrain::agent

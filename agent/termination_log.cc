#include "agent/termination_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <streambuf>

#include <nlohmann/json.hpp>

#include "api/result_json.h"

namespace edgetrain::agent {

class ResultCapture::Buffer : public std::streambuf {
 public:
  explicit Buffer(std::ostream& out) : out_(out) {}
  std::string result;

 protected:
  int_type overflow(int_type c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    out_.put(static_cast<char>(c));
    if (c == '\n') {
      if (line_.rfind(kPrefix, 0) == 0) result = line_.substr(sizeof kPrefix - 1);
      line_.clear();
    } else {
      line_.push_back(static_cast<char>(c));
    }
    return c;
  }
  int sync() override {
    out_.flush();
    return out_ ? 0 : -1;
  }

 private:
  static constexpr char kPrefix[] = "result ";
  std::ostream& out_;
  std::string line_;
};

ResultCapture::ResultCapture(std::ostream& out)
    : buffer_(std::make_unique<Buffer>(out)), stream_(std::make_unique<std::ostream>(buffer_.get())) {}
ResultCapture::~ResultCapture() = default;
std::ostream& ResultCapture::stream() { return *stream_; }
std::string ResultCapture::result() const { return buffer_->result; }

namespace {

// A string cut to `keep` characters (not inside a UTF-8 sequence), saying so.
std::string Shortened(const std::string& text, size_t keep) {
  while (keep > 0 && keep < text.size() && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  return text.substr(0, keep) + "... (" + std::to_string(text.size() - keep) + " more characters)";
}

}  // namespace

std::string FitTerminationMessage(const std::string& result) {
  if (result.size() <= kTerminationMessageLimit) return result;
  nlohmann::json j = nlohmann::json::parse(result, nullptr, /*allow_exceptions=*/false);
  // Not ours to shorten; a reader would not parse it whole or cut either.
  if (!j.is_object()) return result.substr(0, kTerminationMessageLimit);
  auto fits = [&] { return api::ResultJson(j).size() <= kTerminationMessageLimit; };
  if (j.contains("workers") && j["workers"].is_array()) {
    // First each worker's figures the operator's status takes of it
    // (operator/controller/job_status.cc), the rest left out: 12 workers
    // were all left out of a result of 609 bytes left, and the status took
    // theirs from an older read, which no longer added up to the job's
    // samples (a new user's trial).
    // A pipeline device's layers too, which its status says (found in
    // review: they had been left out).
    static const char* const kKept[] = {"rank",          "samples",     "injectedSamples", "batchSize",
                                        "bandwidthMbps", "stallFraction", "quarantined",   "silentSeconds",
                                        "active",        "holdingTeam", "stream",          "layers"};
    nlohmann::json kept = nlohmann::json::array();
    for (const nlohmann::json& w : j["workers"]) {
      nlohmann::json k = nlohmann::json::object();
      for (const char* key : kKept) {
        if (w.is_object() && w.contains(key)) k[key] = w[key];
      }
      kept.push_back(std::move(k));
    }
    nlohmann::json compact = j;
    compact["workers"] = std::move(kept);
    if (api::ResultJson(compact).size() <= kTerminationMessageLimit) return api::ResultJson(compact);
    j["workersOmitted"] = j["workers"].size();
    j.erase("workers");
    if (fits()) return api::ResultJson(j);
  }
  // Cut JSON is no result at all: the operator reads a module's refusal
  // only from JSON that parses (operator/controller/model_check.cc), and took
  // one whose error ran past the limit for a check that failed. Long strings
  // (an error quoting a file, say) are shortened first, then the largest
  // fields left out by name, until it fits.
  constexpr size_t kLongString = 512;
  for (auto& [key, value] : j.items()) {
    if (value.is_string() && value.get<std::string>().size() > kLongString) {
      value = Shortened(value.get<std::string>(), kLongString);
    }
  }
  while (!fits()) {
    std::string largest;
    size_t largest_size = 0;
    for (const auto& [key, value] : j.items()) {
      const size_t size = key == "omitted" ? 0 : api::ResultJson(value).size();
      if (size > largest_size) largest = key, largest_size = size;
    }
    if (largest.empty()) break;
    j.erase(largest);
    j["omitted"].push_back(largest);
  }
  return api::ResultJson(j);
}

bool WriteTerminationLog(const std::string& path, const std::string& message, std::ostream& log) {
  // The system's calls, whose errno says why: "could not write" alone left
  // a user to guess between a missing folder and a read-only one (found in
  // review).
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool written = fd >= 0;
  for (size_t done = 0; written && done < message.size();) {
    const ssize_t n = ::write(fd, message.data() + done, message.size() - done);
    if (n < 0 && errno == EINTR) continue;
    written = n > 0;
    if (written) done += static_cast<size_t>(n);
  }
  std::string why = written ? "" : std::strerror(errno);
  if (fd >= 0 && ::close(fd) != 0 && written) {  // a network file system may say so only here
    written = false;
    why = std::strerror(errno);
  }
  if (!written) {
    log << "edgetrain-agent: could not write the termination log " << path << ": " << why
        << " (the result line on stdout holds the same)\n";
  }
  return written;
}

void ResultCapture::WriteTerminationLogTo(const std::string& path, std::ostream& log) {
  stream().flush();
  if (!result().empty()) WriteTerminationLog(path, FitTerminationMessage(result()), log);
}

}  // namespace edgetrain::agent

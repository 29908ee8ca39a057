#include "agent/termination_log.h"

#include <fstream>
#include <streambuf>

#include <nlohmann/json.hpp>

#include "agent/result_json.h"

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

std::string FitTerminationMessage(const std::string& result) {
  if (result.size() <= kTerminationMessageLimit) return result;
  nlohmann::json j = nlohmann::json::parse(result, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("workers")) {
    j["workersOmitted"] = j["workers"].size();
    j.erase("workers");
    std::string shorter = ResultJson(j);
    if (shorter.size() <= kTerminationMessageLimit) return shorter;
  }
  return result.substr(0, kTerminationMessageLimit);
}

bool WriteTerminationLog(const std::string& path, const std::string& message, std::ostream& log) {
  std::ofstream out(path, std::ios::trunc);
  out << message;
  out.close();
  if (!out) {
    log << "edgetrain-agent: could not write the termination log " << path << "\n";
    return false;
  }
  return true;
}

}  // namespace edgetrain::agent

#include "agent/stamped_log.h"

#include <string_view>

namespace edgetrain::agent {

StampedLog::StampedLog(std::ostream& out, Now now) : out_(out), now_(std::move(now)) {}

StampedLog::~StampedLog() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [thread, line] : unended_) WriteLocked(line);
  out_.flush();
}

StampedLog::int_type StampedLog::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const char one = traits_type::to_char_type(c);
  std::lock_guard<std::mutex> lock(mu_);
  TakeLocked(&one, 1);
  return c;
}

std::streamsize StampedLog::xsputn(const char* text, std::streamsize n) {
  std::lock_guard<std::mutex> lock(mu_);
  TakeLocked(text, n);
  return n;
}

int StampedLog::sync() {
  std::lock_guard<std::mutex> lock(mu_);
  out_.flush();
  return out_ ? 0 : -1;
}

void StampedLog::TakeLocked(const char* text, std::streamsize n) {
  std::string_view rest(text, static_cast<size_t>(n));
  const auto thread = std::this_thread::get_id();
  for (size_t end = rest.find('\n'); end != std::string_view::npos; end = rest.find('\n')) {
    auto held = unended_.find(thread);
    if (held == unended_.end()) {
      WriteLocked(std::string(rest.substr(0, end)));
    } else {
      held->second.append(rest.substr(0, end));
      WriteLocked(held->second);
      unended_.erase(held);
    }
    rest.remove_prefix(end + 1);
  }
  if (!rest.empty()) unended_[thread].append(rest);
}

void StampedLog::WriteLocked(const std::string& line) {
  out_ << LogLineStamp(now_()) << line << "\n";
  out_.flush();  // a line at a time, as std::cerr wrote them: a crash right after loses none
}

}  // namespace edgetrain::agent

#pragma once
// What an agent serving a team does with a connection its transport refused
// for its certificate: one log line saying who and why, and the metric.

#include <cstdint>
#include <mutex>
#include <ostream>
#include <sstream>
#include <string>

#include "agent/telemetry/metrics.h"
#include "agent/transport/transport.h"

namespace edgetrain::agent {

class RefusalReport final : public RefusalObserver {
 public:
  // `who`: the log line's subject ("coordinator", "head").
  RefusalReport(std::string who, std::ostream& log, ConnectionMetrics& metrics)
      : who_(std::move(who)), log_(log), metrics_(metrics) {}

  void Refused(const RefusedPeer& peer) override {
    metrics_.AddRefused(peer.reason);
    std::ostringstream line;  // whole, so that streams refused at once do not interleave
    line << who_ << ": refused a connection from " << peer.address << ": " << peer.detail << " (" << peer.reason
         << ")\n";
    log_ << line.str() << std::flush;
    std::lock_guard lock(mu_);
    ++refused_;
    last_ = peer.address + ": " + peer.detail;
  }

  // What a failure for want of peers leaves out when every one that came was
  // refused: "no worker connected" sent a user to look at the network (a
  // user's trial). Empty when none was.
  std::string Summary() const {
    std::lock_guard lock(mu_);
    if (refused_ == 0) return {};
    return std::to_string(refused_) + (refused_ == 1 ? " connection" : " connections") +
           " refused for their certificates, the last from " + last_;
  }

 private:
  const std::string who_;
  std::ostream& log_;
  ConnectionMetrics& metrics_;
  mutable std::mutex mu_;  // refusals come on the server's threads
  int64_t refused_ = 0;
  std::string last_;
};

}  // namespace edgetrain::agent

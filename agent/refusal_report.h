#pragma once
// What an agent serving a team does with a connection its transport refused
// for its certificate: one log line saying who and why, and the metric.

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
  }

 private:
  const std::string who_;
  std::ostream& log_;
  ConnectionMetrics& metrics_;
};

}  // namespace edgetrain::agent

#include "cli/node_links_command.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "cli/job_loading.h"
#include "cli/local_runner.h"
#include "cli/netns_links.h"

namespace edgetrain::cli {
namespace {

constexpr int kPollMs = 100;  // how soon SIGTERM is noticed while no command comes

// Reads whole lines from a file descriptor without blocking past kPollMs, so
// that a signal is noticed between commands.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  // A line, "" while none is complete, nullopt once the input has closed.
  std::optional<std::string> Next() {
    if (auto line = Pop()) return line;
    if (closed_) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) > 0) {
      char buf[512];
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) closed_ = true;
      else buffer_.append(buf, static_cast<size_t>(n));
    }
    if (auto line = Pop()) return line;
    return closed_ ? std::nullopt : std::optional<std::string>("");
  }

 private:
  std::optional<std::string> Pop() {
    const size_t end = buffer_.find('\n');
    if (end == std::string::npos) return std::nullopt;
    std::string line = buffer_.substr(0, end);
    buffer_.erase(0, end + 1);
    return line;
  }
  int fd_;
  bool closed_ = false;
  std::string buffer_;
};

std::string Answer(NetnsLinks& links, const std::vector<std::string>& nodes, const std::string& line) {
  std::istringstream words(line);
  std::string verb, node;
  words >> verb >> node;
  const auto it = std::find(nodes.begin(), nodes.end(), node);
  if (it == nodes.end()) return "error: no node \"" + node + "\"";
  const int rank = static_cast<int>(it - nodes.begin());
  if (verb == "scale") {
    double factor = -1;
    if (!(words >> factor)) return "error: scale NODE FACTOR";
    Status set = links.SetScale(rank, factor);
    return set.ok() ? "ok" : "error: " + set.message();
  }
  if (verb == "show") {
    const double mbps = links.UplinkMbps(rank);
    std::ostringstream rate;
    rate << mbps;
    return mbps < 0 ? "ok unshaped" : "ok mbps=" + rate.str();
  }
  return "error: unknown command \"" + verb + "\" (scale, show)";
}

}  // namespace

int ServeNodeLinks(const NodeLinksOptions& options, int input, std::ostream& out, std::ostream& err,
                   const std::atomic<bool>& interrupted) {
  std::optional<ClusterProfile> profile = LoadProfile(options.nodes_path, err);
  if (!profile) return kExitInvalid;
  std::vector<WorkerSlot> slots;
  for (const std::string& name : options.nodes) {
    const auto node = std::find_if(profile->nodes.begin(), profile->nodes.end(),
                                   [&](const NodeProfile& n) { return n.name == name; });
    if (node == profile->nodes.end()) {
      err << "error: " << options.nodes_path << " has no node \"" << name << "\"\n";
      return kExitInvalid;
    }
    slots.push_back({static_cast<int>(slots.size()), node->name, node->slowdown, node->link, node->power});
  }
  RemoveLeftovers(err, options.link_command_timeout);
  RealClock clock;
  auto links = NetnsLinks::Create(slots, clock, {options.subnet, options.host_link, options.link_command_timeout});
  if (!links.ok()) {
    err << "error: " << links.status().message() << "\n";
    return ExitCodeFor(links.status());
  }
  (*links)->StartShaping();
  for (size_t rank = 0; rank < slots.size(); ++rank) {
    const std::string& address = (*links)->WorkerAddress(static_cast<int>(rank));
    out << "node " << slots[rank].node << " namespace=" << (*links)->WorkerNamespace(static_cast<int>(rank))
        << " address=" << address << " gateway=" << (*links)->HubAddress(static_cast<int>(rank))
        << " pods=" << address.substr(0, address.rfind('.')) << ".0/24\n";
  }
  if (options.host_link) out << "host address=" << (*links)->HostAddress() << "\n";
  out << "ready" << std::endl;
  LineReader commands(input);
  while (!interrupted.load()) {
    if (Status health = (*links)->health(); !health.ok()) {
      err << "error: " << health.message() << "\n";
      return kExitFailed;
    }
    const std::optional<std::string> line = commands.Next();
    if (!line) break;  // the emulator has gone: take the links down with it
    if (!line->empty()) out << Answer(**links, options.nodes, *line) << std::endl;
  }
  return kExitOk;
}

}  // namespace edgetrain::cli

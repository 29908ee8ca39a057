#include "cli/netns_links.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "agent/storage/atomic_file.h"
#include "cli/kernel_command.h"

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;

// tbf has no rate 0: a link that is down in its trace keeps a trickle this thin.
constexpr double kFloorMbps = 0.01;
constexpr int kMaxWorkers = 250;  // one 10.<subnet>.<rank>.0/24 per worker
constexpr int kHostLinkOctet = 254;  // 10.<subnet>.254.0/30: the host link
constexpr std::chrono::milliseconds kStopCheckEvery{50};
// The option of every command that lays out links which sets how long each
// `ip` or `tc` may take.
constexpr char kLimitFlag[] = "--link-command-timeout";

// A namespace made by this run, or an error that says what to do when one of
// that name is there already: it is not this run's to remove (an earlier
// version deleted it on its way out: a user's trial).
Status AddNamespace(const std::string& name, Duration timeout) {
  Status added = RunKernelCommand({"ip", "netns", "add", name}, timeout, kLimitFlag);
  if (!added.ok() && fs::exists("/var/run/netns/" + name)) {
    return FailedPreconditionError(added.message() + ": a network namespace of that name is there already, not made "
                                   "by this run; remove it (ip netns del " + name + ") if nothing uses it");
  }
  return added;
}

std::string Rate(double mbps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0fkbit", std::max(kFloorMbps, mbps) * 1000);
  return buf;
}

// A burst of at least 32 kB, and at least 4 ms at the rate: tbf needs one
// timer tick's worth of bytes to reach its rate.
std::string Burst(double mbps) {
  double bytes = std::max(32.0 * 1024, std::max(kFloorMbps, mbps) * 1e6 / 8 * 0.004);
  return std::to_string(static_cast<int64_t>(bytes));
}

}  // namespace

struct NetnsLinks::Link {
  std::string ns;
  std::string hub_if;  // in the hub: shapes the downlink
  std::string dev_if;  // in the worker's namespace: shapes the uplink
  std::string hub_addr;
  std::string dev_addr;
  std::optional<BandwidthTrace> trace;
  mutable std::mutex mu;
  double mbps = -1;     // current rate, -1 while unshaped; guarded by mu
  double factor = 1;    // the trace's multiplier (a fault's), guarded by mu
};

std::vector<std::string> NetnsLinks::RemoveStale(Duration command_timeout) {
  std::vector<std::string> removed;
  if (::geteuid() != 0) return removed;  // only root made any
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/var/run/netns", ec)) {
    const std::string name = entry.path().filename();
    // Ours: et<pid>-hub, et<pid>-w<rank>.
    if (name.rfind("et", 0) != 0 || name.find('-') == std::string::npos) continue;
    const std::string pid = name.substr(2, name.find('-') - 2);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (fs::exists("/proc/" + pid)) continue;
    if (RunKernelCommand({"ip", "netns", "del", name}, command_timeout, kLimitFlag).ok()) removed.push_back(name);
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

StatusOr<std::unique_ptr<NetnsLinks>> NetnsLinks::Create(const std::vector<WorkerSlot>& slots, Clock& clock,
                                                          NetnsOptions options) {
  if (::geteuid() != 0) return FailedPreconditionError("--links netns needs root (network namespaces and tc)");
  if (slots.size() > static_cast<size_t>(kMaxWorkers)) {
    return InvalidArgumentError("--links netns emulates at most " + std::to_string(kMaxWorkers) + " workers");
  }
  if (options.subnet < 1 || options.subnet > 254) return InvalidArgumentError("the links' subnet is 10.1-254.0.0/16");
  std::unique_ptr<NetnsLinks> links(new NetnsLinks(clock, options.command_timeout));
  if (Status built = links->Build(slots, options); !built.ok()) return built;  // the destructor removes what was made
  return links;
}

Status NetnsLinks::Build(const std::vector<WorkerSlot>& slots, const NetnsOptions& options) {
  prefix_ = "et" + std::to_string(::getpid());
  // Named only once made: what is named is what the destructor removes.
  const std::string hub = prefix_ + "-hub";
  EDGETRAIN_RETURN_IF_ERROR(AddNamespace(hub, command_timeout_));
  hub_ = hub;
  EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "-n", hub_, "link", "set", "lo", "up"}));
  // The hub forwards between workers, as an access point does.
  EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "netns", "exec", hub_, "sysctl", "-qw", "net.ipv4.ip_forward=1"}));
  // First, so that an emulator whose subnet the host already routes fails at once.
  if (options.host_link) EDGETRAIN_RETURN_IF_ERROR(BuildHostLink(options));
  const std::string net = "10." + std::to_string(options.subnet) + ".";
  for (size_t rank = 0; rank < slots.size(); ++rank) {
    auto link = std::make_unique<Link>();
    const std::string r = std::to_string(rank);
    link->ns = prefix_ + "-w" + r;
    link->hub_if = prefix_ + "h" + r;
    link->dev_if = prefix_ + "d" + r;
    link->hub_addr = net + r + ".1";
    link->dev_addr = net + r + ".2";
    if (slots[rank].link) {
      const LinkSpec& spec = *slots[rank].link;
      EDGETRAIN_ASSIGN_OR_RETURN(std::string text, agent::ReadWholeFile(spec.trace_path));
      EDGETRAIN_ASSIGN_OR_RETURN(BandwidthTrace trace, BandwidthTrace::Parse(text, spec.trace_path));
      link->trace = trace.Shifted(spec.offset_s).Scaled(spec.scale);
    }
    EDGETRAIN_RETURN_IF_ERROR(AddNamespace(link->ns, command_timeout_));
    links_.push_back(std::move(link));
    const Link& l = *links_.back();
    EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "-n", l.ns, "link", "set", "lo", "up"}));
    EDGETRAIN_RETURN_IF_ERROR(Run(
        {"ip", "link", "add", l.hub_if, "netns", hub_, "type", "veth", "peer", "name", l.dev_if, "netns", l.ns}));
    EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "-n", hub_, "addr", "add", l.hub_addr + "/30", "dev", l.hub_if}));
    EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "-n", hub_, "link", "set", l.hub_if, "up"}));
    EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "-n", l.ns, "addr", "add", l.dev_addr + "/30", "dev", l.dev_if}));
    EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "-n", l.ns, "link", "set", l.dev_if, "up"}));
    EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "-n", l.ns, "route", "add", "default", "via", l.hub_addr}));
    // Addresses added in the worker's namespace (the node emulator's pods) are
    // reached through its link, as a node's pod range is.
    EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "-n", hub_, "route", "add", net + r + ".0/24", "via", l.dev_addr}));
    if (l.trace) {
      std::lock_guard lock(links_.back()->mu);
      EDGETRAIN_RETURN_IF_ERROR(SetRate(*links_.back(), l.trace->MbpsAt(0)));
    }
  }
  return Status::Ok();
}

Status NetnsLinks::BuildHostLink(const NetnsOptions& options) {
  const std::string net = "10." + std::to_string(options.subnet) + ".";
  const std::string hub_end = prefix_ + "hu";
  const std::string hub_addr = net + std::to_string(kHostLinkOctet) + ".2";
  const std::string host_addr = net + std::to_string(kHostLinkOctet) + ".1";
  host_if_ = prefix_ + "u";
  EDGETRAIN_RETURN_IF_ERROR(
      Run({"ip", "link", "add", host_if_, "type", "veth", "peer", "name", hub_end, "netns", hub_}));
  EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "addr", "add", host_addr + "/30", "dev", host_if_}));
  EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "link", "set", host_if_, "up"}));
  EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "-n", hub_, "addr", "add", hub_addr + "/30", "dev", hub_end}));
  EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "-n", hub_, "link", "set", hub_end, "up"}));
  EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "-n", hub_, "route", "add", "default", "via", host_addr}));
  // Fails with "File exists" when another emulator holds the subnet.
  EDGETRAIN_RETURN_IF_ERROR(Run({"ip", "route", "add", net + "0.0/16", "via", hub_addr}));
  host_addr_ = host_addr;
  return Status::Ok();
}

Status NetnsLinks::SetRate(Link& l, std::optional<double> mbps) {
  if (mbps ? l.mbps == *mbps : l.mbps < 0) return Status::Ok();
  for (const auto& [ns, dev] : {std::pair{l.ns, l.dev_if}, std::pair{hub_, l.hub_if}}) {
    std::vector<std::string> tc = {"ip", "netns", "exec", ns, "tc", "qdisc"};
    if (!mbps) {
      tc.insert(tc.end(), {"del", "dev", dev, "root"});
    } else {
      tc.insert(tc.end(), {l.mbps < 0 ? "add" : "change", "dev", dev, "root", "tbf", "rate", Rate(*mbps), "burst",
                           Burst(*mbps), "latency", "50ms"});
    }
    EDGETRAIN_RETURN_IF_ERROR(Run(tc));
  }
  l.mbps = mbps.value_or(-1);
  return Status::Ok();
}

NetnsLinks::NetnsLinks(Clock& clock, Duration command_timeout) : clock_(clock), command_timeout_(command_timeout) {}

Status NetnsLinks::Run(const std::vector<std::string>& argv) const {
  return RunKernelCommand(argv, command_timeout_, kLimitFlag);
}

NetnsLinks::~NetnsLinks() {
  stop_ = true;
  if (shaper_.joinable()) shaper_.join();
  // Deleting a namespace removes its veth end (and so the pair) and its qdiscs.
  for (const auto& l : links_) (void)Run({"ip", "netns", "del", l->ns});
  if (!hub_.empty()) (void)Run({"ip", "netns", "del", hub_});
}

void NetnsLinks::StartShaping() {
  start_ = clock_.Now();
  shaper_ = std::thread([this] { Shape(); });
}

std::optional<double> NetnsLinks::WantedMbps(const Link& l, double t) {
  if (l.trace) return l.trace->MbpsAt(t) * l.factor;
  if (l.factor != 1) return 0.0;  // a cut wired link: the trickle of a trace at 0
  return std::nullopt;
}

Status NetnsLinks::SetScale(int rank, double factor) {
  if (rank < 0 || rank >= static_cast<int>(links_.size())) return InvalidArgumentError("no link " + std::to_string(rank));
  Link& l = *links_[rank];
  if (factor < 0) return InvalidArgumentError("a link's scale is >= 0");
  if (!l.trace && factor != 0 && factor != 1) {
    return FailedPreconditionError("an unshaped link can be cut (0) and restored (1), not rescaled");
  }
  std::lock_guard lock(l.mu);
  l.factor = factor;
  // Now, not at the shaper's next step, so that the caller knows it took.
  return SetRate(l, WantedMbps(l, ToSeconds(clock_.Now() - start_)));
}

std::string NetnsLinks::HostAddress() const { return host_addr_; }

Status NetnsLinks::health() const {
  std::lock_guard lock(health_mu_);
  return health_;
}

void NetnsLinks::Shape() {
  const TimePoint start = start_;
  while (!stop_.load()) {
    const double t = ToSeconds(clock_.Now() - start);
    double next = t + 1.0;
    for (const auto& l : links_) {
      if (l->trace) next = std::min(next, l->trace->SegmentAt(t).until);
      std::lock_guard lock(l->mu);
      if (Status changed = SetRate(*l, WantedMbps(*l, t)); !changed.ok()) {
        std::lock_guard health_lock(health_mu_);
        health_ = changed.WithContext("the links stopped following their traces");
        return;
      }
    }
    // Sleep to the next change in any trace, waking often enough to stop promptly.
    const TimePoint wake = start + FromSeconds(next);
    while (!stop_.load() && clock_.Now() < wake) clock_.SleepUntil(std::min(wake, clock_.Now() + kStopCheckEvery));
  }
}

std::vector<std::string> NetnsLinks::InWorker(int rank, const std::vector<std::string>& argv) const {
  std::vector<std::string> out = {"/usr/bin/ip", "netns", "exec", links_[rank]->ns};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::vector<std::string> NetnsLinks::InHub(const std::vector<std::string>& argv) const {
  std::vector<std::string> out = {"/usr/bin/ip", "netns", "exec", hub_};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::string NetnsLinks::WorkerNamespace(int rank) const { return links_[rank]->ns; }
std::string NetnsLinks::HubAddress(int rank) const { return links_[rank]->hub_addr; }
std::string NetnsLinks::WorkerAddress(int rank) const { return links_[rank]->dev_addr; }
std::string NetnsLinks::WorkerInterface(int rank) const { return links_[rank]->dev_if; }

double NetnsLinks::UplinkMbps(int rank) const {
  std::lock_guard lock(links_[rank]->mu);
  return links_[rank]->mbps;
}
double NetnsLinks::DownlinkMbps(int rank) const { return UplinkMbps(rank); }

std::vector<std::string> NetnsLinks::Namespaces() const {
  std::vector<std::string> names;
  if (!hub_.empty()) names.push_back(hub_);
  for (const auto& l : links_) names.push_back(l->ns);
  return names;
}

bool NetnsLinks::EnterHub() const {
  int fd = ::open(("/var/run/netns/" + hub_).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool entered = ::setns(fd, CLONE_NEWNET) == 0;
  ::close(fd);
  return entered;
}

}  // namespace edgetrain::cli

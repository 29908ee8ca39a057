#pragma once

#include <atomic>
#include <ostream>
#include <string>
#include <vector>

#include "cli/kernel_command.h"

namespace edgetrain::cli {

// `edgetrain node-links`, a private command of the node emulator
// (tests/kube/README.md): as root, the kernel-shaped links of NetnsLinks for
// the named nodes of a cluster profile, laid out as a K3s site (each node a
// namespace, pods' addresses routed to it, a link from the host), held until
// its standard input closes or it gets SIGTERM, then removed.
//
// It prints, then `ready`:
//   node NAME namespace=NS address=A gateway=G pods=10.S.R.0/24   (per node)
//   host address=10.S.254.1                                       (--host-link)
// and answers each line on its standard input with one line, `ok ...` or
// `error: ...`:
//   scale NODE FACTOR   the node's trace times FACTOR from now (0 cuts, 1 restores)
//   show NODE           its link's rate now: `ok mbps=X`, or `ok unshaped`
struct NodeLinksOptions {
  std::string nodes_path;
  std::vector<std::string> nodes;
  int subnet = 77;
  bool host_link = false;
  // How long each `ip` or `tc` that lays out or shapes the links may take.
  Duration link_command_timeout = kDefaultLinkCommandTimeout;
};
// `input` is the file descriptor commands are read from.
int ServeNodeLinks(const NodeLinksOptions& options, int input, std::ostream& out, std::ostream& err,
                   const std::atomic<bool>& interrupted);

}  // namespace edgetrain::cli

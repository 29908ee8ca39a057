#pragma once
// What the agents' transport costs beyond the links: a message between stages
// crosses a gRPC stream to the head and another on, each with a thread at
// either end to wake (docs/pipeline.md, "The runtime"). On this machine a
// stage of the MLP computes in about a millisecond, and the messages of its
// step took about as long again. `edgetrain-agent profile-layers` measures
// both figures on a loopback stream beside the layers; 0: not measured, and
// not counted.
namespace edgetrain {

struct TransportCost {
  double message_s = 0;    // a message, from the sender's thread to the receiver's, its bytes aside
  double bytes_per_s = 0;  // what a stream moves a second with no link to limit it; 0: not limited
};

}  // namespace edgetrain

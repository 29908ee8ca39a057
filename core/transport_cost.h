#pragma once
// What the agents' transport costs beyond the links: a message between stages
// crosses a gRPC stream to the head and another on, each with a thread at
// either end to wake (docs/pipeline.md, "The runtime"): tens of
// microseconds a message on this machine, against a millisecond of the MLP's
// compute a step, where the planner that left them out split the MLP over two
// devices and trained at a third of its prediction. `edgetrain-agent
// profile-layers` measures both figures on a loopback stream beside the
// layers; 0: not measured, and not counted.
namespace edgetrain {

struct TransportCost {
  double message_s = 0;    // a message, from the sender's thread to the receiver's, its bytes aside
  double bytes_per_s = 0;  // what a stream moves a second with no link to limit it; 0: not limited
  // The head's word to a stage each step and its answer, as a run paid them
  // (core/step_orders.h): learned by the head for its re-plans, never in a
  // profile. 0: two messages at message_s.
  double orders_s = 0;

  // What the word and the answer cost a step: as learned, else two messages.
  double OrdersSeconds() const { return orders_s > 0 ? orders_s : 2 * message_s; }
};

}  // namespace edgetrain

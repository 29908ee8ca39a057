#include "agent/transport/transport.h"

namespace edgetrain::agent {
namespace {
constexpr std::string_view kBehindPlan = "the coordinator has not adopted plan generation ";
}  // namespace

bool CoordinatorBehindPlan(const Status& refusal) {
  return refusal.code() == StatusCode::kUnavailable && refusal.message().rfind(kBehindPlan, 0) == 0;
}

v1::Hello MakeHello(const std::string& job, int64_t plan_generation, int rank) {
  v1::Hello hello;
  hello.set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
  hello.set_job(job);
  hello.set_plan_generation(plan_generation);
  hello.set_rank(rank);
  return hello;
}

Status CheckSlotHeld(int64_t generation, int64_t slot_since, int64_t plan_generation) {
  if (generation >= slot_since) return Status::Ok();
  return FailedPreconditionError("plan generation " + std::to_string(generation) + " is not the current " +
                                 std::to_string(plan_generation) +
                                 "; the job was re-planned, restart with the new plan");
}

Status CheckHello(const v1::Hello& hello, const std::string& job, int64_t slot_since, int64_t plan_generation,
                  int world) {
  if (hello.protocol_version() != v1::PROTOCOL_VERSION_CURRENT) {
    return FailedPreconditionError("protocol version " + std::to_string(hello.protocol_version()) +
                                   " is not this coordinator's " + std::to_string(v1::PROTOCOL_VERSION_CURRENT) +
                                   "; run the same edgetrain version on every node");
  }
  if (hello.job() != job) {
    return FailedPreconditionError("this coordinator trains job \"" + job + "\", not \"" + hello.job() + "\"");
  }
  if (hello.plan_generation() > plan_generation) {
    // The worker's plan is newer than ours: our copy (a mounted ConfigMap the
    // kubelet refreshes in its own time) has not caught up yet. It retries.
    return UnavailableError(std::string(kBehindPlan) + std::to_string(hello.plan_generation()) + " yet (it has " +
                            std::to_string(plan_generation) + ")");
  }
  EDGETRAIN_RETURN_IF_ERROR(CheckSlotHeld(hello.plan_generation(), slot_since, plan_generation));
  if (hello.rank() < 0 || hello.rank() >= world) {
    return FailedPreconditionError("rank " + std::to_string(hello.rank()) + " is outside this job's " +
                                   std::to_string(world) + " workers");
  }
  return Status::Ok();
}

}  // namespace edgetrain::agent

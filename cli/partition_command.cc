#include "cli/partition_command.h"

#include <nlohmann/json.hpp>

#include "agent/data/dataset.h"
#include "cli/job_loading.h"
#include "core/partition.h"

namespace edgetrain::cli {

int PrintPartition(const std::string& manifest_path, std::ostream& out, std::ostream& err) {
  api::TrainingJobManifest job;
  api::SupportCheck support;
  if (int code = LoadJob(manifest_path, err, job, support); code != kExitOk) return code;
  auto data = agent::LoadData(job.spec.data, agent::DefaultDataSearchPath());
  if (!data.ok()) {
    err << "error: " << data.status().message() << "\n";
    return kExitFailed;
  }
  auto parts = PartitionSamples(data->train.labels, data->train.info.classes, job.spec.parallelism.workers,
                                job.spec.data.partition, job.spec.seed);
  out << nlohmann::json({{"job", job.name}, {"dataset", DescribeData(job.spec.data)}, {"parts", parts}}).dump() << "\n";
  return kExitOk;
}

}  // namespace edgetrain::cli

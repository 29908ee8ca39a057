#include "api/crd.h"

#include "api/embedded_text.h"
#include "api/yaml_json.h"

namespace edgetrain::api {

std::string_view TrainingJobCrdText() { return kTrainingJobCrdText; }

StatusOr<nlohmann::json> TrainingJobSchema() {
  static const StatusOr<nlohmann::json> schema = []() -> StatusOr<nlohmann::json> {
    EDGETRAIN_ASSIGN_OR_RETURN(auto docs, ParseYamlDocuments(kTrainingJobCrdText, "crds/trainingjob.yaml"));
    if (docs.size() != 1) return InternalError("crds/trainingjob.yaml: expected one document");
    for (const auto& version : docs[0]["spec"]["versions"]) {
      if (version.value("name", "") == kVersion) return version["schema"]["openAPIV3Schema"];
    }
    return InternalError("crds/trainingjob.yaml: no version v1alpha1");
  }();
  return schema;
}

}  // namespace edgetrain::api

#pragma once
// Which kind of object a request is about, and where it lives in the API's
// URL space: /api/v1/... for the core group, /apis/GROUP/VERSION/... else;
// namespaced kinds under namespaces/NS/.

#include <string>

namespace edgetrain::kube {

struct ResourceType {
  std::string group;    // "" for the core group
  std::string version;
  std::string plural;   // the URL's name: "pods", "trainingjobs"
  std::string kind;     // "Pod", "TrainingJob"
  bool namespaced = true;

  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
  // The collection: all namespaces when `ns` is empty (or the kind is cluster-scoped).
  std::string CollectionPath(const std::string& ns) const {
    std::string path = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
    if (namespaced && !ns.empty()) path += "/namespaces/" + ns;
    return path + "/" + plural;
  }
  // One object, or its `subresource` ("status").
  std::string ObjectPath(const std::string& ns, const std::string& name, const std::string& subresource = "") const {
    return CollectionPath(ns) + "/" + name + (subresource.empty() ? "" : "/" + subresource);
  }
};

inline const ResourceType kTrainingJobs{"edgetrain.dev", "v1alpha1", "trainingjobs", "TrainingJob", true};
inline const ResourceType kPods{"", "v1", "pods", "Pod", true};
inline const ResourceType kServices{"", "v1", "services", "Service", true};
inline const ResourceType kConfigMaps{"", "v1", "configmaps", "ConfigMap", true};
inline const ResourceType kSecrets{"", "v1", "secrets", "Secret", true};
inline const ResourceType kNodes{"", "v1", "nodes", "Node", false};
inline const ResourceType kEvents{"", "v1", "events", "Event", true};
inline const ResourceType kPersistentVolumeClaims{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true};
inline const ResourceType kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false};
inline const ResourceType kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true};

}  // namespace edgetrain::kube

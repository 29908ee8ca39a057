#pragma once
// A YAML scalar's JSON value as kubectl gives it: `kubectl apply` reads YAML
// with go-yaml v2 (through sigs.k8s.io/yaml) and sends JSON, so a manifest
// means to `edgetrain run` what it means on the cluster. That is YAML 1.1's
// typing, not 1.2's: `010` is 8 (octal) and `0x10` 16, `1_000` is 1000, `y`
// and `off` are booleans; and a float with no fraction reaches the API
// server as an integer (`epochs: 3.0` is 3). Read otherwise, `seed: 017`
// trained seed 17 here and 15 there, without a word (a user's trial).

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace edgetrain::api {

// A plain (unquoted, untagged) scalar: null, a boolean, an integer, a
// number, or the text itself. A number beyond a double is infinite, which
// the caller refuses (JSON has no infinity).
nlohmann::json ResolvePlainScalar(std::string_view text);

// A scalar with an explicit tag, as yaml-cpp names it ("!" for a quoted one,
// "tag:yaml.org,2002:int" for !!int, "!foo" for a local one): the value the
// tag asks for, or InvalidArgument saying why it cannot be (!!int on 3.5, or
// a tag kubectl does not read as JSON).
StatusOr<nlohmann::json> ResolveTaggedScalar(std::string_view tag, std::string_view text);

// A Kubernetes quantity as a manifest or a profile wrote it: a string ("4Gi",
// "1500m"), or a number YAML typed as one (`cpu: 2`), as its text.
inline std::string QuantityText(const nlohmann::json& q) { return q.is_string() ? q.get<std::string>() : q.dump(); }

}  // namespace edgetrain::api

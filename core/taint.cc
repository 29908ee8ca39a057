#include "core/taint.h"

namespace edgetrain {

bool Tolerates(const Toleration& t, const Taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (t.key.empty()) return t.op == "Exists";  // an empty key matches every key, with Exists only
  if (t.key != taint.key) return false;
  if (t.op == "Exists") return true;
  return t.value == taint.value;
}

bool ToleratesAll(const std::vector<Toleration>& tolerations, const Taint& taint) {
  for (const Toleration& t : tolerations) {
    if (Tolerates(t, taint)) return true;
  }
  return false;
}

}  // namespace edgetrain

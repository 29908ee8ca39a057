// The environment's say on where data sets live, apart from the loaders so
// that only programs' edges (mains, tests) read it.
#include <cstdlib>
#include <string>

#include "agent/data/dataset.h"

namespace edgetrain::agent {

std::string DefaultDataDir() {
  if (const char* dir = std::getenv("EDGETRAIN_DATA_DIR"); dir && *dir) return dir;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache) return std::string(cache) + "/edgetrain/datasets";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/edgetrain/datasets";
  return "";
}

DataSearchPath DefaultDataSearchPath() { return SearchPathWith(DefaultDataDir()); }

}  // namespace edgetrain::agent

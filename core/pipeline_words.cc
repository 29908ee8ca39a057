#include "core/pipeline_words.h"

#include <iomanip>
#include <sstream>

namespace edgetrain {

std::string OrdersNote(const TransportCost& transport, size_t steps) {
  if (transport.orders_s <= 0) return "";
  std::ostringstream note;
  note << std::fixed << std::setprecision(2) << " (the head's word and the stages' answers "
       << transport.orders_s * 1e3 << " ms a step, as the run's last " << steps
       << " steps took them; two messages as profiled, " << 2 * transport.message_s * 1e3 << " ms)";
  return note.str();
}

std::string SayRanks(const std::vector<int>& ranks) {
  std::string said = ranks.size() > 1 ? "ranks " : "rank ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    said += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  }
  return said;
}

std::string SayPaces(const std::map<int, double>& paces) {
  std::ostringstream said;
  for (const auto& [r, pace] : paces) {
    said << (said.tellp() > 0 ? ", " : "") << "rank " << r << " " << std::fixed << std::setprecision(2) << pace << "x";
  }
  return said.str();
}

std::string DriftNote(std::optional<int> drifted) {
  if (!drifted) return "";
  return " (ended as rank " + std::to_string(*drifted) + "'s compute changed: its steps since count)";
}

std::string Seconds3(double seconds) {
  std::ostringstream said;
  said << std::setprecision(3) << seconds;
  return said.str();
}

std::string LeavingOut(const std::vector<int>& ranks) {
  std::ostringstream said;
  for (int r : ranks) said << (said.tellp() > 0 ? ", " : "") << "rank " << r;
  return ranks.empty() ? std::string() : ", leaving " + said.str() + " out";
}

std::string DescribeStagesOf(std::span<const PipelineStage> stages) {
  std::ostringstream out;
  for (size_t s = 0; s < stages.size(); ++s) {
    out << (s ? " | " : "") << "layers " << stages[s].first_layer << "-" << stages[s].end_layer - 1 << " on rank"
        << (stages[s].devices.size() > 1 ? "s " : " ");
    for (size_t j = 0; j < stages[s].devices.size(); ++j) out << (j ? "," : "") << stages[s].devices[j];
  }
  return out.str();
}

std::string SayStageSeconds(std::span<const StageMeasure> stages) {
  std::ostringstream said;
  for (size_t s = 0; s < stages.size(); ++s) {
    said << (s ? ", " : "") << "stage " << s + 1 << " " << Seconds3(stages[s].seconds) << " s";
  }
  return said.str();
}

}  // namespace edgetrain

// Pushed gradient rows, decoded and applied by the coordinator's model
// (core/row_aggregator.h): whatever a worker sends, nothing crashes, a push is
// applied whole or refused whole, and no NaN or infinity ever reaches the
// model; a push of an iteration its worker cannot be at is refused. The input is a script of pushes: each a worker, an iteration and rows
// (an id, an encoding, a scale and the bytes of its values) — what a
// WorkerMessage carries once protobuf has parsed it.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/row_aggregator.h"

namespace {

using namespace edgetrain;

// Reads the script's bytes in order; past the end, zeros.
class Script {
 public:
  Script(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return at_ >= size_; }
  uint8_t Byte() { return at_ < size_ ? data_[at_++] : 0; }
  float Float() {
    uint32_t bits = 0;
    for (int i = 0; i < 4; ++i) bits = bits << 8 | Byte();
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  std::string Bytes(size_t n) {
    n = std::min(n, size_ - std::min(at_, size_));
    std::string out(reinterpret_cast<const char*>(data_ + at_), n);
    at_ += n;
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

void Require(bool holds, const char* what) {
  if (!holds) {
    std::fprintf(stderr, "row_push_fuzzer: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Script script(data, size);
  // A small model of three tensors (a 4x16 matrix in rows, a bias, a 2x16
  // matrix), two workers, policies by the first byte.
  const RowLayout layout({{4, 16}, {16}, {2, 16}}, SyncGranularity::kRow);
  const uint8_t setup = script.Byte();
  OptimizerSpec optimizer;
  optimizer.kind = setup & 1 ? OptimizerKind::kAdam : OptimizerKind::kSgd;
  optimizer.learning_rate = 0.01;
  const int bound = setup >> 1 & 3;  // 0: BSP's
  std::vector<float> initial(static_cast<size_t>(layout.total_floats()), 0.5f);
  StalenessLedger ledger(2, layout.size(), bound);
  RowAggregator model(layout, optimizer, initial);

  for (int push = 0; push < 64 && !script.done(); ++push) {
    const int worker = script.Byte() % 3;  // 2 is no worker of the team
    const int64_t iteration = static_cast<int64_t>(script.Byte()) - 8;
    const size_t count = script.Byte() % 8;
    std::vector<std::string> values(count);
    std::vector<PushedRow> rows(count);
    for (size_t i = 0; i < count; ++i) {
      rows[i].id = script.Byte() % (layout.size() + 2);  // some past the last row
      rows[i].encoding = static_cast<RowEncoding>(script.Byte() % 7);  // 6 is no encoding
      rows[i].scale = script.Float();
      values[i] = script.Bytes(script.Byte());
      rows[i].values = values[i];
    }
    if (worker >= 2) continue;  // the service refuses an unknown worker before the model sees it
    std::vector<int64_t> versions_before;
    for (size_t r = 0; r < layout.size(); ++r) versions_before.push_back(model.version(r));
    StatusOr<bool> stepped = model.ApplyPush(worker, iteration, rows, ledger);
    if (!stepped.ok()) {
      Require(!model.refusal().empty(), "a refused push names why");
      for (size_t r = 0; r < layout.size(); ++r) {
        Require(model.version(r) == versions_before[r], "a refused push stepped a row");
      }
    }
    // Between pushes: rows whose clocks moved step, under the deadline policy
    // a round may close without a worker, and the coordinator may send every
    // row to both workers (what was sent bounds the iterations they can push).
    const uint8_t between = script.Byte();
    if (between & 1) model.StepMovedRows(ledger);
    if (between & 2) model.CloseRoundsAtDeadlines();
    if (between & 4) {
      for (int w = 0; w < 2; ++w) {
        for (size_t r = 0; r < layout.size(); ++r) ledger.RecordSent(w, r);
      }
    }
    for (float v : model.parameters()) Require(std::isfinite(v), "a NaN or an infinity reached the model");
  }
  return 0;
}

// bench/row-codec: how long the row codec (core/row_codec.h) takes over a
// whole model's rows, for each encoding. A round of a team codes the model
// many times over: each worker encodes its push and decodes it again for its
// residual, the coordinator decodes every push and encodes, then decodes, a
// difference for every worker, and each worker adds that difference to its
// copy. With small models and fast links this, not the link, sets the round
// (docs/benchmarks.md, "bench/row-codec"). Prints a line per encoding, then
// the final JSON line.
//
//   edgetrain-row-codec [--repeats N] [--seed N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/median.h"
#include "core/row_codec.h"

namespace edgetrain {
namespace {

// The rows of the examples' MLP [128, 64] on Fashion-MNIST: a row is a unit's
// incoming weights, then the biases of each layer.
std::vector<int> MlpRowLengths() {
  std::vector<int> rows;
  const int widths[] = {784, 128, 64, 10};
  for (int layer = 0; layer + 1 < 4; ++layer) {
    rows.insert(rows.end(), static_cast<size_t>(widths[layer + 1]), widths[layer]);
    rows.push_back(widths[layer + 1]);
  }
  return rows;
}

// Microseconds for one pass of `code` over the model, the median of `repeats`.
template <typename Code>
double TimePass(int repeats, Code code) {
  std::vector<double> us;
  for (int r = 0; r < repeats; ++r) {
    const auto began = std::chrono::steady_clock::now();
    code();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - began).count());
  }
  return bench::Median(us);
}

}  // namespace
}  // namespace edgetrain

int main(int argc, char** argv) {
  using namespace edgetrain;
  CLI::App app{"How long the row codec takes over a whole model's rows, for each encoding"};
  int repeats = 200;
  uint64_t seed = 1;
  app.add_option("--repeats", repeats, "passes timed per figure (their median is reported)")->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "the gradients' seed");
  CLI11_PARSE(app, argc, argv);

  const std::vector<int> lengths = MlpRowLengths();
  size_t total = 0;
  for (int n : lengths) total += static_cast<size_t>(n);
  // Gradient-like values: mostly small, of both signs, a few large.
  std::mt19937_64 random(seed);
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  std::vector<float> values(total);
  for (float& v : values) v = normal(random);
  std::vector<float> out(total, 0.0f);

  nlohmann::json result = {{"model", "mlp [128, 64], fashion-mnist"},
                           {"rows", lengths.size()},
                           {"values", total},
                           {"repeats", repeats}};
  const std::pair<const char*, RowEncoding> encodings[] = {
      {"float16", RowEncoding::kFloat16}, {"int8", RowEncoding::kInt8}, {"int4", RowEncoding::kInt4},
      {"sign", RowEncoding::kSign},       {"topk", RowEncoding::kTopK}};
  for (const auto& [name, encoding] : encodings) {
    std::vector<EncodedRow> encoded(lengths.size());
    auto each_row = [&](auto step) {
      size_t at = 0;
      for (size_t r = 0; r < lengths.size(); ++r) {
        step(r, at, static_cast<size_t>(lengths[r]));
        at += static_cast<size_t>(lengths[r]);
      }
    };
    const double encode_us = TimePass(repeats, [&] {
      each_row([&](size_t r, size_t at, size_t n) {
        encoded[r] = EncodeRow(std::span<const float>(values.data() + at, n), encoding);
      });
    });
    bool ok = true;
    const double decode_us = TimePass(repeats, [&] {
      each_row([&](size_t r, size_t at, size_t n) {
        ok &= DecodeRow(encoding, encoded[r].scale, encoded[r].bytes, std::span<float>(out.data() + at, n)).ok();
      });
    });
    const double add_us = TimePass(repeats, [&] {
      each_row([&](size_t r, size_t at, size_t n) {
        ok &= AddDecodedRow(encoding, encoded[r].scale, encoded[r].bytes, std::span<float>(out.data() + at, n)).ok();
      });
    });
    if (!ok) {
      std::fprintf(stderr, "%s: a row did not decode\n", name);
      return 1;
    }
    std::printf("%-8s encode %7.1f us  decode %7.1f us  add-decode %7.1f us  (a model of %zu values; %.2f ns a value encoded)\n",
                name, encode_us, decode_us, add_us, total, 1000 * encode_us / static_cast<double>(total));
    result[name] = {{"encode_us", encode_us}, {"decode_us", decode_us}, {"add_decode_us", add_us}};
  }
  std::printf("%s\n", result.dump().c_str());
  return 0;
}

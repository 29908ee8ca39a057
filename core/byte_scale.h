#pragma once
// Bytes made floats, each times a scale: how an image's grey levels become a
// model's input, for every sample of every batch a device trains on. Here,
// in core, so that the loop is vectorised (core's build asks the compiler to;
// the agent's -O2 left it a byte at a time). On the Fashion-MNIST MLP's
// pipeline stage it took 3.8% of the stage's CPU samples a byte at a time and
// 2.8% vectorised (perf, 2026-11-29): the rest is reading the batch's
// shuffled samples from memory.

#include <cstdint>
#include <span>

namespace edgetrain {

// out[i] = in[i] * scale, for every i of `in`; `out` holds as many floats.
void ScaleBytes(std::span<const uint8_t> in, float scale, float* out);

}  // namespace edgetrain

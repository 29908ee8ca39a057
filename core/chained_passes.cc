#include "core/chained_passes.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace edgetrain {
namespace {

const LayerPass* AtSize(std::span<const LayerPass> passes, int samples) {
  const auto at = std::find_if(passes.begin(), passes.end(), [&](const LayerPass& p) { return p.samples == samples; });
  return at == passes.end() ? nullptr : &*at;
}

}  // namespace

std::vector<LayerPass> StageOwnPasses(const LayerCost& last, std::span<const LayerPass> alone) {
  std::vector<LayerPass> own;
  for (const LayerPass& stage : alone) {
    const LayerPass* layer = AtSize(last.passes, stage.samples);
    if (!layer) continue;
    own.push_back({stage.samples, std::max(0.0, stage.forward_s - layer->forward_s),
                   std::max(0.0, stage.backward_s - layer->backward_s)});
  }
  return own;
}

void ScaleToTheChain(std::vector<LayerCost>& layers, std::span<const LayerPass> chained, StagePassCost& own) {
  std::vector<int> sizes;
  for (const LayerCost& l : layers) {
    for (const LayerPass& p : l.passes) sizes.push_back(p.samples);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::optional<std::pair<double, double>> ratios;  // forward and backward
  for (int samples : sizes) {
    double forward = 0, backward = 0;
    std::vector<LayerPass*> at_size;
    for (LayerCost& l : layers) {
      for (LayerPass& p : l.passes) {
        if (p.samples != samples) continue;
        forward += p.forward_s;
        backward += p.backward_s;
        at_size.push_back(&p);
      }
    }
    if (at_size.size() != layers.size() || !(forward > 0) || !(backward > 0)) continue;  // a layer not timed there
    if (const LayerPass* chain = AtSize(chained, samples)) {
      double own_forward = 0, own_backward = 0;
      for (LayerPass& p : own.back_to_back) {
        if (p.samples != samples) continue;
        p.forward_s = std::min(p.forward_s, std::max(0.0, chain->forward_s - forward));
        p.backward_s = std::min(p.backward_s, std::max(0.0, chain->backward_s - backward));
        own_forward = p.forward_s;
        own_backward = p.backward_s;
      }
      for (LayerPass& p : own.passes) {
        if (p.samples != samples) continue;
        p.forward_s = std::max(p.forward_s, own_forward);
        p.backward_s = std::max(p.backward_s, own_backward);
      }
      ratios = {(chain->forward_s - own_forward) / forward, (chain->backward_s - own_backward) / backward};
    }
    if (!ratios) continue;
    for (LayerPass* p : at_size) {
      p->forward_s *= ratios->first;
      p->backward_s *= ratios->second;
    }
  }
  for (LayerCost& l : layers) {
    if (l.passes.empty()) continue;
    l.forward_s = l.passes.back().forward_s / l.passes.back().samples;
    l.backward_s = l.passes.back().backward_s / l.passes.back().samples;
  }
}

}  // namespace edgetrain

#include "core/model_shape.h"

#include <algorithm>
#include <optional>
#include <string>

namespace edgetrain {
namespace {

// How many 2x2 pools the images take before a side would fall below 1.
size_t Halvings(const DatasetInfo& data) {
  size_t fit = 0;
  for (int side = std::min(data.height, data.width); side >= 2; side /= 2) ++fit;
  return fit;
}

std::string ImageSize(const DatasetInfo& data) {
  return std::to_string(data.height) + "x" + std::to_string(data.width);
}

using Misfit = std::optional<ModelMisfit>;

// The CRD refuses these already; a plan file or a program's own spec does not
// pass through it, and LibTorch would fail on them deep inside the model.
Misfit CheckPositive(const std::string& field, const std::vector<int>& sizes) {
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 1) {
      return ModelMisfit{"spec.model." + field + "[" + std::to_string(i) + "]",
                         "must be >= 1 (got " + std::to_string(sizes[i]) + ")"};
    }
  }
  return std::nullopt;
}

// Samples of one row ([N]: 1 x N) are no images: a conv's 2x2 pools have no
// height to halve. Said so, where the count of blocks was "use at most 0" (a
// user's trial).
Misfit CheckImages(const std::string& model, const DatasetInfo& data) {
  if (std::min(data.height, data.width) >= 2 || data.width < 1) return std::nullopt;
  return ModelMisfit{"spec.model.name",
                     model + " takes images, and the data's samples are " + std::to_string(data.channels) + " x " +
                         std::to_string(data.height) + " x " + std::to_string(data.width) +
                         " (spec.data.inputShape, as channels x height x width): a side of 1 leaves its 2x2 pools "
                         "nothing to halve; give inputShape as [channels, height, width] or [height, width] if they "
                         "are images, or use the mlp"};
}

Misfit CheckCnn(const std::vector<int>& channels, const DatasetInfo& data) {
  if (Misfit m = CheckPositive("channels", channels)) return m;
  if (Misfit m = CheckImages("cnn", data)) return m;
  const size_t fit = Halvings(data);
  if (channels.size() <= fit) return std::nullopt;
  return ModelMisfit{"spec.model.channels", std::to_string(channels.size()) + " conv blocks would halve the " +
                                                ImageSize(data) + " images below 1x1; use at most " +
                                                std::to_string(fit)};
}

Misfit CheckVgg(const std::vector<int>& widths, const DatasetInfo& data) {
  if (Misfit m = CheckPositive("widths", widths)) return m;
  if (Misfit m = CheckImages("vgg", data)) return m;
  size_t pools = 0;
  for (size_t i = 0; i < widths.size(); ++i) pools += VggPoolFollows(i, widths.size()) ? 1 : 0;
  const size_t fit = Halvings(data);
  if (pools <= fit) return std::nullopt;
  return ModelMisfit{"spec.model.widths", std::to_string(widths.size()) + " convs make " + std::to_string(pools) +
                                              " pooled blocks (a 2x2 max-pool after every two convs), which would "
                                              "halve the " + ImageSize(data) + " images below 1x1; use at most " +
                                              std::to_string(2 * fit)};
}

std::string ShapeText(const DatasetInfo& d) {
  return "[" + std::to_string(d.channels) + ", " + std::to_string(d.height) + ", " + std::to_string(d.width) + "]";
}

// What the manifest says a TorchScript module takes must be what the data
// gives, each said (a user fixed inputShape to be told of classes next);
// whether the module itself does is known only once it is loaded
// (agent/torch/torchscript_model.h checks that).
std::vector<ModelMisfit> CheckTorchScript(const ModelSpec& spec, const DatasetInfo& data) {
  std::vector<ModelMisfit> misfits;
  if (!spec.torchscript_input_shape.empty()) {
    DataSource declared;
    declared.input_shape = spec.torchscript_input_shape;
    const DatasetInfo d = InfoOf(declared);
    if (d.channels != data.channels || d.height != data.height || d.width != data.width) {
      // As written first: a shape of one or two numbers is read as the
      // image it stands for ([64] as [1, 1, 64]), which the user never wrote.
      std::string written = "[";
      for (size_t i = 0; i < spec.torchscript_input_shape.size(); ++i) {
        written += (i ? ", " : "") + std::to_string(spec.torchscript_input_shape[i]);
      }
      written += "]";
      misfits.push_back({"spec.model.torchscript.inputShape",
                         written + (written == ShapeText(d) ? "" : ", read as " + ShapeText(d)) +
                             " (channels, height, width), differs from the data's " + ShapeText(data)});
    }
  }
  if (spec.torchscript_classes && *spec.torchscript_classes != data.classes) {
    misfits.push_back({"spec.model.torchscript.classes", std::to_string(*spec.torchscript_classes) +
                                                             " differs from the data's " +
                                                             std::to_string(data.classes) + " classes"});
  }
  return misfits;
}

std::vector<ModelMisfit> AsList(Misfit m) {
  return m ? std::vector<ModelMisfit>{std::move(*m)} : std::vector<ModelMisfit>{};
}

}  // namespace

std::vector<int> HiddenWidths(const ModelSpec& spec) {
  return spec.hidden.empty() ? std::vector<int>{128, 64} : spec.hidden;
}

std::vector<int> ConvChannels(const ModelSpec& spec) {
  return spec.channels.empty() ? std::vector<int>{16, 32} : spec.channels;
}

std::vector<int> VggWidths(const ModelSpec& spec) {
  return spec.widths.empty() ? std::vector<int>{16, 16, 32, 32, 64, 64, 128, 128} : spec.widths;
}

bool VggPoolFollows(size_t index, size_t convs) { return index % 2 == 1 || index + 1 == convs; }

std::optional<int> BuiltInLayerCount(const ModelSpec& spec) {
  switch (spec.kind) {
    case ModelKind::kMlp: return static_cast<int>(HiddenWidths(spec).size()) + 1;
    case ModelKind::kCnn: return static_cast<int>(ConvChannels(spec).size()) + 1;
    case ModelKind::kVgg: return static_cast<int>(VggWidths(spec).size()) + 1;
    case ModelKind::kTorchScript: return std::nullopt;
  }
  return std::nullopt;
}

std::vector<ModelMisfit> ModelMisfits(const ModelSpec& spec, const DatasetInfo& data) {
  switch (spec.kind) {
    case ModelKind::kMlp: return AsList(CheckPositive("hidden", HiddenWidths(spec)));
    case ModelKind::kCnn: return AsList(CheckCnn(ConvChannels(spec), data));
    case ModelKind::kVgg: return AsList(CheckVgg(VggWidths(spec), data));
    case ModelKind::kTorchScript: return CheckTorchScript(spec, data);
  }
  return {{"spec.model.name", "unknown model"}};
}

Status CheckModelFitsData(const ModelSpec& spec, const DatasetInfo& data) {
  std::string said;
  for (const ModelMisfit& m : ModelMisfits(spec, data)) said += (said.empty() ? "" : "; ") + m.field + ": " + m.message;
  return said.empty() ? Status::Ok() : InvalidArgumentError(said);
}

}  // namespace edgetrain

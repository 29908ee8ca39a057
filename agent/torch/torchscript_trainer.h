#pragma once
// A user's own model: a TorchScript module (torch.jit.save from PyTorch),
// trained as a built-in model is — its parameters flat, the engine's optimizer
// stepping them — and saved as TorchScript again, so PyTorch loads the result.

#include <memory>
#include <string>

#include "agent/torch/trainer.h"
#include "core/status.h"

namespace edgetrain::agent {

// Loads options.model.torchscript_path and checks, before any training, what
// the job needs of it; each failure is an InvalidArgument naming the field:
//   spec.model.torchscript.path  no such file, or not a TorchScript module;
//   spec.model.torchscript       no trainable parameters, parameters not
//                                float32, a forward that fails on a batch of
//                                the data's shape, or an output that is not
//                                one logit per class of spec.data.
StatusOr<std::unique_ptr<Trainer>> LoadTorchScriptTrainer(const TrainerOptions& options);

// Whether `path` holds a TorchScript module with a forward method. A built-in
// model's file (Trainer::SaveModel) is a TorchScript archive too, but of
// weights only, with no forward: `edgetrain evaluate` tells them apart so.
bool IsTorchScriptModule(const std::string& path);

}  // namespace edgetrain::agent

#pragma once
// A user's own model: a TorchScript module (torch.jit.save from PyTorch),
// trained as a built-in model is — its parameters flat, the engine's optimizer
// stepping them — and saved as TorchScript again, so PyTorch loads the result.

#include <exception>
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

// LibTorch's messages run to a C++ backtrace or a TorchScript call stack. The
// interpreter's end with the error the module raised ("RuntimeError: mat1 and
// mat2 shapes cannot be multiplied ..."); others say it in their first line:
// that line.
std::string ErrorReason(const std::exception& e);

// A user's module that passed its check and then failed on a batch of
// `samples`, as a job or a pipeline's stage trains it: its own code (a raise,
// a shape it cannot take), which fails the same way when the job runs again,
// so the job's fault, an InvalidArgument (exit 2); the runner said "a run
// again starts over" of a module that raised on every epoch's short last
// batch (a new user's trial). Memory that ran out is the machine's: Internal.
Status ModuleFailed(const std::string& what, const std::exception& e, int64_t samples);

// Whether `path` holds a TorchScript module with a forward method. A built-in
// model's file (Trainer::SaveModel) is a TorchScript archive too, but of
// weights only, with no forward: `edgetrain evaluate` tells them apart so.
// InvalidArgument for TorchScript whose code this LibTorch cannot compile (an
// operator of a newer PyTorch): it was read as no module, and then said to be
// no LibTorch archive at all (found in review).
StatusOr<bool> IsTorchScriptModule(const std::string& path);

}  // namespace edgetrain::agent

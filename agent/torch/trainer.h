#pragma once
// The one door to LibTorch. Everything behind it (models, optimizers, tensors)
// lives in agent/torch/*.cc; callers see plain arrays and Status, so only these
// few files pay LibTorch's compile time and no torch type or exception crosses
// into the rest of the agent.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/data/dataset.h"
#include "core/dataset_info.h"
#include "core/job_spec.h"
#include "core/status.h"

namespace edgetrain::agent {

struct Evaluation {
  double accuracy = 0;
  double loss = 0;
};

class Trainer {
 public:
  virtual ~Trainer() = default;

  // Forward and backward on a batch of `n` samples laid out as in Dataset: the
  // gradient, flat in the layout of Parameters(), is written to `gradient`.
  // Returns the batch's mean loss. No optimizer steps here: the engine's
  // (core/row_optimizer.h) does, for a job of one and a team alike.
  virtual StatusOr<double> ComputeGradient(const float* features, const int64_t* labels, int64_t n,
                                           std::span<float> gradient) = 0;

  // The model's parameters as one flat vector, tensor after tensor (the order of
  // ParameterShapes(), see core/row_layout.h). The model reads them in place:
  // writing here changes the model.
  virtual std::span<float> Parameters() = 0;
  virtual std::vector<std::vector<int64_t>> ParameterShapes() const = 0;

  // Accuracy and mean loss over a whole data set, without touching the weights.
  virtual StatusOr<Evaluation> Evaluate(const Dataset& data) = 0;

  // The model's weights written to a temporary file, flushed to disk, then
  // renamed over `path`: a crash mid-write never replaces a good file with a
  // torn one.
  virtual Status SaveModel(const std::string& path) = 0;

  // Reads weights SaveModel wrote into this model, in place (Parameters() sees
  // them). InvalidArgument when they are another model's. A built-in model's
  // file is checked whole by ReadModelSpec, read first; a TorchScript one's
  // as it loads.
  virtual Status LoadModel(const std::string& path) {
    return UnimplementedError("this trainer cannot load " + path);
  }

  virtual int64_t ParameterCount() const = 0;

  // What its check found that trains, but not as the user meant; said once
  // by whoever runs the job (its warnings). Empty: nothing.
  virtual std::string Caution() const { return {}; }

  // Whether the model holds state its training moves besides its parameters
  // (a user's module's buffers: a batch norm's running statistics), which
  // only the process that trains it sees move.
  virtual bool HoldsBuffers() const { return false; }

  // Runs the model forward in training mode over `samples`, in passes of
  // `batch`, its weights untouched, so that the buffers training moves are
  // those of its weights now. A team's coordinator and a pipeline's head
  // hold the model the job evaluates and saves, and train none of it: a
  // batch norm's statistics stayed at their first values, and a user's
  // ResNet scored 0.26 where the same weights, so settled, score as a job of
  // one does (a user's trial). Nothing to do without buffers.
  virtual Status SettleBuffers(const Dataset& samples, int64_t batch) {
    (void)samples;
    (void)batch;
    return Status::Ok();
  }

  // The buffers as bytes for a job of one's checkpoint, and read back: a job
  // of one evaluates its own model, so its running statistics, and a batch
  // norm's count of batches (which a cumulative average, momentum None,
  // divides by), go on from where they were. Resumed without them, a user's
  // module ended at statistics 0.34 and 10.1 off the uninterrupted run's.
  // Empty without buffers. LoadBuffers checks every buffer before it writes
  // any: InvalidArgument when the bytes are another model's.
  virtual StatusOr<std::string> SaveBuffers() { return std::string(); }
  virtual Status LoadBuffers(std::string_view bytes) {
    return bytes.empty() ? Status::Ok() : InvalidArgumentError("holds buffers this model has none of");
  }
};

struct TrainerOptions {
  ModelSpec model;
  DatasetInfo data;
  uint64_t seed = 0;
  int intra_op_threads = 1;
  // One sample's shape as the model's forward takes it (core/dataset_info.h's
  // SampleShape); empty means [channels, height, width] of `data`. Only a
  // TorchScript model needs it: the built-in ones reshape for themselves.
  std::vector<int> sample_shape = {};
};

// Builds the model, or loads a TorchScript one (agent/torch/torchscript_trainer.h).
// InvalidArgument when the model cannot fit the data (e.g. more conv blocks
// than the image can be halved), naming the spec.model field at fault.
StatusOr<std::unique_ptr<Trainer>> CreateTrainer(const TrainerOptions& options);

// What model a file SaveModel wrote holds, read from its layers' shapes:
// an mlp's hidden widths, a cnn's channels, a vgg's widths. InvalidArgument
// when it is not one, or its bytes are not as written (archive_integrity.h).
StatusOr<ModelSpec> ReadModelSpec(const std::string& path);

}  // namespace edgetrain::agent

#pragma once
// A module's parameters, and their gradients, each kept in one contiguous
// tensor: the engines read and write a model as flat rows (core/row_layout.h),
// in place, without gathering tensors at every step.

#include <torch/torch.h>

namespace edgetrain::agent {

// Moves every parameter of `module` into one new contiguous tensor, tensor after
// tensor in parameters() order, and makes each parameter a view of it: writing
// the flat tensor changes the module.
torch::Tensor FlattenParameters(torch::nn::Module& module);
// The same for a list of parameters (a TorchScript module's trainable ones).
torch::Tensor FlattenParameters(std::vector<torch::Tensor>& parameters);
// Makes each of `parameters` a view of `flat` again, in the same layout, after
// they were given storage of their own; their values are copied into `flat`.
void ViewParametersIn(const torch::Tensor& flat, std::vector<torch::Tensor>& parameters);

// The same for the parameters' gradients: one zeroed tensor laid out as
// FlattenParameters', each parameter's grad a view of it. Backward (without
// create_graph) accumulates into an existing grad in place, so the flat tensor
// sums every backward since it was last zeroed; KeepGradientsFlat puts back any
// grad that autograd replaced rather than accumulated into.
torch::Tensor FlattenGradients(torch::nn::Module& module);
void KeepGradientsFlat(torch::nn::Module& module, torch::Tensor& flat_gradients);

}  // namespace edgetrain::agent

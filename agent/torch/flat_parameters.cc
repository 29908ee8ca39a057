#include "agent/torch/flat_parameters.h"

namespace edgetrain::agent {
namespace {

int64_t TotalElements(const std::vector<torch::Tensor>& tensors) {
  int64_t total = 0;
  for (const auto& t : tensors) total += t.numel();
  return total;
}

}  // namespace

void ViewParametersIn(const torch::Tensor& flat, std::vector<torch::Tensor>& parameters) {
  int64_t offset = 0;
  torch::NoGradGuard no_grad;
  for (auto& p : parameters) {
    torch::Tensor view = flat.narrow(0, offset, p.numel()).view(p.sizes());
    view.copy_(p);
    p.set_data(view);
    offset += p.numel();
  }
}

torch::Tensor FlattenParameters(std::vector<torch::Tensor>& parameters) {
  torch::Tensor flat = torch::empty({TotalElements(parameters)}, torch::kFloat32);
  ViewParametersIn(flat, parameters);
  return flat;
}

torch::Tensor FlattenParameters(torch::nn::Module& module) {
  std::vector<torch::Tensor> parameters = module.parameters();
  return FlattenParameters(parameters);
}

torch::Tensor FlattenGradients(torch::nn::Module& module) {
  std::vector<torch::Tensor> parameters = module.parameters();
  torch::Tensor flat = torch::zeros({TotalElements(parameters)}, torch::kFloat32);
  int64_t offset = 0;
  for (auto& p : parameters) {
    p.mutable_grad() = flat.narrow(0, offset, p.numel()).view(p.sizes());
    offset += p.numel();
  }
  return flat;
}

void KeepGradientsFlat(torch::nn::Module& module, torch::Tensor& flat_gradients) {
  int64_t offset = 0;
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters()) {
    torch::Tensor view = flat_gradients.narrow(0, offset, p.numel()).view(p.sizes());
    torch::Tensor& grad = p.mutable_grad();
    if (!grad.defined()) {
      grad = view;  // nothing reached it; its slice holds what it did before
    } else if (grad.data_ptr() != view.data_ptr()) {
      view.copy_(grad);  // a replaced grad already holds the old sum plus the new
      grad = view;
    }
    offset += p.numel();
  }
}

}  // namespace edgetrain::agent

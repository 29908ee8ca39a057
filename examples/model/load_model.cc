// Classifies scikit-learn's 8x8 digits with a model.pt that `edgetrain run`
// trained, in C++ with LibTorch:
//
//   load-model OUTPUT/model.pt DIGITS.csv.gz
//
// model.pt is a TorchScript archive of the model's parameters, without code.
// torch::jit::load reads it to learn the layers' shapes; the same nn::Sequential
// the agents build (conv 3x3 and ReLU, a max-pool 2 after each of a cnn's convs
// and after every second of a vgg's; flatten; linear layers with ReLU between)
// then takes the weights with torch::load. Pixels are
// scaled as the agents scale them: digits' grey levels 0-16 by 1/16.
#include <torch/script.h>
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <zlib.h>

namespace {

torch::nn::Sequential Rebuild(const std::string& model_path) {
  std::map<int, std::vector<int64_t>> by_index;
  for (const auto& p : torch::jit::load(model_path).named_parameters()) {
    const std::string name = p.name;
    if (name.size() > 7 && name.substr(name.size() - 7) == ".weight") {
      by_index[std::stoi(name.substr(0, name.find('.')))] = p.value.sizes().vec();
    }
  }
  const std::vector<std::pair<int, std::vector<int64_t>>> weights(by_index.begin(), by_index.end());
  torch::nn::Sequential net;
  std::vector<std::vector<int64_t>> linears;
  for (size_t i = 0; i < weights.size(); ++i) {
    const auto& [index, shape] = weights[i];
    if (shape.size() == 4) {
      net->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(shape[1], shape[0], 3).padding(1)));
      net->push_back(torch::nn::ReLU());
      // A cnn halves after every conv, a vgg after every second: a conv two
      // indices on (conv, ReLU, conv) has no pool before it.
      const auto& [following, following_shape] = weights[i + 1];
      if (!(following_shape.size() == 4 && following == index + 2)) {
        net->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)));
      }
    } else {
      linears.push_back(shape);
    }
  }
  net->push_back(torch::nn::Flatten());
  for (size_t i = 0; i < linears.size(); ++i) {
    net->push_back(torch::nn::Linear(linears[i][1], linears[i][0]));
    if (i + 1 < linears.size()) net->push_back(torch::nn::ReLU());
  }
  torch::load(net, model_path);
  net->eval();
  return net;
}

std::string Gunzip(const std::string& path) {
  gzFile in = gzopen(path.c_str(), "rb");
  std::string text;
  char buffer[1 << 16];
  for (int n; in && (n = gzread(in, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
  if (in) gzclose(in);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: load-model MODEL.pt DIGITS.csv.gz\n");
    return 2;
  }
  torch::nn::Sequential net = Rebuild(argv[1]);
  std::vector<float> pixels;
  std::vector<int64_t> labels;
  std::istringstream rows(Gunzip(argv[2]));
  for (std::string row; std::getline(rows, row);) {
    if (row.empty()) continue;
    std::istringstream values(row);
    std::string v;
    for (int i = 0; std::getline(values, v, ','); ++i) {
      if (i < 64) pixels.push_back(std::stof(v) / 16);
      else labels.push_back(std::stoll(v));
    }
  }
  const int64_t n = static_cast<int64_t>(labels.size());
  torch::NoGradGuard no_grad;
  torch::Tensor predicted = net->forward(torch::from_blob(pixels.data(), {n, 1, 8, 8})).argmax(1);
  const double accuracy = predicted.eq(torch::from_blob(labels.data(), {n}, torch::kInt64)).sum().item<double>() / n;
  std::printf("accuracy %.4f on %lld digits; first ten:", accuracy, static_cast<long long>(n));
  for (int64_t i = 0; i < 10; ++i) std::printf(" %lld", static_cast<long long>(predicted[i].item<int64_t>()));
  std::printf("\n");
  return 0;
}

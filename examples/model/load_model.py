#!/usr/bin/python3
"""Classifies scikit-learn's 8x8 digits with a model.pt that `edgetrain run`
trained, in PyTorch (Debian's python3-torch):

    /usr/bin/python3 load_model.py OUTPUT/model.pt DIGITS.csv.gz

model.pt is a TorchScript archive of the model's parameters, without code:
torch.jit.load reads it, and named_parameters() gives them under the names of
LibTorch's nn::Sequential ("1.weight", "1.bias", ...). The same layers, built
here in the same order, take them with load_state_dict. Pixels are scaled as
the agents scale them: digits' grey levels 0-16 by 1/16 (Fashion-MNIST's 0-255
by 1/255).
"""
import gzip
import json
import os
import sys

import torch
from torch import nn


def rebuild(saved):
    """The nn.Sequential whose layers carry `saved`'s parameters."""
    weights = sorted((int(name.split(".")[0]), p.shape) for name, p in saved.named_parameters()
                     if name.endswith(".weight"))
    linears = [shape for _, shape in weights if len(shape) == 2]
    layers = []
    for i, (index, shape) in enumerate(weights):
        if len(shape) != 4:
            continue
        out_channels, in_channels, _, _ = shape
        layers += [nn.Conv2d(in_channels, out_channels, 3, padding=1), nn.ReLU()]
        # A cnn halves after every conv, a vgg after every second: a conv two
        # indices on (conv, ReLU, conv) has no pool before it.
        following, following_shape = weights[i + 1]
        if not (len(following_shape) == 4 and following == index + 2):
            layers.append(nn.MaxPool2d(2))
    layers.append(nn.Flatten())
    for i, (out_features, in_features) in enumerate(linears):  # edgetrain's mlp: linear, ReLU, ..., linear
        layers.append(nn.Linear(in_features, out_features))
        if i + 1 < len(linears):
            layers.append(nn.ReLU())
    net = nn.Sequential(*layers)
    net.load_state_dict({name: p for name, p in saved.named_parameters()})
    return net.eval()


def trained_on(model_path):
    """The data set the run that saved `model_path` trained on, from the model.json
    beside it; None when it does not say."""
    try:
        with open(os.path.join(os.path.dirname(model_path) or ".", "model.json")) as f:
            return json.load(f).get("dataset")
    except (OSError, ValueError):
        return None


def main(model_path, digits_path):
    # Its first layer takes 8x8 digits: a model of other data is refused here,
    # where it raised "mat1 and mat2 shapes cannot be multiplied" (a user's trial).
    dataset = trained_on(model_path)
    if dataset and dataset != "digits":
        sys.exit(f"{model_path} was trained on {dataset} (model.json); this example classifies the 8x8 digits. "
                 f"edgetrain evaluate {model_path} scores it on its own test set")
    net = rebuild(torch.jit.load(model_path))
    rows = [[float(v) for v in line.split(",")] for line in gzip.open(digits_path, "rt") if line.strip()]
    images = torch.tensor([row[:64] for row in rows]).view(-1, 1, 8, 8) / 16
    labels = torch.tensor([int(row[64]) for row in rows])
    with torch.no_grad():
        predicted = net(images).argmax(1)
    accuracy = (predicted == labels).float().mean().item()
    print(f"accuracy {accuracy:.4f} on {len(rows)} digits; first ten: {' '.join(map(str, predicted[:10].tolist()))}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: load_model.py OUTPUT/model.pt DIGITS.csv.gz (a model edgetrain trained on the digits)")
    main(*sys.argv[1:3])

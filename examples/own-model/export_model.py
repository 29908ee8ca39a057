#!/usr/bin/python3
"""Exports a model for edgetrain to train, as a user of PyTorch would: build an
nn.Module, script it, save it (Debian's python3-torch).

    /usr/bin/python3 export_model.py OUT.pt [--input-shape 1,8,8] [--classes 10]
                                           [--hidden 64,32 | --channels 16,32] [--seed 0]

--hidden builds a multilayer perceptron (Flatten, then Linear and ReLU for each
hidden width, then a Linear to the classes), --channels a small CNN (a 3x3
conv, ReLU and 2x2 max-pool for each width, then a Linear): the layers of
edgetrain's built-in mlp and cnn, in the same order, so the two can be compared.
Any module whose forward takes a batch of samples of the input shape and
returns one logit per class will do; this one is only an example.
"""
import argparse

import torch
from torch import nn


def widths(text):
    return [int(w) for w in text.split(",") if w]


def build(input_shape, classes, hidden, channels):
    if channels:
        layers, in_channels, (height, width) = [], input_shape[0], input_shape[1:]
        for out in channels:
            layers += [nn.Conv2d(in_channels, out, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
            in_channels, height, width = out, height // 2, width // 2
        return nn.Sequential(*layers, nn.Flatten(), nn.Linear(in_channels * height * width, classes))
    features = 1
    for side in input_shape:
        features *= side
    layers = [nn.Flatten()]
    for width in hidden:
        layers += [nn.Linear(features, width), nn.ReLU()]
        features = width
    return nn.Sequential(*layers, nn.Linear(features, classes))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="where the TorchScript module is written")
    parser.add_argument("--input-shape", type=widths, default=[1, 8, 8], help="one sample's shape (default 1,8,8)")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--hidden", type=widths, default=[64, 32], help="an MLP's hidden widths (default 64,32)")
    parser.add_argument("--channels", type=widths, default=[], help="a CNN's conv widths, instead of an MLP")
    parser.add_argument("--seed", type=int, default=0, help="seeds the initial weights")
    args = parser.parse_args()
    if args.channels and len(args.input_shape) != 3:
        parser.error("--channels needs a 3-dimensional --input-shape (channels,height,width)")
    torch.manual_seed(args.seed)
    model = build(args.input_shape, args.classes, args.hidden, args.channels)
    torch.jit.save(torch.jit.script(model), args.out)
    parameters = sum(p.numel() for p in model.parameters())
    print(f"wrote {args.out}: {type(model).__name__} of {len(model)} layers, {parameters:,} parameters, "
          f"input {args.input_shape}, {args.classes} classes")


if __name__ == "__main__":
    main()

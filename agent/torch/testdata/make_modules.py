#!/usr/bin/python3
"""Writes the TorchScript modules torchscript_trainer_test.cc loads, good and
bad, into OUT_DIR: what a PyTorch user might hand edgetrain by mistake.

    /usr/bin/python3 make_modules.py OUT_DIR
"""
import os
import sys

import torch
from torch import nn


def mlp(features, classes):
    return nn.Sequential(nn.Flatten(), nn.Linear(features, 16), nn.ReLU(), nn.Linear(16, classes))


class TwoPaths(nn.Module):
    """Not an nn.Sequential: its forward uses its children as it likes (a
    skip connection here), so a pipeline may not cut it between them."""

    def __init__(self, features, classes):
        super().__init__()
        self.flatten = nn.Flatten()
        self.hidden = nn.Linear(features, features)
        self.out = nn.Linear(features, classes)

    def forward(self, x):
        x = self.flatten(x)
        return self.out(x + torch.relu(self.hidden(x)))


class WholeNumbers(nn.Module):
    """Ends its forward in integers: no loss has a gradient through them."""

    def __init__(self, features, classes):
        super().__init__()
        self.layers = mlp(features, classes)

    def forward(self, x):
        return (self.layers(x) * 100).long()


class RaisesOnThree(nn.Module):
    """Passes its check (a batch of 2) and raises on a batch of 3, as a user's
    module that cannot take an epoch's short last batch does."""

    def __init__(self, features, classes):
        super().__init__()
        self.layers = mlp(features, classes)

    def forward(self, x):
        if x.size(0) == 3:
            raise RuntimeError("a batch of 3")
        return self.layers(x)


class Features(nn.Module):
    """Returns its features beside the logits, as a module written to be
    probed does: not the one tensor of logits edgetrain trains."""

    def __init__(self, features, classes):
        super().__init__()
        self.layers = mlp(features, classes)

    def forward(self, x):
        logits = self.layers(x)
        return logits, x.flatten(1)


class TwoInputs(nn.Module):
    """Takes a second input edgetrain does not give."""

    def __init__(self, features, classes):
        super().__init__()
        self.layers = mlp(features, classes)

    def forward(self, x, mask):
        return self.layers(x * mask)


class HalfLogits(nn.Module):
    """Ends its forward in float16, which this LibTorch's loss has no CPU kernel for."""

    def __init__(self, features, classes):
        super().__init__()
        self.layers = mlp(features, classes)

    def forward(self, x):
        return self.layers(x).half()


class RaisesInEval(nn.Module):
    """Trains, and raises in eval mode on a batch of more than 2, as a user's
    module whose eval-only path is broken does."""

    def __init__(self, features, classes):
        super().__init__()
        self.layers = mlp(features, classes)

    def forward(self, x):
        if not self.training and x.size(0) > 2:
            raise RuntimeError("eval-mode path broken")
        return self.layers(x)


class SpareHead(nn.Module):
    """Holds a layer its forward never uses (a spare head): no gradient reaches it."""

    def __init__(self, features, classes):
        super().__init__()
        self.layers = mlp(features, classes)
        self.spare = nn.Linear(16, 16)

    def forward(self, x):
        return self.layers(x)


class Tied(nn.Module):
    """Two layers share one weight, as a language model's embedding and output
    layer do: parameters() lists it twice."""

    def __init__(self, features, classes):
        super().__init__()
        self.flatten = nn.Flatten()
        self.a = nn.Linear(features, features)
        self.b = nn.Linear(features, features)
        self.b.weight = self.a.weight
        self.out = nn.Linear(features, classes)

    def forward(self, x):
        return self.out(torch.relu(self.b(torch.relu(self.a(self.flatten(x))))))


class ToDouble(nn.Module):
    def forward(self, x):
        return x.double()


def main(out):
    torch.manual_seed(0)
    save = lambda module, name: torch.jit.save(torch.jit.script(module), os.path.join(out, name))
    save(mlp(64, 10), "digits_mlp.pt")
    save(mlp(784, 10), "fashion_input.pt")  # forward fails on 8x8 digits
    save(mlp(64, 5), "five_classes.pt")
    save(TwoPaths(64, 10), "two_paths.pt")
    save(WholeNumbers(64, 10), "long_output.pt")
    save(RaisesOnThree(64, 10), "raises_on_three.pt")
    save(Features(64, 10), "tuple_output.pt")
    # A batch norm averaging every batch since its count was 0 (momentum None).
    save(nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.BatchNorm1d(16, momentum=None), nn.ReLU(),
                       nn.Linear(16, 10)), "batch_norm_cumulative.pt")
    save(TwoInputs(64, 10), "two_inputs.pt")
    # Scripted after other Sequentials, its class is saved as
    # ...container.___torch_mangle_N.Sequential: an nn.Sequential all the same.
    save(nn.Sequential(nn.Flatten(), nn.Sequential(nn.Linear(64, 16), nn.ReLU()), nn.Linear(16, 10)), "nested.pt")
    save(mlp(64, 10).double(), "float64.pt")
    # Ends in a softmax: probabilities where the loss takes logits.
    save(nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10), nn.Softmax(dim=1)),
         "softmax_output.pt")
    # Draws from torch's generator as it trains.
    save(nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 10)), "dropout.pt")
    # Its BatchNorm1d cannot train on one sample ("Expected more than 1 value
    # per channel"): its layers are timed on passes of 2 or more.
    save(nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 10)),
         "batch_norm.pt")
    save(HalfLogits(64, 10), "half_output.pt")
    save(RaisesInEval(64, 10), "raises_in_eval.pt")
    save(SpareHead(64, 10), "spare_head.pt")
    save(Tied(64, 10), "tied.pt")
    # An nn.Sequential whose children 1 and 3 share a weight; and one whose
    # child 1 holds a tie within itself.
    across = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    across[3].weight = across[1].weight
    save(across, "tied_across_layers.pt")
    inner = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64))
    inner[2].weight = inner[0].weight
    save(nn.Sequential(nn.Flatten(), inner, nn.ReLU(), nn.Linear(64, 10)), "tied_within_a_layer.pt")
    # Keeps no running statistics: None where a batch norm's would be.
    save(nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.BatchNorm1d(16, track_running_stats=False), nn.ReLU(),
                       nn.Linear(16, 10)), "untracked_batch_norm.pt")
    # Hands on float64 from its fifth layer: a stage's output crosses links as float32.
    save(nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10), ToDouble(), nn.Identity()),
         "double_tail.pt")
    frozen = mlp(64, 10)
    for p in frozen.parameters():
        p.requires_grad_(False)
    save(frozen, "frozen.pt")
    torch.save(mlp(64, 10).state_dict(), os.path.join(out, "state_dict.pt"))  # weights in a pickle, no module
    with open(os.path.join(out, "text.pt"), "w") as f:
        f.write("not a model\n")


if __name__ == "__main__":
    main(sys.argv[1])

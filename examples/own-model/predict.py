#!/usr/bin/python3
"""Loads a model edgetrain trained from a TorchScript module, back in PyTorch,
and classifies a folder of class folders of images with it:

    /usr/bin/python3 predict.py MODEL.pt IMAGES_DIR [CHANNELS]

CHANNELS is the first of the job's inputShape, 1 (grey) unless given: each
image is converted to it as edgetrain converts it (3 RGB; 2 and 4 add alpha).
Pixels are scaled as edgetrain scales them, 0-255 to 0-1; the classes are the
folders in name order, as edgetrain numbers them, and names starting with '.'
are left out, as edgetrain leaves them. Prints the accuracy and the mean
cross-entropy loss, which match what edgetrain measured on the same folder.
"""
import os
import sys

import torch
from PIL import Image


MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def load_images(folder, channels):
    classes = sorted(d for d in os.listdir(folder)
                     if not d.startswith(".") and os.path.isdir(os.path.join(folder, d)))
    images, labels = [], []
    for label, name in enumerate(classes):
        for file in sorted(f for f in os.listdir(os.path.join(folder, name)) if not f.startswith(".")):
            image = Image.open(os.path.join(folder, name, file)).convert(MODES[channels])
            width, height = image.size
            pixels = torch.tensor(list(image.getdata()), dtype=torch.float32).view(height, width, channels)
            images.append(pixels.permute(2, 0, 1) / 255)  # channels first, as edgetrain keeps them
            labels.append(label)
    return torch.stack(images), torch.tensor(labels)


def main(model_path, folder, channels="1"):
    model = torch.jit.load(model_path).eval()
    images, labels = load_images(folder, int(channels))
    with torch.no_grad():
        logits = model(images)
    accuracy = (logits.argmax(1) == labels).float().mean().item()
    loss = torch.nn.functional.cross_entropy(logits, labels).item()
    print(f"accuracy {accuracy:.4f}, loss {loss:.4f} on {len(labels)} images")


if __name__ == "__main__":
    main(*sys.argv[1:4])

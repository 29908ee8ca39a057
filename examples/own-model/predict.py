#!/usr/bin/python3
"""Loads a model edgetrain trained from a TorchScript module, back in PyTorch,
and classifies a folder of class folders of images with it:

    /usr/bin/python3 predict.py MODEL.pt IMAGES_DIR

Pixels are scaled as edgetrain scales them, 0-255 to 0-1; the classes are the
folders in name order, as edgetrain numbers them. Prints the accuracy and the
mean cross-entropy loss, which match what edgetrain measured on the same folder.
"""
import os
import sys

import torch
from PIL import Image


def load_images(folder):
    classes = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)))
    images, labels = [], []
    for label, name in enumerate(classes):
        for file in sorted(os.listdir(os.path.join(folder, name))):
            image = Image.open(os.path.join(folder, name, file)).convert("L")
            images.append(torch.tensor(list(image.getdata()), dtype=torch.float32).view(1, *image.size[::-1]) / 255)
            labels.append(label)
    return torch.stack(images), torch.tensor(labels)


def main(model_path, folder):
    model = torch.jit.load(model_path).eval()
    images, labels = load_images(folder)
    with torch.no_grad():
        logits = model(images)
    accuracy = (logits.argmax(1) == labels).float().mean().item()
    loss = torch.nn.functional.cross_entropy(logits, labels).item()
    print(f"accuracy {accuracy:.4f}, loss {loss:.4f} on {len(labels)} images")


if __name__ == "__main__":
    main(*sys.argv[1:3])

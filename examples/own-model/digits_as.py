#!/usr/bin/python3
"""Writes scikit-learn's 8x8 digits as files of one of the formats a TrainingJob
reads (spec.data.format), the way a team's own data might be kept:

    /usr/bin/python3 digits_as.py FORMAT OUT_DIR [DIGITS.csv.gz]

  images  OUT_DIR/{train,test}/<class>/<n>.png: grey PNGs, a folder per class
  csv     OUT_DIR/{train,test}.csv: a header, then label and 64 features a row
  npy     OUT_DIR/{train,test}_{features,labels}.npy: uint8 [N, 8, 8], int64 [N]
  idx     OUT_DIR/{train,test}-{images,labels}.idx.gz: MNIST's format, gzipped

Grey levels 0-16 are stretched to 0-255 where pixels are bytes (images, npy,
idx) and scaled to [0, 1] in csv, whose features are used as they are. Every
fifth digit goes to test. The digits come from the file named, else from where
`make` puts them (scripts/deps).
"""
import gzip
import os
import struct
import sys

import numpy as np


def default_digits():
    data_dir = os.environ.get("EDGETRAIN_DATA_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "edgetrain", "datasets")
    return os.path.join(data_dir, "digits", "digits.csv.gz")


def write_images(out, split, pixels, labels, first_index):
    from PIL import Image
    for k, (image, label) in enumerate(zip(pixels, labels)):
        folder = os.path.join(out, split, str(label))
        os.makedirs(folder, exist_ok=True)
        Image.fromarray(image, mode="L").save(os.path.join(folder, f"{first_index[k]:04d}.png"))


def write_csv(out, split, pixels, labels, _):
    with open(os.path.join(out, f"{split}.csv"), "w") as f:
        f.write("label," + ",".join(f"p{i}" for i in range(64)) + "\n")
        for image, label in zip(pixels, labels):
            f.write(f"{label}," + ",".join(f"{v / 255:.6f}" for v in image.reshape(-1)) + "\n")


def write_npy(out, split, pixels, labels, _):
    np.save(os.path.join(out, f"{split}_features.npy"), pixels)
    np.save(os.path.join(out, f"{split}_labels.npy"), labels.astype(np.int64))


def write_idx(out, split, pixels, labels, _):
    # Two zero bytes, type 0x08 (unsigned byte), the dimension count, then each
    # dimension big-endian: the header MNIST's files have.
    for name, array in (("images", pixels), ("labels", labels.astype(np.uint8))):
        header = struct.pack(">BBBB", 0, 0, 8, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
        with gzip.open(os.path.join(out, f"{split}-{name}.idx.gz"), "wb") as f:
            f.write(header + array.tobytes())


WRITERS = {"images": write_images, "csv": write_csv, "npy": write_npy, "idx": write_idx}


def main(form, out, digits=None):
    if form not in WRITERS:
        sys.exit(f"digits_as.py: FORMAT is one of {', '.join(WRITERS)} (got {form!r})")
    rows = np.loadtxt(digits or default_digits(), delimiter=",", dtype=np.int64)
    pixels = np.minimum(rows[:, :64] * 16, 255).astype(np.uint8).reshape(-1, 8, 8)
    labels = rows[:, 64]
    os.makedirs(out, exist_ok=True)
    index = np.arange(len(rows))
    for split, chosen in (("train", index % 5 != 4), ("test", index % 5 == 4)):
        WRITERS[form](out, split, pixels[chosen], labels[chosen], index[chosen])
    print(f"wrote {int((index % 5 != 4).sum())} training and {int((index % 5 == 4).sum())} test digits "
          f"of 10 classes as {form} to {out}")


if __name__ == "__main__":
    if not 3 <= len(sys.argv) <= 4:
        print("usage: /usr/bin/python3 digits_as.py FORMAT OUT_DIR [DIGITS.csv.gz]\n"
              f"  FORMAT: one of {', '.join(WRITERS)}", file=sys.stderr)
        sys.exit(2)
    main(*sys.argv[1:4])

#!/usr/bin/env python3
"""Pillow's resize of the vision test images to other sizes, bilinear and bicubic, for
tests/image/test_image.cpp (core/image/resize.cpp reproduces Pillow's Resample.c byte for byte).

Writes tests/data/vision/resize_golden.bin: int32 n_records; per record: int32 filter
(0 = BILINEAR, 1 = BICUBIC), int32 name length, the image's file name (ASCII), int32 out_w,
int32 out_h, then out_h * out_w * 3 uint8 (HWC RGB): Image.open(name).convert("RGB")
.resize((out_w, out_h), filter). Sizes: shrinking by non-integer factors, stretching, one axis
only, to 1 pixel, and Qwen-VL-like multiples of 28. Written with Pillow 13.0, whose two-pass
order (vertical first when the image loses more than twice as many rows as columns) earlier
Pillows do not have: their bytes differ by one here and there.
Usage: tools/golden/make_resize_golden.py tests/data/vision   (pip install pillow)
"""
import struct
import sys

from PIL import Image

IMAGES = ["rgb100x37.png", "photo120x90.jpg", "gray23x31.png"]
SIZES = [(64, 64), (37, 100), (120, 45), (7, 5), (1, 1), (100, 37), (56, 84), (130, 33)]


def main(folder):
    records = []
    for name in IMAGES:
        img = Image.open(f"{folder}/{name}").convert("RGB")
        for filt, code in ((Image.BILINEAR, 0), (Image.BICUBIC, 1)):
            for w, h in SIZES:
                if (w, h) == img.size:
                    continue
                out = img.resize((w, h), filt)
                records.append((code, name, w, h, out.tobytes()))
    with open(f"{folder}/resize_golden.bin", "wb") as f:
        f.write(struct.pack("<i", len(records)))
        for code, name, w, h, data in records:
            f.write(struct.pack("<ii", code, len(name)) + name.encode() + struct.pack("<ii", w, h) + data)
    print(len(records), "records")


if __name__ == "__main__":
    main(sys.argv[1])

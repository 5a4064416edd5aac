"""Draws images/icon.png (128x128): code lines with cost bars at their ends. Standard library only."""
import struct
import zlib

W = H = 128
BG = (30, 34, 44)
CODE = (120, 130, 150)
BAR = (255, 120, 40)
px = [[BG] * W for _ in range(H)]


def rect(x0, y0, x1, y1, color):
    for y in range(max(0, y0), min(H, y1)):
        for x in range(max(0, x0), min(W, x1)):
            px[y][x] = color


# Rounded corners: clear them to transparent later.
lines = [(16, 48, 20), (24, 64, 60), (24, 56, 96), (16, 40, 8), (24, 72, 36)]  # indent, code width, bar width
y = 20
for indent, code, bar in lines:
    rect(indent, y, indent + code, y + 8, CODE)
    if bar:
        rect(indent + code + 6, y, min(W - 10, indent + code + 6 + bar // 3 + 6), y + 8, BAR)
    y += 19

raw = b""
for y in range(H):
    raw += b"\x00"
    for x in range(W):
        r = 14
        cx = min(max(x, r), W - 1 - r)
        cy = min(max(y, r), H - 1 - r)
        inside = (x - cx) ** 2 + (y - cy) ** 2 <= r * r
        raw += bytes(px[y][x]) + (b"\xff" if inside else b"\x00")


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", W, H, 8, 6, 0, 0, 0))
png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
open(__file__.rsplit("/", 1)[0] + "/icon.png", "wb").write(png)

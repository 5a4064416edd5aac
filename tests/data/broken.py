import torch
for x in loader:
    loss = model(x).sum()
    loss.backward()
    total += loss.item()
def broken(:
    x = = 1

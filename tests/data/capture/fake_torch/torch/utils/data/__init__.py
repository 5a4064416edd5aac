"""torch.utils.data: a DataLoader over a map-style dataset, in the main process."""
from .dataloader import DataLoader  # noqa: F401

"""torch.utils: only its data loader."""
from . import data  # noqa: F401

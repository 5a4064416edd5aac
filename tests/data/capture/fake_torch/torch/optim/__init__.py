"""torch.optim as far as the hook sees it: optimizers whose step() runs the global post-hooks."""
from .optimizer import Optimizer


class SGD(Optimizer):
    pass


class AdamW(Optimizer):
    pass

"""torch.optim.optimizer: the global step post-hooks (register_optimizer_step_post_hook)."""
import itertools

_global_optimizer_post_hooks = {}
_ids = itertools.count()


class RemovableHandle:
    def __init__(self, hooks, key):
        self.hooks, self.key = hooks, key

    def remove(self):
        self.hooks.pop(self.key, None)


def register_optimizer_step_post_hook(hook):
    key = next(_ids)
    _global_optimizer_post_hooks[key] = hook
    return RemovableHandle(_global_optimizer_post_hooks, key)


class Optimizer:
    def __init__(self, params, lr=0.1):
        self.param_groups = [{"params": list(params), "lr": lr}]

    def step(self, closure=None):
        for hook in list(_global_optimizer_post_hooks.values()):
            hook(self, (), {})

    def zero_grad(self, set_to_none=True):
        pass

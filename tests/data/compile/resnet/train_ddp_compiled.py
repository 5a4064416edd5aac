# ../../../../../shared/examples/ddp_resnet_tutorial.py (a DDP ResNet-50 script from a public
# PyTorch/Nsight Systems profiling tutorial) with the change a user makes to try torch.compile:
# the DDP model compiled (`torch.compile(self.model)` after the DDP wrap), and the synthetic
# dataset's length from SAMPLES (10000 as published) so a capture stays short.
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
import torch.multiprocessing as mp
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed import init_process_group, destroy_process_group
import torch.distributed as dist
import os
from torchvision import models
import torch.cuda.nvtx as nvtx
import torch.cuda.profiler as profiler


def ddp_setup():
    init_process_group(backend="nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    world_size = dist.get_world_size()
    rank = dist.get_rank()
    return world_size, rank


class Trainer:
    def __init__(self, model: torch.nn.Module, train_data: DataLoader, optimizer: torch.optim.Optimizer) -> None:
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.global_rank = int(os.environ["RANK"])
        self.model = model.to(self.local_rank)
        self.train_data = train_data
        self.optimizer = optimizer
        self.model = DDP(self.model, device_ids=[self.local_rank])
        self.model = torch.compile(self.model)

    def _run_batch(self, source, targets):
        nvtx.range_push("Optimizer Zero Grad")
        self.optimizer.zero_grad()
        nvtx.range_pop()
        nvtx.range_push("Forward Pass")
        output = self.model(source)
        nvtx.range_pop()
        nvtx.range_push("Loss Computation")
        loss = F.cross_entropy(output, targets)
        nvtx.range_pop()
        nvtx.range_push("Backward Pass")
        loss.backward()
        nvtx.range_pop()
        nvtx.range_push("Optimizer Step")
        self.optimizer.step()
        nvtx.range_pop()

    def _run_epoch(self, epoch):
        print(f"[GPU{self.global_rank}] Epoch {epoch} | Steps: {len(self.train_data)}")
        self.train_data.sampler.set_epoch(epoch)
        nvtx.range_push(f"Epoch {epoch} Start")
        for step, (source, targets) in enumerate(self.train_data):
            nvtx.range_push(f"Step {step} Start")
            source = source.to(self.local_rank)
            targets = targets.to(self.local_rank)
            self._run_batch(source, targets)
            nvtx.range_pop()  # Step end
        nvtx.range_pop()

    def train(self, max_epochs: int):
        nvtx.range_push(f"Entire training ")
        for epoch in range(max_epochs):
            nvtx.range_push(f"Training Epoch {epoch}")
            self._run_epoch(epoch)
            nvtx.range_pop()
        nvtx.range_pop()


def load_train_objs(num_epochs, batch_size_per_gpu, world_size):
    train_set = SyntheticDataset(num_epochs, batch_size_per_gpu, world_size)
    model = models.resnet50(pretrained=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    return train_set, model, optimizer


def prepare_dataloader(dataset: Dataset, batch_size: int):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        pin_memory=True,
        shuffle=False,
        sampler=DistributedSampler(dataset),
        num_workers=2
    )


def main(total_epochs: int, batch_size: int):
    profiler.start()
    world_size, rank = ddp_setup()
    batch_size_per_gpu = batch_size // world_size
    dataset, model, optimizer = load_train_objs(total_epochs, batch_size_per_gpu, world_size)
    train_data = prepare_dataloader(dataset, batch_size_per_gpu)
    trainer = Trainer(model, train_data, optimizer)
    trainer.train(total_epochs)
    print('Will now destroy the process group\n')
    destroy_process_group()
    print('Process group destroyed')
    profiler.stop()
    import sys
    sys.exit(0)


import random


class SyntheticDataset(Dataset):
    def __init__(self, num_epochs, batch_size_per_gpu, world_size):
        self.num_epochs = num_epochs
        self.batch_size_per_gpu = batch_size_per_gpu
        self.num_iters = world_size
        self.len = int(os.environ.get("SAMPLES", "10000"))

    def __getitem__(self, idx):
        data = torch.randn(3, 224, 224)
        target = random.randint(0, 999)
        return (data, target)

    def __len__(self):
        return self.len


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description='simple distributed training job')
    parser.add_argument('total_epochs', type=int, help='Total epochs to train the model')
    parser.add_argument('batch_size', default=32, type=int, help='Input batch size on each device (default: 32)')
    args = parser.parse_args()
    main(args.total_epochs, args.batch_size)

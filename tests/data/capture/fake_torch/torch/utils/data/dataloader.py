"""torch.utils.data.dataloader as the capture hook sees it: every iterator's __next__ is
_BaseDataLoaderIter.__next__, which asks the subclass for the next item (_next_data)."""


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._index = 0

    def __iter__(self):
        return self

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        return self._next_data()


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def _next_data(self):
        if self._index >= len(self._dataset):
            raise StopIteration
        item = self._dataset[self._index]
        self._index += 1
        return item


class DataLoader:
    def __init__(self, dataset, batch_size=1, num_workers=0, **kwargs):
        self.dataset = dataset

    def __iter__(self):
        return _SingleProcessDataLoaderIter(self)

    def __len__(self):
        return len(self.dataset)

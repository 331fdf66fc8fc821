"""tp.utils.data against torch.utils.data: datasets, samplers, collation, DataLoader."""
import collections
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import tensorplay as tp
from tensorplay.errors import ShapeError
from tensorplay.utils import data as D


def same(got, expected):
    """A TensorPlay structure equals a torch one: same containers, tensor dtypes and values."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(got, tp.Tensor), type(got)
        assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
        assert tuple(got.shape) == tuple(expected.shape)
        np.testing.assert_array_equal(np.asarray(got), expected.numpy())
    elif isinstance(expected, dict):
        assert type(got) is type(expected) and list(got) == list(expected)
        for k in expected:
            same(got[k], expected[k])
    elif isinstance(expected, (list, tuple)):
        assert type(got) is type(expected), (type(got), type(expected))
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            same(g, e)
    else:
        assert got == expected and type(got) is type(expected)


def to_torch(x):
    if isinstance(x, tp.Tensor):
        return torch.from_numpy(np.array(x))
    if isinstance(x, dict):
        return type(x)((k, to_torch(v)) for k, v in x.items())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*map(to_torch, x))
    if isinstance(x, (list, tuple)):
        return type(x)(map(to_torch, x))
    return x


Point = collections.namedtuple("Point", "x y")

SAMPLES = {
    "tensors": [tp.tensor([1.0, 2.0]), tp.tensor([3.0, 4.0])],
    "int_tensors": [tp.tensor(3), tp.tensor(4)],
    "ints": [1, 2, 3],
    "floats": [1.5, 2.0],
    "bools": [True, False],
    "strings": ["a", "bc"],
    "np_arrays": [np.arange(3, dtype=np.int32), np.arange(3, 6, dtype=np.int32)],
    "np_scalars": [np.float32(1.5), np.float32(2.5)],
    "tuples": [(1, 2.0, "a"), (3, 4.0, "b")],
    "lists": [[1, 2], [3, 4]],
    "dicts": [{"a": 1, "b": np.ones(2)}, {"a": 2, "b": np.zeros(2)}],
    "ordered": [collections.OrderedDict(b=1.0, a=2), collections.OrderedDict(b=3.0, a=4)],
    "namedtuples": [Point(1, 2.5), Point(3, 4.5)],
    "nested": [{"x": (tp.ones(2), [1, 2]), "y": "s"}, {"x": (tp.zeros(2), [3, 4]), "y": "t"}],
}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_default_collate_matches_torch(name):
    batch = SAMPLES[name]
    same(D.default_collate(batch), tud.default_collate(to_torch(batch)))


@pytest.mark.parametrize("name", ["np_arrays", "dicts", "tuples", "namedtuples", "ints"])
def test_default_convert_matches_torch(name):
    sample = SAMPLES[name][0]
    same(D.default_convert(sample), tud.default_convert(to_torch(sample)))


def test_default_collate_errors():
    with pytest.raises(TypeError, match="default_collate: batch must contain .*object"):
        D.default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate"):
        D.default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="equal size"):
        D.default_collate([[1, 2], [3]])
    with pytest.raises(RuntimeError, match=r"stack expects .*\[2\] at entry 0 and \[3\]"):
        D.default_collate([tp.ones(2), tp.ones(3)])


# ---- datasets --------------------------------------------------------------------------
def test_tensor_dataset_and_errors():
    x, y = tp.arange(12.0).reshape(6, 2), tp.arange(6)
    ds = D.TensorDataset(x, y)
    assert len(ds) == 6
    xi, yi = ds[2]
    assert xi.tolist() == [4.0, 5.0] and yi.item() == 2
    with pytest.raises(ShapeError, match="tensor 0 has 6 rows but tensor 1 has 5"):
        D.TensorDataset(x, tp.arange(5))
    with pytest.raises(ShapeError, match="0-d"):
        D.TensorDataset(tp.tensor(1.0))
    with pytest.raises(TypeError, match="item 1 is list"):
        D.TensorDataset(x, [1, 2])


def test_concat_subset_and_add():
    a = D.TensorDataset(tp.arange(3))
    b = D.TensorDataset(tp.arange(10, 15))
    c = a + b
    assert isinstance(c, D.ConcatDataset) and len(c) == 8 and c.cumulative_sizes == [3, 8]
    assert [c[i][0].item() for i in range(8)] == [0, 1, 2, 10, 11, 12, 13, 14]
    assert c[-1][0].item() == 14
    with pytest.raises(IndexError):
        c[8]
    with pytest.raises(ValueError, match="should not exceed"):
        c[-9]
    with pytest.raises(ValueError, match="empty"):
        D.ConcatDataset([])
    s = D.Subset(c, [7, 0, 4])
    assert len(s) == 3 and [s[i][0].item() for i in range(3)] == [14, 0, 11]


def test_stack_and_chain_datasets():
    a, b = D.TensorDataset(tp.arange(3)), D.TensorDataset(tp.arange(3) * 2)
    st = D.StackDataset(a, b)
    assert st[1][1][0].item() == 2
    assert D.StackDataset(p=a, q=b)[2]["q"][0].item() == 4
    with pytest.raises(ValueError, match="Size mismatch"):
        D.StackDataset(a, D.TensorDataset(tp.arange(4)))

    class Count(D.IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

    assert list(Count(2) + Count(3)) == [0, 1, 0, 1, 2]


def test_random_split_lengths_fractions_and_seed():
    ds = D.TensorDataset(tp.arange(10))
    a, b = D.random_split(ds, [3, 7], generator=tp.Generator().manual_seed(1))
    assert (len(a), len(b)) == (3, 7)
    assert sorted(a.indices + b.indices) == list(range(10))
    a2, _ = D.random_split(ds, [3, 7], generator=tp.Generator().manual_seed(1))
    assert a.indices == a2.indices
    # fractions: floor, then the remainder round-robin (torch gives the same lengths)
    for fracs in ([0.5, 0.5], [0.33, 0.33, 0.34], [0.1, 0.9], [0.25, 0.25, 0.25, 0.25]):
        got = [len(s) for s in D.random_split(ds, fracs)]
        expected = [len(s) for s in tud.random_split(range(10), fracs)]
        assert got == expected, fracs
    tp.manual_seed(5)
    first = D.random_split(ds, [5, 5])[0].indices
    tp.manual_seed(5)
    assert D.random_split(ds, [5, 5])[0].indices == first
    with pytest.raises(ValueError, match=r"Sum of input lengths \(9\) does not equal .* \(10\)"):
        D.random_split(ds, [4, 5])


# ---- samplers --------------------------------------------------------------------------
def test_samplers():
    data = list(range(10))
    assert list(D.SequentialSampler(data)) == data
    g = tp.Generator().manual_seed(0)
    perm = list(D.RandomSampler(data, generator=g))
    assert sorted(perm) == data and perm != data
    assert list(D.RandomSampler(data, generator=tp.Generator().manual_seed(0))) == perm
    rep = list(D.RandomSampler(data, replacement=True, num_samples=25, generator=g))
    assert len(rep) == 25 and all(0 <= i < 10 for i in rep)
    more = list(D.RandomSampler(data, num_samples=23, generator=g))
    assert len(more) == 23 and sorted(more[:10]) == data and sorted(more[10:20]) == data
    sub = list(D.SubsetRandomSampler([5, 7, 9], generator=g))
    assert sorted(sub) == [5, 7, 9]
    w = list(D.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200, generator=g))
    assert set(w) == {1, 3} and 100 < w.count(3) < 190
    nw = list(D.WeightedRandomSampler([1, 1, 1, 0], 3, replacement=False, generator=g))
    assert sorted(nw) == [0, 1, 2]
    assert list(D.BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(D.BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(D.BatchSampler(range(7), 3, False)) == 3
    assert len(D.BatchSampler(range(7), 3, True)) == 2


def test_sampler_errors_match_torch():
    for fn in (lambda m: m.RandomSampler([1, 2], num_samples=0),
               lambda m: m.RandomSampler([1, 2], replacement=1),
               lambda m: m.BatchSampler(range(3), 0, False),
               lambda m: m.BatchSampler(range(3), True, False),
               lambda m: m.BatchSampler(range(3), 2, 1),
               lambda m: m.WeightedRandomSampler([1.0, 2.0], 0),
               lambda m: m.WeightedRandomSampler([[1.0, 2.0]], 2)):
        with pytest.raises(Exception) as expected:
            fn(tud)
        with pytest.raises(type(expected.value)):
            fn(D)
    with pytest.raises(ValueError, match="non-negative"):
        D.WeightedRandomSampler([1.0, -1.0], 2)
    with pytest.raises(ValueError, match="without replacement"):
        D.WeightedRandomSampler([1.0, 0.0], 2, replacement=False)


# ---- DataLoader ------------------------------------------------------------------------
def make_ds(n=10):
    return D.TensorDataset(tp.arange(n * 2.0).reshape(n, 2), tp.arange(n))


@pytest.mark.parametrize("n,bs,drop_last", [(10, 3, False), (10, 3, True), (10, 5, False),
                                            (10, 1, False), (4, 8, False), (4, 8, True)])
def test_dataloader_sequential_matches_torch(n, bs, drop_last):
    ds = make_ds(n)
    tds = tud.TensorDataset(*(to_torch(t) for t in ds.tensors))
    got = list(D.DataLoader(ds, batch_size=bs, drop_last=drop_last))
    expected = list(tud.DataLoader(tds, batch_size=bs, drop_last=drop_last))
    assert len(D.DataLoader(ds, batch_size=bs, drop_last=drop_last)) == len(expected)
    same(got, expected)


def test_fast_path_equals_generic_path():
    """The TensorDataset gather and per-sample collation give the same batches."""
    ds = make_ds(9)
    ds.tensors[0].requires_grad_(True)
    sampler = [[3, 1, -1], [0], [8, 8, 2]]
    fast = list(D.DataLoader(ds, batch_sampler=sampler))
    slow = list(D.DataLoader(ds, batch_sampler=sampler, collate_fn=lambda b: D.default_collate(b)))
    for f, s in zip(fast, slow):
        for a, b in zip(f, s):
            assert a.dtype == b.dtype and a.tolist() == b.tolist()
            assert a.requires_grad == b.requires_grad
    with pytest.raises(IndexError, match="index 9 is out of range .* of 9 samples"):
        list(D.DataLoader(ds, batch_sampler=[[9]]))


def test_subset_of_tensor_dataset_fast_path():
    ds = make_ds(10)
    train, _ = D.random_split(ds, [6, 4], generator=tp.Generator().manual_seed(3))
    inner = D.Subset(train, [5, 0, 2])
    (xb, yb), = list(D.DataLoader(inner, batch_size=3))
    expected = [train.indices[i] for i in (5, 0, 2)]
    assert yb.tolist() == expected and xb[:, 0].tolist() == [2.0 * i for i in expected]


def test_shuffle_is_reproducible():
    ds = make_ds(20)

    def order(**kw):
        return [i for _, yb in D.DataLoader(ds, batch_size=4, shuffle=True, **kw)
                for i in yb.tolist()]

    a = order(generator=tp.Generator().manual_seed(7))
    assert sorted(a) == list(range(20)) and a != list(range(20))
    assert order(generator=tp.Generator().manual_seed(7)) == a
    tp.manual_seed(11)
    b = order()
    tp.manual_seed(11)
    assert order() == b
    # a new epoch is a new permutation
    g = tp.Generator().manual_seed(7)
    loader = D.DataLoader(ds, batch_size=20, shuffle=True, generator=g)
    e1, e2 = [next(iter(loader))[1].tolist() for _ in range(2)]
    assert e1 != e2


def test_batch_size_none_and_custom_collate():
    ds = [np.arange(3), np.arange(3, 6)]
    items = list(D.DataLoader(ds, batch_size=None))
    expected = list(tud.DataLoader(ds, batch_size=None))
    same(items, expected)
    assert len(D.DataLoader(ds, batch_size=None)) == 2
    got = list(D.DataLoader(list(range(5)), batch_size=2, collate_fn=lambda b: sum(b)))
    assert got == [1, 5, 4]


def test_dataloader_over_dict_dataset_matches_torch():
    samples = [{"img": np.full((2, 2), i, np.float32), "label": i, "name": f"s{i}"}
               for i in range(5)]
    got = list(D.DataLoader(samples, batch_size=2))
    expected = list(tud.DataLoader(samples, batch_size=2))
    same(got, expected)


class Stream(D.IterableDataset):
    def __init__(self, n, with_len=True):
        self.n = n
        self.with_len = with_len

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        if not self.with_len:
            raise TypeError("no len")
        return self.n


@pytest.mark.parametrize("bs,drop_last", [(3, False), (3, True), (None, False), (10, False)])
def test_iterable_dataset_matches_torch(bs, drop_last):
    class TStream(tud.IterableDataset):
        def __iter__(self):
            return iter(range(7))

    got = list(D.DataLoader(Stream(7), batch_size=bs, drop_last=drop_last))
    expected = list(tud.DataLoader(TStream(), batch_size=bs, drop_last=drop_last))
    same(got, expected)
    n = len(D.DataLoader(Stream(7), batch_size=bs, drop_last=drop_last))
    assert n == {(3, False): 3, (3, True): 2, (None, False): 7, (10, False): 1}[(bs, drop_last)]
    with pytest.raises(TypeError):
        len(D.DataLoader(Stream(7, with_len=False), batch_size=bs, drop_last=drop_last))


def test_mutually_exclusive_options_match_torch():
    ds, tds = make_ds(4), tud.TensorDataset(torch.arange(4))
    cases = [
        dict(sampler=[0, 1], shuffle=True),
        dict(batch_sampler=[[0]], batch_size=2),
        dict(batch_sampler=[[0]], shuffle=True),
        dict(batch_sampler=[[0]], sampler=[0]),
        dict(batch_sampler=[[0]], drop_last=True),
        dict(batch_size=None, drop_last=True),
        dict(num_workers=-1),
        dict(timeout=-1),
        dict(prefetch_factor=2),
        dict(persistent_workers=True),
    ]
    for kw in cases:
        with pytest.raises(ValueError) as expected:
            tud.DataLoader(tds, **kw)
        with pytest.raises(ValueError) as got:
            D.DataLoader(ds, **kw)
        assert str(got.value) == str(expected.value), kw
    for kw in (dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])):
        with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected "
                                             "unspecified"):
            D.DataLoader(Stream(3), **kw)
    loader = D.DataLoader(ds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after "
                                         "DataLoader is initialized"):
        loader.batch_size = 3


def test_threaded_workers_keep_order_and_worker_info():
    seen = set()

    class Slow(D.Dataset):
        def __len__(self):
            return 12

        def __getitem__(self, i):
            info = D.get_worker_info()
            seen.add((info.id, info.num_workers))
            time.sleep(0.001 * (12 - i))   # later items finish first: order must still hold
            return i

    init_ids = []
    loader = D.DataLoader(Slow(), batch_size=2, num_workers=3,
                          worker_init_fn=init_ids.append)
    assert [b.tolist() for b in loader] == [[2 * k, 2 * k + 1] for k in range(6)]
    assert sorted(init_ids) == list(range(len(init_ids))) and 1 <= len(init_ids) <= 3
    assert {n for _, n in seen} == {3}
    assert D.get_worker_info() is None
    fast = D.DataLoader(make_ds(10), batch_size=4, num_workers=2)
    same(list(fast), to_torch(list(D.DataLoader(make_ds(10), batch_size=4))))
    with pytest.raises(NotImplementedError, match="num_workers=2 with an IterableDataset"):
        D.DataLoader(Stream(3), num_workers=2)


def test_worker_errors_surface():
    class Bad(D.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            raise KeyError(f"sample {i}")

    with pytest.raises(KeyError, match="sample 0"):
        list(D.DataLoader(Bad(), batch_size=2, num_workers=2))


def test_per_batch_overhead_is_small():
    """An epoch over a TensorDataset costs far less than stacking rows would."""
    ds = D.TensorDataset(tp.randn(4096, 16), tp.randint(0, 10, (4096,)))
    loader = D.DataLoader(ds, batch_size=64, shuffle=True)
    list(loader)
    start = time.perf_counter()
    n = sum(1 for _ in loader)
    per_batch = (time.perf_counter() - start) / n
    assert n == 64
    assert per_batch < 2e-3, f"{per_batch * 1e6:.0f} us per batch"


def test_tensor_dataset_on_cuda_batches_on_cuda():
    pytest.importorskip("triton")
    if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
        pytest.skip("no GPU and no Triton interpreter")
    x = tp.arange(12.0).reshape(6, 2)
    ds = D.TensorDataset(x.to("cuda"), tp.arange(6))
    loader = D.DataLoader(ds, batch_size=4, shuffle=True, generator=tp.Generator().manual_seed(2))
    batches = list(loader)
    assert [tuple(b[0].shape) for b in batches] == [(4, 2), (2, 2)]
    assert batches[0][0].device == tp.device("cuda") and batches[0][1].device == tp.device("cpu")
    for xb, yb in batches:
        assert xb.cpu().tolist() == x.index_select(0, yb).tolist()

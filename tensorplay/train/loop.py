"""The training loop behind `python -m tensorplay train`.

    prepare(options)   seeds, data, model, optimizer; restores a checkpoint (--resume)
    train_epoch(...)   one pass over the shuffled training set, with a progress bar
    evaluate(...)      loss and accuracy on the test set, no gradients
    run(options)       the epochs, then the report, the checkpoint and the curves

Reproducibility: epoch e (counted over resumes) reseeds the global generator (dropout)
and the DataLoader's shuffling generator from (seed, e), so a run resumed after epoch k
computes exactly what the uninterrupted run computes.

Under torchrun (WORLD_SIZE > 1) the model is wrapped in DistributedDataParallel and each
rank trains on its shard; distributed.py has the pieces, and only rank 0 reports.

tqdm (the bars) and matplotlib (the PNG of the curves) are optional extras
(`pip install tensorplay[train]`): without tqdm a plain line per epoch says how far
training got, without matplotlib the curves are written as a CSV of the numbers.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass, field

import tensorplay as tp
from tensorplay import nn
from tensorplay.train import data, distributed, models, route
from tensorplay.utils.data import DataLoader

CHECKPOINT = "checkpoint.tp"
CURVES = "curves.png"
PROFILE_ROWS = 25
SAMPLE_PROMPT = "Shall I compare thee"
SAMPLE_LENGTH = 200


@dataclass
class Run:
    """Everything one invocation trains with."""
    options: dict               # the resolved command-line options (saved in the checkpoint)
    model: nn.Module
    optimizer: tp.optim.Optimizer
    split: data.Split
    vocab: data.Vocabulary | None
    start_epoch: int = 0
    history: dict = field(default_factory=lambda: {
        "train_loss": [], "train_acc": [], "test_loss": [], "test_acc": []})
    cluster: distributed.Cluster | None = None     # set under torchrun
    parallel: nn.Module | None = None              # the model wrapped in DDP, then

    @property
    def device(self):
        return tp.device(self.options["device"])

    @property
    def trained(self):
        """What a training step calls: the DDP wrapper under torchrun, else the model."""
        return self.parallel if self.parallel is not None else self.model


def epoch_seed(seed, epoch):
    """The seed of epoch `epoch`: distinct per epoch, the same in a resumed run."""
    return seed * 100_003 + epoch + 1


def make_optimizer(name, params, lr):
    if name == "sgd":
        return tp.optim.SGD(params, lr=lr, momentum=0.9)
    if name == "adam":
        return tp.optim.Adam(params, lr=lr)
    if name == "adamw":
        return tp.optim.AdamW(params, lr=lr, weight_decay=0.01)
    raise ValueError(f"unknown optimizer {name!r}")


def load_data(options):
    if options["model"] == "transformer":
        return data.text(options["context"], limit=options["limit"])
    return data.digits(options["seed"], limit=options["limit"]), None


def prepare(options, checkpoint=None):
    """Build the run from resolved `options`; `checkpoint` (a tp.load result) restores the
    model, the optimizer state, the epoch counter and the history."""
    tp.manual_seed(options["seed"])
    split, vocab = load_data(options)
    model = models.build(options["model"], split.num_classes, context=options["context"])
    model.to(options["device"])
    optimizer = make_optimizer(options["optimizer"], model.parameters(), options["lr"])
    run = Run(options, model, optimizer, split, vocab)
    if checkpoint is not None:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        run.start_epoch = int(checkpoint["epoch"])
        run.history = {k: list(v) for k, v in checkpoint["history"].items()}
    return run


def flat_logits(model, inputs, targets):
    """The model's logits as (examples, classes) and the targets as (examples,): a digit
    batch is that already, a text batch (N, T, V) becomes (N*T, V)."""
    logits = model(inputs)
    return logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)


def train_step(run, inputs, targets):
    """Forward, backward, optimizer step; returns (loss, correct, examples)."""
    logits, targets = flat_logits(run.trained, inputs, targets)
    loss = nn.functional.cross_entropy(logits, targets)
    run.optimizer.zero_grad()
    loss.backward()
    run.optimizer.step()
    correct = int((logits.argmax(1) == targets).sum().item())
    return float(loss.item()), correct, targets.shape[0]


def explained_step(run, inputs, targets):
    """train_step with each phase under tp.dispatch.explain(); returns the step's result
    and the route summary text."""
    with tp.dispatch.explain(file=False) as forward:
        logits, flat_targets = flat_logits(run.trained, inputs, targets)
        loss = nn.functional.cross_entropy(logits, flat_targets)
    run.optimizer.zero_grad()
    with tp.dispatch.explain(file=False) as backward:
        loss.backward()
    with tp.dispatch.explain(file=False) as step:
        run.optimizer.step()
    correct = int((logits.argmax(1) == flat_targets).sum().item())
    text = route.summarise([("forward (model and loss)", forward.lines),
                            ("backward", backward.lines),
                            (f"optimizer step ({type(run.optimizer).__name__})", step.lines)])
    return (float(loss.item()), correct, flat_targets.shape[0]), text


def train_epoch(run, epoch, total_epochs, explain=False, progress=True):
    """One epoch; returns (mean loss, accuracy, explain summary or None)."""
    seed = epoch_seed(run.options["seed"], epoch)
    tp.manual_seed(seed)
    if run.cluster is None:
        loader = DataLoader(run.split.train, batch_size=run.options["batch_size"],
                            shuffle=True, generator=tp.Generator().manual_seed(seed))
    else:
        loader = distributed.shard_loader(run.split.train, run.options["batch_size"],
                                          run.options["seed"], epoch)
    run.model.train()
    loss_sum = 0.0
    correct = seen = 0
    summary = None
    bar = progress_bar(loader, f"epoch {epoch + 1}/{total_epochs}", progress)
    for inputs, targets in bar:
        inputs, targets = inputs.to(run.device), targets.to(run.device)
        if explain and summary is None:
            (loss, right, count), summary = explained_step(run, inputs, targets)
        else:
            loss, right, count = train_step(run, inputs, targets)
        loss_sum += loss * count
        correct += right
        seen += count
        bar.set_postfix(loss=f"{loss_sum / seen:.4f}", acc=f"{correct / seen:.3f}")
    bar.close()
    if run.cluster is not None:
        loss_sum, correct, seen = distributed.sum_over_ranks(loss_sum, correct, seen)
    return loss_sum / seen, correct / seen, summary


@tp.no_grad()
def evaluate(run, dataset, batch_size=512):
    """(mean loss, accuracy, correct, examples) of the model on `dataset`, in eval mode."""
    run.model.eval()
    loss_sum = 0.0
    correct = seen = 0
    for inputs, targets in DataLoader(dataset, batch_size=batch_size):
        inputs, targets = inputs.to(run.device), targets.to(run.device)
        logits, targets = flat_logits(run.model, inputs, targets)
        loss = nn.functional.cross_entropy(logits, targets, reduction="sum")
        loss_sum += float(loss.item())
        correct += int((logits.argmax(1) == targets).sum().item())
        seen += targets.shape[0]
    return loss_sum / seen, correct / seen, correct, seen


def save_checkpoint(run, epoch, path):
    tp.save({"model": run.model.state_dict(), "optimizer": run.optimizer.state_dict(),
             "epoch": epoch, "args": run.options, "history": run.history,
             "vocab": "".join(run.vocab.chars) if run.vocab is not None else None}, path)


def progress_bar(loader, description, enabled):
    """tqdm's bar over `loader` (on stderr, gone when the epoch ends), or without tqdm
    installed a PlainProgress."""
    try:
        from tqdm import tqdm
    except ImportError:
        return PlainProgress(loader, description, enabled)
    return tqdm(loader, desc=description, unit="batch", leave=False, file=sys.stderr,
                disable=not enabled)


class PlainProgress:
    """What the loop uses of a tqdm bar, printing one line to stderr when the epoch ends:
    `epoch 2/5: 45 batches, loss=0.31, acc=0.91`."""

    def __init__(self, loader, description, enabled):
        self.loader, self.description, self.enabled = loader, description, enabled
        self.batches = 0
        self.postfix = {}

    def __iter__(self):
        for item in self.loader:
            self.batches += 1
            yield item

    def set_postfix(self, **values):
        self.postfix = values

    def close(self):
        if self.enabled:
            shown = "".join(f", {k}={v}" for k, v in self.postfix.items())
            print(f"{self.description}: {self.batches} batches{shown}", file=sys.stderr)


def plot_curves(history, title, path):
    """Loss and accuracy per epoch, train and test, side by side, as a PNG at `path`;
    without matplotlib, the numbers as a CSV beside it. Returns the file written."""
    try:
        import matplotlib
    except ImportError:
        return write_curves_csv(history, os.path.splitext(path)[0] + ".csv")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = range(1, len(history["train_loss"]) + 1)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, label in ((ax_loss, "loss", "cross-entropy loss"),
                           (ax_acc, "acc", "accuracy")):
        ax.plot(epochs, history[f"train_{key}"], "o-", label="train")
        ax.plot(epochs, history[f"test_{key}"], "s-", label="test")
        ax.set_xlabel("epoch")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_curves_csv(history, path):
    """The curves' numbers: a header line, then one row per epoch."""
    keys = ("train_loss", "train_acc", "test_loss", "test_acc")
    with open(path, "w") as f:
        print("epoch," + ",".join(keys), file=f)
        for epoch, row in enumerate(zip(*(history[k] for k in keys)), start=1):
            print(f"{epoch}," + ",".join(f"{v:.6g}" for v in row), file=f)
    return path


def sample_text(run, length=SAMPLE_LENGTH):
    """A continuation of SAMPLE_PROMPT drawn from the model (seeded, so reproducible)."""
    run.model.eval()
    prompt = tp.tensor(run.vocab.encode(SAMPLE_PROMPT)).to(run.device)
    generator = tp.Generator().manual_seed(run.options["seed"])
    new = run.model.generate(prompt, length, generator=generator)
    return SAMPLE_PROMPT + run.vocab.decode(new.tolist())


def blas_threads(count):
    """Limit NumPy's BLAS to `count` threads inside the block (threadpoolctl comes with
    scikit-learn; without it the block changes nothing)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=count, user_api="blas")


def run_training(options, checkpoint=None, out=None, progress=True):
    """Train as `options` say and print the report to `out` (stdout by default).

    Returns a dict: test_acc, test_loss, history, checkpoint and curves paths, seconds.
    Under torchrun every rank trains and rank 0 alone prints and saves."""
    cluster = distributed.join_if_launched()
    if cluster is not None and not cluster.is_main:
        out, progress = open(os.devnull, "w"), False
    try:
        with blas_threads(options.get("threads", 1)):
            return train_and_report(options, checkpoint, out or sys.stdout, progress, cluster)
    finally:
        if cluster is not None and not cluster.is_main:
            out.close()
        distributed.leave(cluster)


def train_and_report(options, checkpoint, out, progress, cluster=None):
    started = time.perf_counter()
    run = prepare(options, checkpoint)
    if cluster is not None:
        run.cluster = cluster
        run.parallel = distributed.wrap(run.model)
    first = run.start_epoch
    last = first + options["epochs"]
    what = (f"{len(run.split.train)} windows of {options['context']} characters"
            if run.vocab is not None else f"{len(run.split.train)} digit images")
    print(f"training {options['model']} on {what}, testing on {len(run.split.test)}; "
          f"{options['optimizer']} lr {options['lr']:g}, batch {options['batch_size']}, "
          f"epochs {first + 1}..{last}, device {options['device']}, seed {options['seed']}",
          file=out)
    if cluster is not None:
        print(f"data-parallel: {cluster.world_size} processes, batch {options['batch_size']} "
              f"each ({cluster.world_size * options['batch_size']} per step)", file=out)
    n_params = sum(p.numel() for p in run.model.parameters())
    print(f"model: {type(run.model).__name__}, {n_params:,} parameters", file=out)

    training_seconds = 0.0
    for epoch in range(first, last):
        tick = time.perf_counter()
        if options["profile"] and epoch == first:
            with tp.profiler.profile() as prof:
                train_loss, train_acc, summary = train_epoch(
                    run, epoch, last, options["explain"] and epoch == first, progress)
        else:
            prof = None
            train_loss, train_acc, summary = train_epoch(
                run, epoch, last, options["explain"] and epoch == first, progress)
        training_seconds += time.perf_counter() - tick
        test_loss, test_acc, _, _ = evaluate(run, run.split.test)
        for key, value in (("train_loss", train_loss), ("train_acc", train_acc),
                           ("test_loss", test_loss), ("test_acc", test_acc)):
            run.history[key].append(value)
        print(f"epoch {epoch + 1}/{last}  train loss {train_loss:.4f} acc {train_acc:6.2%}  "
              f"test loss {test_loss:.4f} acc {test_acc:6.2%}  "
              f"({time.perf_counter() - tick:.1f} s)", file=out)
        if summary is not None:
            print(summary, file=out)
        if prof is not None:
            print_profile(prof, epoch + 1, out)

    test_loss, test_acc, correct, seen = evaluate(run, run.split.test)
    checkpoint_path = os.path.join(options["out"], CHECKPOINT)
    curves_path = os.path.join(options["out"], CURVES)
    if cluster is None or cluster.is_main:
        os.makedirs(options["out"], exist_ok=True)
        save_checkpoint(run, last, checkpoint_path)
        curves_path = plot_curves(run.history, f"tensorplay train --model {options['model']}",
                                  curves_path)
    seconds = time.perf_counter() - started

    unit = "next characters" if run.vocab is not None else "test images"
    print(f"test accuracy: {test_acc:.2%} ({correct}/{seen} {unit}), test loss {test_loss:.4f}",
          file=out)
    sample = None
    if run.vocab is not None:
        sample = sample_text(run)
        print(f"sample:\n{sample}", file=out)
    print(f"wall time: {seconds:.1f} s ({training_seconds:.1f} s training)", file=out)
    print(f"checkpoint: {checkpoint_path}", file=out)
    print(f"curves: {curves_path}", file=out)
    return {"test_acc": test_acc, "test_loss": test_loss, "history": run.history,
            "checkpoint": checkpoint_path, "curves": curves_path, "seconds": seconds,
            "sample": sample, "epoch": last}


def print_profile(prof, epoch, out):
    """The profiler's table for one epoch, cut to its PROFILE_ROWS costliest ops."""
    lines = prof.table().splitlines()
    print(f"profile of epoch {epoch} (ops by total time; nested calls count in their callers "
          f"too):", file=out)
    print("\n".join(lines[:PROFILE_ROWS + 1]), file=out)
    if len(lines) > PROFILE_ROWS + 1:
        print(f"... {len(lines) - PROFILE_ROWS - 1} more ops", file=out)

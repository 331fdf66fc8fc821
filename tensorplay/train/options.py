"""The options of `python -m tensorplay train`, and how their values are settled.

An option left out takes, in this order: the value saved in the --resume checkpoint
(model, optimizer, lr, batch size, seed, context, limit), then the model's default
below. --epochs counts the epochs of this invocation (a resumed run trains that many
more). Every check that can fail runs here, before any training starts.
"""
from __future__ import annotations

import argparse
import os

from tensorplay.train.models import MODELS

OPTIMIZERS = ("sgd", "adam", "adamw")
DEVICES = ("cpu", "cuda")
DEFAULT_LR = {"sgd": 0.05, "adam": 2e-3, "adamw": 2e-3}
MODEL_DEFAULTS = {   # the CNN and MLP settings were chosen with PyTorch over several seeds
    "mlp": {"epochs": 20, "batch_size": 32, "optimizer": "adam"},
    "cnn": {"epochs": 10, "batch_size": 32, "optimizer": "adam"},
    "transformer": {"epochs": 15, "batch_size": 32, "optimizer": "adamw"},
}
RESUMED = ("model", "optimizer", "lr", "batch_size", "seed", "context", "limit")
DEFAULT_SEED = 0
DEFAULT_CONTEXT = 32


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
    return value


def add_arguments(parser):
    """The train subcommand's options (None means: settled later, see the module doc)."""
    parser.add_argument("--model", choices=MODELS, default=None,
                        help="what to train: mlp or cnn on the digits, transformer on "
                             "corpus.txt (default: cnn)")
    parser.add_argument("--device", choices=DEVICES, default="cpu",
                        help="cpu (NumPy kernels) or cuda (Triton kernels; without a GPU "
                             "run with TRITON_INTERPRET=1)")
    parser.add_argument("--epochs", type=positive_int, default=None,
                        help="epochs to train in this run (cnn 10, mlp 20, transformer 15)")
    parser.add_argument("--batch-size", type=positive_int, default=None,
                        help="examples per step (default 32)")
    parser.add_argument("--lr", type=positive_float, default=None,
                        help="learning rate (sgd 0.05, adam/adamw 0.002)")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default=None,
                        help="sgd (momentum 0.9), adam or adamw (weight decay 0.01)")
    parser.add_argument("--seed", type=int, default=None,
                        help=f"seeds the split, the initial weights, the shuffling and "
                             f"dropout (default {DEFAULT_SEED})")
    parser.add_argument("--limit", type=positive_int, default=None,
                        help="train on the first N training examples only")
    parser.add_argument("--context", type=positive_int, default=None,
                        help=f"transformer: characters per window (default "
                             f"{DEFAULT_CONTEXT})")
    parser.add_argument("--out", default=None,
                        help="folder for the checkpoint and the curves (default runs/MODEL, "
                             "or the --resume checkpoint's folder)")
    parser.add_argument("--resume", metavar="CHECKPOINT", default=None,
                        help="continue from a checkpoint this command saved")
    parser.add_argument("--explain", action="store_true",
                        help="print the dispatch route of the first training step")
    parser.add_argument("--profile", action="store_true",
                        help="print the op profile of the first epoch")
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="BLAS threads of the NumPy kernels (default 1: the matrices "
                             "here are small, and spinning BLAS threads on busy cores cost "
                             "more than they give)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bars")


def resolve(parser, args):
    """Settle every option; returns (options dict, loaded checkpoint or None).
    Calls parser.error (SystemExit 2 with the usage line) on anything unusable."""
    checkpoint = load_checkpoint(parser, args.resume) if args.resume else None
    saved = checkpoint["args"] if checkpoint is not None else {}
    if args.model is not None and saved and args.model != saved["model"]:
        parser.error(f"--model {args.model} does not match the checkpoint, which holds a "
                     f"{saved['model']} model")
    options = {}
    for name in RESUMED:
        given = getattr(args, name)
        options[name] = given if given is not None else saved.get(name)
    model = options["model"] = options["model"] or "cnn"
    defaults = MODEL_DEFAULTS[model]
    options["optimizer"] = options["optimizer"] or defaults["optimizer"]
    options["batch_size"] = options["batch_size"] or defaults["batch_size"]
    if options["lr"] is None:
        options["lr"] = DEFAULT_LR[options["optimizer"]]
    if options["seed"] is None:
        options["seed"] = DEFAULT_SEED
    if options["context"] is None:
        options["context"] = DEFAULT_CONTEXT
    options["epochs"] = args.epochs or defaults["epochs"]
    options["device"] = args.device
    options["threads"] = args.threads
    options["explain"] = args.explain
    options["profile"] = args.profile
    if args.out is not None:
        options["out"] = args.out
    elif args.resume:
        options["out"] = os.path.dirname(os.path.abspath(args.resume))
    else:
        options["out"] = os.path.join("runs", model)
    check_device(parser, options["device"])
    check_writable(parser, options["out"])
    return options, checkpoint


def load_checkpoint(parser, path):
    import tensorplay as tp

    if not os.path.isfile(path):
        parser.error(f"--resume {path}: no such file")
    try:
        checkpoint = tp.load(path, map_location="cpu")
    except Exception as e:   # a file of the wrong kind: say so, not a traceback
        parser.error(f"--resume {path}: not a checkpoint tp.load can read ({e})")
    missing = {"model", "optimizer", "epoch", "args", "history"} - set(checkpoint)
    if missing:
        parser.error(f"--resume {path}: not a training checkpoint (missing "
                     f"{sorted(missing)})")
    return checkpoint


def check_device(parser, device):
    import tensorplay as tp

    if device != "cuda" or tp.cuda.is_available() or tp.cuda.is_interpreted():
        return
    if not tp.cuda.triton_available():
        parser.error("--device cuda needs the triton package (pip install "
                     "'tensorplay[triton]'), and a GPU or TRITON_INTERPRET=1")
    parser.error("--device cuda: no GPU found (tp.cuda.is_available() is False) and "
                 "Triton's interpreter is off; on a machine without a GPU, run with "
                 "TRITON_INTERPRET=1 set in the environment (slow, but every kernel runs)")


def check_writable(parser, folder):
    """Create `folder` and a probe file in it, so a bad --out fails now, not after
    training. The probe is named by process: under torchrun every rank probes the same
    folder at once, and one rank must not delete another's probe."""
    probe = os.path.join(folder, f".tensorplay-write-probe-{os.getpid()}")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(probe, "w") as f:
            f.write("probe")
        os.remove(probe)
    except OSError as e:
        parser.error(f"--out {folder}: cannot write there ({e.strerror or e})")

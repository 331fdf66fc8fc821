"""The `tensorplay` command (also `python -m tensorplay`).

    tensorplay train [options]    train a model on the digits or on corpus.txt
    tensorplay tour               walk one call through every layer of the framework

With no command it prints this help.
"""
from __future__ import annotations

import argparse
import sys


def build_parser():
    """The `tensorplay` parser and its subcommands' parsers ({'train': ..., 'tour': ...})."""
    parser = argparse.ArgumentParser(
        prog="tensorplay",
        description="TensorPlay: a deep-learning framework you can read.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    train = commands.add_parser(
        "train", help="train a model (default: a CNN on the handwritten digits)",
        description="Train a model on the CPU (or cuda through Triton) and report the test "
                    "accuracy; saves a checkpoint and a PNG of the loss and accuracy curves.")
    from tensorplay.train.options import add_arguments
    add_arguments(train)
    commands.add_parser("tour", help="walk one call through every layer (python -m "
                                     "tensorplay.tour)")
    return parser, commands.choices


def main(argv=None):
    """Run the command `argv` (sys.argv[1:] by default); returns the exit status."""
    parser, commands = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "tour":
        from tensorplay import tour
        tour.main()
        return 0
    from tensorplay.train.loop import run_training
    from tensorplay.train.options import resolve
    options, checkpoint = resolve(commands["train"], args)
    run_training(options, checkpoint, progress=not args.no_progress)
    return 0


if __name__ == "__main__":
    sys.exit(main())

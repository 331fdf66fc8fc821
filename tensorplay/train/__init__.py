"""`python -m tensorplay train`: train a model end to end with tp.nn, tp.optim and
tp.utils.data, then report the test accuracy, save a checkpoint and plot the curves.

    data.py      the digits (scikit-learn) and the character corpus (corpus.txt)
    models.py    DigitsMLP, DigitsCNN, CharTransformer
    options.py   the command's options and their checks
    loop.py      the training loop, evaluation, checkpoint, curves
    route.py     --explain: one step's dispatch route, summarised

The command line itself is in tensorplay/__main__.py.
"""

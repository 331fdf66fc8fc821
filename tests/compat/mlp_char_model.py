# A character-level MLP language model of names, in the style of Andrej Karpathy's
# "makemore" (part 2, after Bengio et al. 2003): the three previous characters are looked
# up in an embedding table C (C[X]), concatenated, passed through a tanh hidden layer
# and a linear layer to 27 logits, and trained with F.cross_entropy by hand-written
# SGD on random minibatches (p.data += -lr * p.grad). Then the loss on the training and
# dev splits, and names sampled from the model.
#
# A plain torch program. tests/test_compat.py runs it as written and again with
# `import torch` rewritten to `import tensorplay as torch`, and compares the printed
# lines: shapes and sampled names exactly, losses within float32 noise. The parameters,
# the minibatches and the samples all come from torch.Generator().manual_seed(...), so
# the two runs print the same numbers only where the two frameworks' generators agree.
# The word list is names.txt beside this file (a few hundred common first names; the
# video uses 32,000), the hidden layer has 100 units (the video: 200) and training runs
# 300 steps (the video: 200,000).
import os
import random

import torch
import torch.nn.functional as F

words = open(os.path.join(os.path.dirname(__file__), 'names.txt'), 'r').read().splitlines()
print(len(words), words[:8])

# build the vocabulary of characters and mappings to/from integers
chars = sorted(list(set(''.join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi['.'] = 0
itos = {i: s for s, i in stoi.items()}
print(itos)

# build the dataset
block_size = 3  # context length: how many characters do we take to predict the next one?


def build_dataset(words):
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + '.':
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]  # crop and append

    X = torch.tensor(X)
    Y = torch.tensor(Y)
    print(X.shape, Y.shape)
    return X, Y


random.seed(42)
random.shuffle(words)
n1 = int(0.8 * len(words))
n2 = int(0.9 * len(words))

Xtr, Ytr = build_dataset(words[:n1])
Xdev, Ydev = build_dataset(words[n1:n2])
Xte, Yte = build_dataset(words[n2:])

g = torch.Generator().manual_seed(2147483647)  # for reproducibility
C = torch.randn((27, 10), generator=g)
W1 = torch.randn((30, 100), generator=g)
b1 = torch.randn(100, generator=g)
W2 = torch.randn((100, 27), generator=g)
b2 = torch.randn(27, generator=g)
parameters = [C, W1, b1, W2, b2]
print(sum(p.nelement() for p in parameters))  # number of parameters in total
for p in parameters:
    p.requires_grad = True

lri = []
lossi = []
stepi = []

for i in range(300):

    # minibatch construct
    ix = torch.randint(0, Xtr.shape[0], (32,), generator=g)

    # forward pass
    emb = C[Xtr[ix]]  # (32, 3, 10)
    h = torch.tanh(emb.view(-1, 30) @ W1 + b1)  # (32, 100)
    logits = h @ W2 + b2  # (32, 27)
    loss = F.cross_entropy(logits, Ytr[ix])

    # backward pass
    for p in parameters:
        p.grad = None
    loss.backward()

    # update
    lr = 0.1 if i < 200 else 0.01
    for p in parameters:
        p.data += -lr * p.grad

    # track stats
    stepi.append(i)
    lossi.append(loss.log10().item())
    if i % 50 == 0:
        print(i, loss.item())

print(loss.item())
print(sum(lossi[-50:]) / 50)

emb = C[Xtr]  # (N, 3, 10)
h = torch.tanh(emb.view(-1, 30) @ W1 + b1)  # (N, 100)
logits = h @ W2 + b2  # (N, 27)
loss = F.cross_entropy(logits, Ytr)
print('train', loss.item())

emb = C[Xdev]  # (N, 3, 10)
h = torch.tanh(emb.view(-1, 30) @ W1 + b1)  # (N, 100)
logits = h @ W2 + b2  # (N, 27)
loss = F.cross_entropy(logits, Ydev)
print('dev', loss.item())

print(C[stoi['a']], C[:, 0].norm().item())

# sample from the model
g = torch.Generator().manual_seed(2147483647 + 10)

for _ in range(10):

    out = []
    context = [0] * block_size  # initialize with all ...
    while True:
        emb = C[torch.tensor([context])]  # (1, block_size, d)
        h = torch.tanh(emb.view(1, -1) @ W1 + b1)
        logits = h @ W2 + b2
        probs = F.softmax(logits, dim=1)
        ix = torch.multinomial(probs, num_samples=1, generator=g).item()
        context = context[1:] + [ix]
        out.append(ix)
        if ix == 0:
            break

    print(''.join(itos[i] for i in out))

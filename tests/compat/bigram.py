# A character-level bigram model of names, in the style of Andrej Karpathy's "makemore"
# (part 1): count every pair of consecutive characters into a 27x27 int32 tensor,
# normalise the counts into probabilities, sample names with torch.multinomial from a
# seeded torch.Generator, and measure the model by its average negative log likelihood.
# Then the same model as a one-layer network: one-hot inputs, a 27x27 weight matrix,
# softmax, and gradient descent on the negative log likelihood plus a little L2.
#
# A plain torch program. tests/test_compat.py runs it as written and again with
# `import torch` rewritten to `import tensorplay as torch`, and compares the printed
# lines: counts and sampled names exactly, probabilities and losses within float32
# noise. The samples and the network's initial weights come from
# torch.Generator().manual_seed(2147483647), so the two runs print the same names only
# where the two frameworks' generators agree. The word list is names.txt beside this
# file (a few hundred common first names; the makemore video uses 32,000), and the
# network trains for 20 steps (the video: 100).
import os

import torch
import torch.nn.functional as F

words = open(os.path.join(os.path.dirname(__file__), 'names.txt'), 'r').read().splitlines()
print(words[:10])
print(len(words), min(len(w) for w in words), max(len(w) for w in words))

N = torch.zeros((27, 27), dtype=torch.int32)

chars = sorted(list(set(''.join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi['.'] = 0
itos = {i: s for s, i in stoi.items()}

for w in words:
    chs = ['.'] + list(w) + ['.']
    for ch1, ch2 in zip(chs, chs[1:]):
        ix1 = stoi[ch1]
        ix2 = stoi[ch2]
        N[ix1, ix2] += 1

print(N.dtype, N.shape, N.sum().item())
print(N[0])
print(N[stoi['e'], stoi['.']], N.max(), N.argmax())

# Sampling from the first row: which character starts a name.
p = N[0].float()
p = p / p.sum()
print(p)

g = torch.Generator().manual_seed(2147483647)
p3 = torch.rand(3, generator=g)
p3 = p3 / p3.sum()
print(p3)
print(torch.multinomial(p3, num_samples=20, replacement=True, generator=g))

g = torch.Generator().manual_seed(2147483647)
ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
print(ix, itos[ix])

# The whole model: every row normalised (with +1 smoothing), then sampled from.
P = (N + 1).float()
P /= P.sum(1, keepdim=True)
print(P[0].sum(), P.shape)

g = torch.Generator().manual_seed(2147483647)
for i in range(10):
    out = []
    ix = 0
    while True:
        p = P[ix]
        ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
        out.append(itos[ix])
        if ix == 0:
            break
    print(''.join(out))

# GOAL: maximize likelihood of the data w.r.t. model parameters (statistical modeling)
# equivalent to maximizing the log likelihood (because log is monotonic)
# equivalent to minimizing the negative log likelihood
# equivalent to minimizing the average negative log likelihood
log_likelihood = 0.0
n = 0
for w in words:
    chs = ['.'] + list(w) + ['.']
    for ch1, ch2 in zip(chs, chs[1:]):
        ix1 = stoi[ch1]
        ix2 = stoi[ch2]
        prob = P[ix1, ix2]
        logprob = torch.log(prob)
        log_likelihood += logprob
        n += 1
print(f'{log_likelihood=}')
nll = -log_likelihood
print(f'{nll=}')
print(f'{nll/n}')

# The same model as a neural network. Create the training set of bigrams (x, y).
xs, ys = [], []
for w in words:
    chs = ['.'] + list(w) + ['.']
    for ch1, ch2 in zip(chs, chs[1:]):
        ix1 = stoi[ch1]
        ix2 = stoi[ch2]
        xs.append(ix1)
        ys.append(ix2)
xs = torch.tensor(xs)
ys = torch.tensor(ys)
num = xs.nelement()
print('number of examples: ', num)

# Initialize the 'network'.
g = torch.Generator().manual_seed(2147483647)
W = torch.randn((27, 27), generator=g, requires_grad=True)

# Gradient descent.
for k in range(20):

    # forward pass
    xenc = F.one_hot(xs, num_classes=27).float()  # input to the network: one-hot encoding
    logits = xenc @ W  # predict log-counts
    counts = logits.exp()  # counts, equivalent to N
    probs = counts / counts.sum(1, keepdims=True)  # probabilities for next character
    loss = -probs[torch.arange(num), ys].log().mean() + 0.01 * (W**2).mean()
    print(k, loss.item())

    # backward pass
    W.grad = None  # set to zero the gradient
    loss.backward()

    # update
    W.data += -50 * W.grad

# Finally, sample from the 'neural net' model.
g = torch.Generator().manual_seed(2147483647)
for i in range(5):
    out = []
    ix = 0
    while True:
        xenc = F.one_hot(torch.tensor([ix]), num_classes=27).float()
        logits = xenc @ W  # predict log-counts
        counts = logits.exp()  # counts, equivalent to N
        p = counts / counts.sum(1, keepdims=True)  # probabilities for next character
        ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
        out.append(itos[ix])
        if ix == 0:
            break
    print(''.join(out))

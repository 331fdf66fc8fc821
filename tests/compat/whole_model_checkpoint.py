"""pytorch/examples' word_language_model way of checkpointing: the whole model object
saved with `torch.save(model, f)` after an epoch and loaded back with
`torch.load(f, weights_only=False)` to go on training (its main.py does exactly this),
then the PyTorch 2.6 way: a state dict under the default `weights_only=True`, an object
refused by that default, and `torch.serialization.safe_globals` allowing a class.

Random values: torch's generator, seeded (torch.manual_seed(0)): the layers' default
initialisation, the data (torch.randint).
"""
import os
import pickle
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    """An embedding, an LSTM and a decoder, as word_language_model's RNNModel."""

    def __init__(self, ntoken, ninp, nhid):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid = nhid

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.encoder(input), hidden)
        return F.log_softmax(self.decoder(output), dim=-1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(1, bsz, self.nhid), weight.new_zeros(1, bsz, self.nhid))


class Settings:
    def __init__(self, lr):
        self.lr = lr


torch.manual_seed(0)
ntoken = 20
model = RNNModel(ntoken, 8, 16)
data = torch.randint(0, ntoken, (12, 4))
criterion = nn.NLLLoss()


def train_steps(model, steps, lr):
    for _ in range(steps):
        hidden = model.init_hidden(4)
        output, hidden = model(data[:-1], hidden)
        loss = criterion(output.view(-1, ntoken), data[1:].reshape(-1))
        model.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
    return loss.item()


print("loss before saving", round(train_steps(model, 5, 1.0), 4))
folder = tempfile.mkdtemp()
path = os.path.join(folder, "model.pt")
with open(path, "wb") as f:
    torch.save(model, f)
with open(path, "rb") as f:
    model = torch.load(f, weights_only=False)
print("loaded", type(model).__name__, model.nhid)
print("loss after loading", round(train_steps(model, 5, 1.0), 4))

# a state dict loads under the default weights_only=True
torch.save(model.state_dict(), os.path.join(folder, "weights.pt"))
state = torch.load(os.path.join(folder, "weights.pt"))
print("state dict keys", len(state), sorted(state)[:3])
fresh = RNNModel(ntoken, 8, 16)
print(fresh.load_state_dict(state))

# a whole object is refused by the default, and allowed by safe_globals
torch.save({"settings": Settings(0.5), "step": 10}, os.path.join(folder, "settings.pt"))
try:
    torch.load(os.path.join(folder, "settings.pt"))
except pickle.UnpicklingError as e:
    print("refused:", str(e).splitlines()[0].split(".")[0])
with torch.serialization.safe_globals([Settings]):
    loaded = torch.load(os.path.join(folder, "settings.pt"))
print("with safe_globals:", loaded["settings"].lr, loaded["step"])

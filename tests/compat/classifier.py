# A small classifier: three Gaussian blobs in the plane, a two-layer MLP trained with
# CrossEntropyLoss and Adam over mini-batches from a DataLoader over a TensorDataset,
# then its state_dict saved with torch.save, loaded into a fresh model with torch.load
# and load_state_dict, and evaluated there.
#
# A plain torch program. tests/test_compat.py runs it as written and again with
# `import torch` rewritten to `import tensorplay as torch`, and compares the final
# losses. So that both runs see the same numbers, the data and every layer's initial
# weights come from NumPy's seeded generator (the layers' default initialisation is
# overwritten under torch.no_grad()), and the DataLoader does not shuffle.
import os
import tempfile

import numpy as np
import torch

rng = np.random.default_rng(0)

# 100 points around each of three centres.
centres = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5]])
points = np.concatenate([c + rng.standard_normal((100, 2)) for c in centres])
labels = np.repeat(np.arange(3), 100)
X = torch.from_numpy(points.astype(np.float32))
Y = torch.from_numpy(labels)      # int64 class indices

dataset = torch.utils.data.TensorDataset(X, Y)
loader = torch.utils.data.DataLoader(dataset, batch_size=32, shuffle=False)


def make_model():
    return torch.nn.Sequential(
        torch.nn.Linear(2, 16),
        torch.nn.ReLU(),
        torch.nn.Linear(16, 3),
    )


model = make_model()
with torch.no_grad():
    for layer in model.modules():
        if isinstance(layer, torch.nn.Linear):
            fan_in = layer.in_features
            w = rng.standard_normal(tuple(layer.weight.shape)) / np.sqrt(fan_in)
            layer.weight.copy_(torch.from_numpy(w.astype(np.float32)))
            layer.bias.zero_()

loss_fn = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

model.train()
for epoch in range(15):
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * xb.shape[0]
    if epoch % 5 == 4:
        print(f"epoch {epoch}: mean loss {total / len(dataset):.6f}")

# Save the trained weights, and load them into a fresh model.
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "classifier.pt")
    torch.save(model.state_dict(), path)
    restored = make_model()
    restored.load_state_dict(torch.load(path))

restored.eval()
with torch.no_grad():
    logits = restored(X)
    accuracy = (logits.argmax(dim=1) == Y).float().mean()
    loss = loss_fn(logits, Y)
    assert torch.equal(logits, model(X)), "the restored model computes something else"
print(f"accuracy {accuracy.item():.4f}")
print(f"final loss {loss.item():.6f}")

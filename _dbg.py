import tensorplay as tp, torch, numpy as np
rng=np.random.default_rng(0)
a=rng.standard_normal((3,3)); G=rng.standard_normal((3,3))
A=tp.tensor(a,dtype=tp.float64,requires_grad=True)
P=tp.linalg.pinv(A, rtol=0.6); print(P.grad_fn, P.grad_fn.next_functions)
At=torch.tensor(a,requires_grad=True)
Pt=torch.linalg.pinv(At, rtol=0.6)
print(np.abs(P.detach().numpy()-Pt.detach().numpy()).max())
g1=tp.autograd.grad((P*tp.tensor(G)).sum(), A)[0]
g2=torch.autograd.grad((Pt*torch.tensor(G)).sum(), At)[0]
print(g1, g2)

"""tp.special's Bessel functions and orthogonal polynomials on `cuda`: Triton ports of
PyTorch's own code (aten/src/ATen/native/Math.h, the Cephes approximations), so that the
device computes what PyTorch's CUDA kernels compute, in float32 or float64.

    unary_kernel        J0, J1, Y0, Y1, I0, I1, K0, K1, exp(x) K0, exp(x) K1, j0 (spherical):
                        rational and Chebyshev-series approximations on a few intervals,
                        their coefficients read from one table (COEFFICIENTS) in memory
    polynomial_kernel   T, U, V, W (and shifted), H, He, L, P: the closed forms, then the
                        three-term recurrence as a loop that runs while any element of the
                        block still has steps to take (each element its own n)

airy_ai and zeta have no Triton kernel yet: `_on_host` kernels run the CPU's code
(cpu_kernels/bessel.py, SciPy) on a host copy, logged by the `tensorplay.dispatch` logger.

The launchers broadcast and convert the inputs into dense row-major tensors first (the
pointwise copy kernel), so the kernels walk flat arrays.
"""
from __future__ import annotations

import logging

import numpy as np
import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay._device_transfer import from_host, to_host
from tensorplay.kernel_support.ops import shape_rule
from triton_kernels import _math
from triton_kernels._launch import INTERPRETED, launch, new_tensor, operands, pointer
from triton_kernels.pointwise import run

BLOCK = 8192 if INTERPRETED else 512

# ---- the coefficient tables (PyTorch's Math.h, from Cephes) --------------------------
_TABLES = {
    # J0 and Y0 for x > 5: P(z)/Q(z), z = 25 / x^2
    "PP0": [7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
            5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
            9.99999999999999997821e-01],
    "PQ0": [9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
            5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
            1.00000000000000000218e+00],
    "QP0": [-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
            -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
            -5.14105326766599330220e+01, -6.05014350600728481186e+00],
    "QQ0": [6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
            7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
            2.42005740240291393179e+02],
    # J0 for x <= 5
    "RP0": [-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
            9.70862251047306323952e+15],
    "RQ0": [4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
            1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
            3.18121955943204943306e+16, 1.71086294081043136091e+18],
    # Y0 for x <= 5
    "YP0": [1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
            -9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
            4.42733268572569800351e+16, -1.84950800436986690637e+16],
    "YQ0": [1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
            8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15,
            2.50596256172653059228e+17],
    # J1 and Y1 for x > 5
    "PP1": [7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
            5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
            1.00000000000000000254e+00],
    "PQ1": [5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
            5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
            9.99999999999999997461e-01],
    "QP1": [5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
            3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
            2.11688757100572135698e+02, 2.52070205858023719784e+01],
    "QQ1": [7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
            9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
            3.36093607810698293419e+02],
    # J1 for x <= 5
    "RP1": [-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
            3.68295732863852883286e+15],
    "RQ1": [6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
            2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
            8.95222336184627338078e+16, 5.32278620332680085395e+18],
    # Y1 for x <= 5
    "YP1": [1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
            -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17],
    "YQ1": [5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
            1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
            6.87141087355300489866e+16, 3.97270608116560655612e+18],
    # I0: Chebyshev series on [0, 8] (of x/2 - 2) and (8, inf) (of 32/x - 2)
    "I0A": [-4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
            1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
            -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
            9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-09,
            -1.30002500998624804212e-08, 6.04699502254191894932e-08, -2.67079385394061173391e-07,
            1.11738753912010371815e-06, -4.41673835845875056359e-06, 1.64484480707288970893e-05,
            -5.75419501008210370398e-05, 1.88502885095841655729e-04, -5.76375574538582365885e-04,
            1.63947561694133579842e-03, -4.32430999505057594430e-03, 1.05464603945949983183e-02,
            -2.37374148058994688156e-02, 4.93052842396707084878e-02, -9.49010970480476444210e-02,
            1.71620901522208775349e-01, -3.04682672343198398683e-01, 6.76795274409476084995e-01],
    "I0B": [-7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
            3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
            1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
            -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
            7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
            -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
            3.39623202570838634515e-09, 2.26666899049817806459e-08, 2.04891858946906374183e-07,
            2.89137052083475648297e-06, 6.88975834691682398426e-05, 3.36911647825569408990e-03,
            8.04490411014108831608e-01],
    "I1A": [2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16,
            -1.10559694773538630805e-15, 7.60068429473540693410e-15, -5.04218550472791168711e-14,
            3.22379336594557470981e-13, -1.98397439776494371520e-12, 1.17361862988909016308e-11,
            -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-09,
            9.38153738649577178388e-09, -4.44505912879632808065e-08, 2.00329475355213526229e-07,
            -8.56872026469545474066e-07, 3.47025130813767847674e-06, -1.32731636560394358279e-05,
            4.78156510755005422638e-05, -1.61760815825896745588e-04, 5.12285956168575772895e-04,
            -1.51357245063125314899e-03, 4.15642294431288815669e-03, -1.05640848946261981558e-02,
            2.47264490306265168283e-02, -5.29459812080949914269e-02, 1.02643658689847095384e-01,
            -1.76416518357834055153e-01, 2.52587186443633654823e-01],
    "I1B": [7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17,
            -3.20952592199342395980e-17, 2.96262899764595013876e-16, 3.30820231092092828324e-16,
            -1.88035477551078244854e-15, -3.81440307243700780478e-15, 1.04202769841288027642e-14,
            4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
            -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11,
            3.25260358301548823856e-11, -1.89749581235054123450e-11, -5.58974346219658380687e-10,
            -3.83538038596423702205e-09, -2.63146884688951950684e-08, -2.51223623787020892529e-07,
            -3.88256480887769039346e-06, -1.10588938762623716291e-04, -9.76109749136146840777e-03,
            7.78576235018280120474e-01],
    # K0 and K1: Chebyshev series on [0, 2] (of x^2 - 2) and (2, inf) (of 8/x - 2)
    "K0A": [1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
            1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
            1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01,
            -5.35327393233902768720e-01],
    "K0B": [5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
            -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
            6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
            -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
            1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
            -1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
            2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
            -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
            2.44030308206595545468e+00],
    "K1A": [-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
            -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
            -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
            -3.53155960776544875667e-01, 1.52530022733894777053e+00],
    "K1B": [-5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
            1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
            -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
            3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
            -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
            2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
            -3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
            1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
            2.72062619048444266945e+00],
}

# Every table in one flat array; OFFSETS[name] = (start, length) within it.
OFFSETS = {}
_flat = []
for _name, _coefficients in _TABLES.items():
    OFFSETS[_name] = (len(_flat), len(_coefficients))
    _flat += _coefficients
COEFFICIENTS = np.array(_flat, dtype=np.float64)
del _name, _coefficients, _flat

_tables_on_device = {}     # (device, dtype) -> the COEFFICIENTS tensor there


def _coefficients(device, dtype):
    key = (device, dtype)
    table = _tables_on_device.get(key)
    if table is None:
        table = _tables_on_device[key] = from_host(COEFFICIENTS, dtype, device)
    return table


# ---- the approximations ----------------------------------------------------------------
@triton.jit
def _polevl(z, c_ptr, table: tl.constexpr):
    """c[0] z^(n-1) + ... + c[n-1] (Horner), the table (start, n) of COEFFICIENTS."""
    r = tl.zeros_like(z)
    for i in tl.static_range(table[1]):
        r = r * z + tl.load(c_ptr + table[0] + i).to(z.dtype)
    return r


@triton.jit
def _chbevl(y, c_ptr, table: tl.constexpr):
    """Clenshaw's sum of a Chebyshev series at y (Cephes' chbevl; the series of x is
    evaluated at y = an affine map of x onto [-2, 2])."""
    a = tl.zeros_like(y) + tl.load(c_ptr + table[0]).to(y.dtype)
    p = tl.zeros_like(y)
    q = tl.zeros_like(y)
    for i in tl.static_range(1, table[1]):
        p = q
        q = a
        a = y * q - p + tl.load(c_ptr + table[0] + i).to(y.dtype)
    return 0.5 * (a - p)


@triton.jit
def _j_large(x, c_ptr, PP: tl.constexpr, PQ: tl.constexpr, QP: tl.constexpr,
             QQ: tl.constexpr, phase, SECOND_KIND: tl.constexpr):
    """J (or Y, SECOND_KIND) of order 0 or 1 for x > 5: the Hankel asymptotic form
    sqrt(2 / (pi x)) (P cos(x - phase) - 5/x Q sin(x - phase)) (Y: sin and cos swapped)."""
    w = (5.0 / x) * (5.0 / x)
    pp = _polevl(w, c_ptr, PP)
    pq = _polevl(w, c_ptr, PQ)
    qp = _polevl(w, c_ptr, QP)
    qq = _polevl(w, c_ptr, QQ)
    if SECOND_KIND:
        r = pp / pq * tl.sin(x - phase) + 5.0 / x * (qp / qq) * tl.cos(x - phase)
    else:
        r = pp / pq * tl.cos(x - phase) - 5.0 / x * (qp / qq) * tl.sin(x - phase)
    return r * 0.797884560802865355879892119868763737 / tl.sqrt(x)


# SMALL_ONLY: the caller needs the function on the first interval only (Y0 and Y1 read J0
# and J1 for x <= 5, K0 and K1 read I0 and I1 for x <= 2): the other is not computed.
@triton.jit
def _j0(x, c_ptr, PP: tl.constexpr, PQ: tl.constexpr, QP: tl.constexpr, QQ: tl.constexpr,
        RP: tl.constexpr, RQ: tl.constexpr, SMALL_ONLY: tl.constexpr):
    x = tl.abs(x)
    z = x * x
    r = (z - 5.78318596294678452118e+00) * (z - 3.04712623436620863991e+01) * \
        _polevl(z, c_ptr, RP) / _polevl(z, c_ptr, RQ)
    r = tl.where(x < 0.00001, 1.0 - z / 4.0, r)
    if not SMALL_ONLY:
        large = _j_large(x, c_ptr, PP, PQ, QP, QQ, 0.785398163397448309615660845819875721,
                         False)
        r = tl.where(x <= 5.0, r, large)
    return r


@triton.jit
def _j1(x, c_ptr, PP: tl.constexpr, PQ: tl.constexpr, QP: tl.constexpr, QQ: tl.constexpr,
        RP: tl.constexpr, RQ: tl.constexpr, SMALL_ONLY: tl.constexpr):
    a = tl.abs(x)               # J1 is odd
    z = a * a
    r = _polevl(z, c_ptr, RP) / _polevl(z, c_ptr, RQ) * a * \
        (z - 1.46819706421238932572e+01) * (z - 4.92184563216946036703e+01)
    if not SMALL_ONLY:
        large = _j_large(a, c_ptr, PP, PQ, QP, QQ, 2.356194490192344928846982537459627163,
                         False)
        r = tl.where(a <= 5.0, r, large)
    return tl.where(x < 0, -r, r)


@triton.jit
def _i0(x, c_ptr, A: tl.constexpr, B: tl.constexpr, SMALL_ONLY: tl.constexpr):
    a = tl.abs(x)
    r = tl.exp(a) * _chbevl(a / 2.0 - 2.0, c_ptr, A)
    if not SMALL_ONLY:
        r = tl.where(a <= 8.0, r, tl.exp(a) * _chbevl(32.0 / a - 2.0, c_ptr, B) / tl.sqrt(a))
    return r


@triton.jit
def _i1(x, c_ptr, A: tl.constexpr, B: tl.constexpr, SMALL_ONLY: tl.constexpr):
    a = tl.abs(x)
    r = _chbevl(a / 2.0 - 2.0, c_ptr, A) * a * tl.exp(a)
    if not SMALL_ONLY:
        r = tl.where(a <= 8.0, r, tl.exp(a) * _chbevl(32.0 / a - 2.0, c_ptr, B) / tl.sqrt(a))
    return tl.where(x < 0, -r, r)


# FN of unary_kernel, by kernel name
FUNCTIONS = {"special_bessel_j0": 0, "special_bessel_j1": 1, "special_bessel_y0": 2,
             "special_bessel_y1": 3, "special_modified_bessel_i0": 4,
             "special_modified_bessel_i1": 5, "special_modified_bessel_k0": 6,
             "special_modified_bessel_k1": 7, "special_scaled_modified_bessel_k0": 8,
             "special_scaled_modified_bessel_k1": 9, "special_spherical_bessel_j0": 10}


@triton.jit
def unary_kernel(x_ptr, out_ptr, c_ptr, n_elements, FN: tl.constexpr,
                 PP0: tl.constexpr, PQ0: tl.constexpr, QP0: tl.constexpr, QQ0: tl.constexpr,
                 RP0: tl.constexpr, RQ0: tl.constexpr, YP0: tl.constexpr, YQ0: tl.constexpr,
                 PP1: tl.constexpr, PQ1: tl.constexpr, QP1: tl.constexpr, QQ1: tl.constexpr,
                 RP1: tl.constexpr, RQ1: tl.constexpr, YP1: tl.constexpr, YQ1: tl.constexpr,
                 I0A: tl.constexpr, I0B: tl.constexpr, I1A: tl.constexpr, I1B: tl.constexpr,
                 K0A: tl.constexpr, K0B: tl.constexpr, K1A: tl.constexpr, K1B: tl.constexpr,
                 BLOCK: tl.constexpr):
    """out = FUNCTIONS' function FN of x, elementwise over a flat array (x already in the
    compute dtype). The table arguments are (start, length) pairs of COEFFICIENTS."""
    index = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = index < n_elements
    x = tl.load(x_ptr + index, mask=mask, other=1.0)
    inf = float("inf")
    if FN == 0:
        r = _j0(x, c_ptr, PP0, PQ0, QP0, QQ0, RP0, RQ0, False)
    elif FN == 1:
        r = _j1(x, c_ptr, PP1, PQ1, QP1, QQ1, RP1, RQ1, False)
    elif FN == 2:
        # Y0 = R(x^2) + (2/pi) log(x) J0(x) for x <= 5; -inf at 0, nan below
        z = x * x
        small = _polevl(z, c_ptr, YP0) / _polevl(z, c_ptr, YQ0) + \
            0.636619772367581343075535053490057448 * tl.log(x) * \
            _j0(x, c_ptr, PP0, PQ0, QP0, QQ0, RP0, RQ0, True)
        small = tl.where(x == 0, -inf, tl.where(x < 0, float("nan"), small))
        large = _j_large(x, c_ptr, PP0, PQ0, QP0, QQ0, 0.785398163397448309615660845819875721,
                         True)
        r = tl.where(x <= 5.0, small, large)
    elif FN == 3:
        z = x * x
        small = x * (_polevl(z, c_ptr, YP1) / _polevl(z, c_ptr, YQ1)) + \
            0.636619772367581343075535053490057448 * \
            (_j1(x, c_ptr, PP1, PQ1, QP1, QQ1, RP1, RQ1, True) * tl.log(x) - 1.0 / x)
        small = tl.where(x == 0, -inf, tl.where(x < 0, float("nan"), small))
        large = _j_large(x, c_ptr, PP1, PQ1, QP1, QQ1, 2.356194490192344928846982537459627163,
                         True)
        r = tl.where(x <= 5.0, small, large)
    elif FN == 4:
        r = _i0(x, c_ptr, I0A, I0B, False)
    elif FN == 5:
        r = _i1(x, c_ptr, I1A, I1B, False)
    elif FN == 6 or FN == 8:
        # K0 = series(x^2 - 2) - log(x/2) I0(x) on (0, 2], exp(-x) series(8/x - 2) / sqrt(x)
        # beyond; the scaled form (FN 8) is exp(x) K0(x)
        small = _chbevl(x * x - 2.0, c_ptr, K0A) - \
            tl.log(0.5 * x) * _i0(x, c_ptr, I0A, I0B, True)
        large = _chbevl(8.0 / x - 2.0, c_ptr, K0B) / tl.sqrt(x)
        if FN == 6:
            large = tl.exp(-x) * large
        else:
            small = small * tl.exp(x)
        r = tl.where(x <= 2.0, small, large)
        r = tl.where(x == 0, inf, tl.where(x < 0, float("nan"), r))
    elif FN == 7 or FN == 9:
        small = tl.log(0.5 * x) * _i1(x, c_ptr, I1A, I1B, True) + \
            _chbevl(x * x - 2.0, c_ptr, K1A) / x
        large = _chbevl(8.0 / x - 2.0, c_ptr, K1B) / tl.sqrt(x)
        if FN == 7:
            large = tl.exp(-x) * large
        else:
            small = small * tl.exp(x)
        r = tl.where(x <= 2.0, small, large)
        r = tl.where(x == 0, inf, tl.where(x < 0, float("nan"), r))
    else:
        # sin(x) / x; its Taylor series below 0.5; 0 at +-inf
        z = x * x
        series = 1.0 + z * (-1.0 / 6.0 + z * (1.0 / 120.0 + z * (-1.0 / 5040.0 + z * (
            1.0 / 362880.0 + z * (-1.0 / 39916800.0 + z * (1.0 / 6227020800.0))))))
        r = tl.where(tl.abs(x) < 0.5, series, tl.sin(x) / x)
        r = tl.where(tl.abs(x) == inf, 0.0, r)
    tl.store(out_ptr + index, r.to(out_ptr.dtype.element_ty), mask=mask)


# ---- the polynomials -------------------------------------------------------------------
@triton.jit
def _acos(y):
    """acos(y) to the precision of y's dtype: _math.acos (atan2's polynomial, float32
    accurate; it runs in the interpreter too) refined by two Newton steps on cos(t) = y."""
    t = _math.acos(y)
    for _ in tl.static_range(2):
        s = tl.sin(t)
        t = t + tl.where(s != 0, (tl.cos(t) - y) / s, 0.0)
    return t


# KIND of polynomial_kernel, by kernel name
POLYNOMIALS = {"special_chebyshev_polynomial_t": 0, "special_chebyshev_polynomial_u": 1,
               "special_chebyshev_polynomial_v": 2, "special_chebyshev_polynomial_w": 3,
               "special_shifted_chebyshev_polynomial_t": 4,
               "special_shifted_chebyshev_polynomial_u": 5,
               "special_shifted_chebyshev_polynomial_v": 6,
               "special_shifted_chebyshev_polynomial_w": 7,
               "special_hermite_polynomial_h": 8, "special_hermite_polynomial_he": 9,
               "special_laguerre_polynomial_l": 10, "special_legendre_polynomial_p": 11}


@triton.jit
def polynomial_kernel(x_ptr, n_ptr, out_ptr, n_elements, KIND: tl.constexpr,
                      HERMITE_LIMIT: tl.constexpr, BLOCK: tl.constexpr):
    """out = the polynomial KIND of degree n at x (x and n flat, in the compute dtype).
    Kinds 0-3: Chebyshev T, U, V, W; 4-7: the shifted ones (at y = 2x - 1); 8: H; 9: He;
    10: Laguerre L; 11: Legendre P. PyTorch's rules: cpu_kernels/bessel.py's docstring."""
    index = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = index < n_elements
    x = tl.load(x_ptr + index, mask=mask, other=0.0)
    nf = tl.load(n_ptr + index, mask=mask, other=0.0)
    # n truncated toward zero; nan, +-inf and values past int64 count as negative
    finite = (nf == nf) & (tl.abs(nf) < 9.0e18)
    n = tl.where(finite, tl.where(finite, nf, 0.0).to(tl.int64), -1)
    nd = n.to(x.dtype)
    even = (n % 2) == 0
    one = tl.full(x.shape, 1.0, x.dtype)

    # the first two terms (p = P_0 = 1, q = P_1), the closed forms that replace the
    # recurrence, and where they apply (`done`)
    if KIND < 8:
        if KIND < 4:
            y = x
            at_top = x > 0
            at_ends = tl.abs(x) == 1.0
        else:
            y = x + x - 1.0
            at_top = x == 1.0
            at_ends = (x == 1.0) | (x == 0.0)
        theta = _acos(y)
        if KIND % 4 == 0:
            q = y
            trig = tl.cos(nd * theta)
            end = tl.where(at_top | even, 1.0, -1.0)
        elif KIND % 4 == 1:
            q = y + y
            s = tl.sin(theta)
            trig = tl.where(s != 0, tl.sin((nd + 1.0) * theta) / s,
                            (nd + 1.0) * tl.cos((nd + 1.0) * theta) / y)
            end = tl.where(at_top | even, nd + 1.0, -(nd + 1.0))
        elif KIND % 4 == 2:
            q = y + y - 1.0
            alternating = tl.where(even, nd + nd + 1.0, -(nd + nd + 1.0))
            trig = tl.where(tl.sin(theta / 2.0) != 1.0,
                            tl.cos((nd + 0.5) * theta) / tl.cos(theta / 2.0), alternating)
            end = tl.where(at_top, 1.0, alternating)
        else:
            q = y + y + 1.0
            alternating = tl.where(even, 1.0, -1.0)
            fallback = alternating
            if KIND == 3:       # (the shifted W's fallback has no y > 0 case)
                fallback = tl.where(y > 0, nd + nd + 1.0, alternating)
            trig = tl.where(tl.cos(theta / 2.0) != 1.0,
                            tl.sin((nd + 0.5) * theta) / tl.sin(theta / 2.0), fallback)
            end = tl.where(at_top, nd + nd + 1.0, alternating)
        # n past which the trigonometric form is used: PyTorch's choice per polynomial
        if KIND == 7:
            threshold: tl.constexpr = 4
        elif KIND == 0 or KIND >= 4:
            threshold: tl.constexpr = 6
        else:
            threshold: tl.constexpr = 8
        use_trig = (n > threshold) & (tl.abs(y) < 1.0)
        closed = tl.where(at_ends, end, trig)
        done = at_ends | use_trig
        stops_at_nan = True
    elif KIND == 8:
        y = x
        q = x + x
        closed = tl.full(x.shape, float("nan"), x.dtype)
        done = n > HERMITE_LIMIT
        stops_at_nan = False
    elif KIND == 9:
        y = x
        q = x
        closed = tl.full(x.shape, float("nan"), x.dtype)
        done = n > HERMITE_LIMIT
        stops_at_nan = False
    elif KIND == 10:
        y = x
        q = 1.0 - x
        closed = one
        done = x == 0.0
        stops_at_nan = True
    else:
        y = x
        q = x
        closed = tl.where((x > 0) | even, 1.0, -1.0)
        done = tl.abs(x) == 1.0
        stops_at_nan = True
    first = q

    # the recurrence: steps j = 1 .. n - 1, each element its own count; the block loops
    # while any element still steps (an element that became nan stops, as in PyTorch)
    p = one
    steps = tl.where(done, 0, tl.maximum(n, 1) - 1)
    j = tl.full(x.shape, 1, tl.int64)
    active = j <= steps
    if stops_at_nan:
        active = active & (q == q)
    while tl.max(active.to(tl.int32), axis=0) > 0:
        k = j.to(x.dtype)
        if KIND < 8:
            r = (y + y) * q - p
        elif KIND == 8:
            r = (x + x) * q - (k + k) * p
        elif KIND == 9:
            r = x * q - k * p
        elif KIND == 10:
            r = ((k + k) + (1.0 - x)) * q - k * p
            r = r / (k + 1.0)
        else:
            r = ((k + k + 1.0) * x * q - k * p) / (k + 1.0)
        p = tl.where(active, q, p)
        q = tl.where(active, r, q)
        j = j + 1
        active = j <= steps
        if stops_at_nan:
            active = active & (q == q)

    r = tl.where(n == 0, one, tl.where(n == 1, first, q))
    r = tl.where(done, closed, r)
    r = tl.where(n < 0, 0.0, r)
    tl.store(out_ptr + index, r.to(out_ptr.dtype.element_ty), mask=mask)


# ---- launchers ---------------------------------------------------------------------------
def _dense(t, sizes, dtype, device):
    """t broadcast to `sizes` and converted to `dtype`, as a new row-major tensor (the
    pointwise copy kernel; t itself when it already is one)."""
    impl = t._impl
    if impl.sizes == tuple(sizes) and impl.dtype is dtype and impl.is_contiguous:
        return t
    dense = new_tensor(sizes, dtype, device)
    return run("copy", dense, (t,), dtype)


def _unary_launcher(name):
    fn = FUNCTIONS[name]

    def launcher(x):
        device, (a,) = operands(name, x=x)
        spec = shape_rule("bessel.unary")(name, (x,))
        out = new_tensor(spec.sizes, spec.dtype, device)
        n = out._impl.numel()
        if n == 0:
            return out
        a = _dense(a, spec.sizes, spec.dtype, device)
        tables = {k: tl.constexpr(v) for k, v in OFFSETS.items()}
        launch(name, unary_kernel, (triton.cdiv(n, BLOCK),), pointer(a), pointer(out),
               pointer(_coefficients(device, spec.dtype)), n, FN=fn, BLOCK=BLOCK, **tables)
        return out
    launcher.__name__ = launcher.__qualname__ = name
    launcher.__doc__ = f"torch.special.{name[len('special_'):]} on cuda (unary_kernel)."
    return launcher


def _self_named(name):
    inner = _unary_launcher(name)

    def launcher(self):
        return inner(self)
    launcher.__name__ = launcher.__qualname__ = name
    launcher.__doc__ = inner.__doc__
    return launcher


special_bessel_j0 = _self_named("special_bessel_j0")
special_bessel_j1 = _self_named("special_bessel_j1")
special_bessel_y0 = _self_named("special_bessel_y0")
special_bessel_y1 = _self_named("special_bessel_y1")
special_modified_bessel_i0 = _self_named("special_modified_bessel_i0")
special_modified_bessel_i1 = _self_named("special_modified_bessel_i1")
special_modified_bessel_k0 = _self_named("special_modified_bessel_k0")
special_modified_bessel_k1 = _self_named("special_modified_bessel_k1")
special_scaled_modified_bessel_k0 = _unary_launcher("special_scaled_modified_bessel_k0")
special_scaled_modified_bessel_k1 = _unary_launcher("special_scaled_modified_bessel_k1")
special_spherical_bessel_j0 = _unary_launcher("special_spherical_bessel_j0")


def _polynomial_launcher(name):
    kind = POLYNOMIALS[name]

    def launcher(x, n):
        device, (a, b) = operands(name, x=x, n=n)
        spec = shape_rule("bessel.polynomial")(name, (x, n))
        out = new_tensor(spec.sizes, spec.dtype, device)
        count = out._impl.numel()
        if count == 0:
            return out
        a = _dense(a, spec.sizes, spec.dtype, device)
        b = _dense(b, spec.sizes, spec.dtype, device)
        launch(name, polynomial_kernel, (triton.cdiv(count, BLOCK),), pointer(a), pointer(b),
               pointer(out), count, KIND=kind,
               HERMITE_LIMIT=128 if spec.dtype is dt.float32 else 512, BLOCK=BLOCK)
        return out
    launcher.__name__ = launcher.__qualname__ = name
    launcher.__doc__ = f"torch.special.{name[len('special_'):]} on cuda (polynomial_kernel)."
    return launcher


for _name in POLYNOMIALS:
    globals()[_name] = _polynomial_launcher(_name)
del _name


# ---- airy_ai and zeta: on a host copy -------------------------------------------------------
log = logging.getLogger("tensorplay.dispatch")


def _host(op, t, sizes, dtype):
    """t's elements as a host array, broadcast to `sizes` in `dtype`."""
    log.info("%s on cuda: no Triton kernel, SciPy on a host copy", op)
    dense = _dense(t, sizes, dtype, t._impl.device)
    return to_host(dense).reshape(sizes)


def special_airy_ai_on_host(x):
    from cpu_kernels.bessel import unary_arrays

    device, (a,) = operands("special_airy_ai", x=x)
    spec = shape_rule("bessel.unary")("special_airy_ai", (x,))
    arr = _host("special_airy_ai", a, spec.sizes, spec.dtype)
    return from_host(unary_arrays("special_airy_ai", arr), spec.dtype, device)


def special_zeta_on_host(self, other):
    from cpu_kernels.bessel import zeta_arrays

    device, (a, b) = operands("special_zeta", self=self, other=other)
    spec = shape_rule("bessel.zeta")("special_zeta", (self, other))
    x = _host("special_zeta", a, spec.sizes, spec.dtype)
    q = _host("special_zeta", b, spec.sizes, spec.dtype)
    return from_host(zeta_arrays(x, q), spec.dtype, device)

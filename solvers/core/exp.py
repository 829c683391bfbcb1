"""exp(x) for x <= 0 in a form LLVM vectorizes: the exponential of the RBF kernel.

A kernel row of the RBF kernel is one exponential per entry.  Numba lowers ``np.exp`` to a
call of the C library's ``exp``, one element at a time (it vectorizes it only through Intel's
SVML, which this Numba does not have): on the low-dimensional sets that is most of the cost of
a row (svmguide1: about 75 of the 87 us of a row, measured 2026-11-26).  The function here is
plain arithmetic, so a loop over a row runs it four (AVX2) or eight lanes at a time: 2.1 ns
an entry against 13.8 ns for ``np.exp`` on this machine (2026-11-27, load 3.7, AVX2 with FMA).

Method (Cody & Waite's argument reduction, as fdlibm's ``e_exp.c``): with n = round(x / ln 2)
and r = x - n ln 2, computed in two parts (``LN2_HI`` has its last 21 bits zero, so n LN2_HI
is exact for |n| < 2^21), |r| <= ln(2)/2 and exp(x) = 2^n exp(r).  exp(r) is its Taylor
polynomial of degree 13 in Horner form: the remainder r^14/14! <= 4.1e-18 is below half an
ulp of exp(r) >= 0.70.  Rounding x / ln 2 to an integer adds 1.5 * 2^52 (``MAGIC``): the sum's
last mantissa bits are then n in two's complement, and (bits - bits(MAGIC) + 1023) << 52 is
the bit pattern of 2^n -- integer operations on the same lanes, no conversion to an integer
register.  Measured against the C library on 1.1 million arguments in [-800, 0] (2026-11-27):
at most 1 ulp apart; ``tests/test_kernels.py`` pins it on 250,000 of them and the edges.

Below ``UNDERFLOW`` (-708, exp(-708) = 3.3e-308, where 2^n stops being a normal number) the
result is 0: the true value is below 3.3e-308, an absolute error no kernel value notices.
The arguments must not be NaN (a squared distance clamped at 0 times -gamma never is).

``fastmath={"contract"}`` lets LLVM fuse the multiply-adds into FMA instructions (one rounding
instead of two: as accurate or more); no other fast-math licence is given, since reassociation
would fold ``(x / ln 2 + MAGIC) - MAGIC`` into ``x / ln 2`` and lose the rounding.  A caller
gets the contraction only in a loop compiled with the same flag (:func:`rbf_from_dots`).
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

INV_LN2 = 1.4426950408889634
LN2_HI = 6.93147180369123816490e-01  # 0x3fe62e42fee00000 (fdlibm's ln2HI)
LN2_LO = 1.90821492927058770002e-10  # 0x3dea39ef35793c76 (fdlibm's ln2LO)
MAGIC = 6755399441055744.0  # 1.5 * 2^52
MAGIC_BITS = 0x4338000000000000
EXPONENT_BIAS = 1023
UNDERFLOW = -708.0


@intrinsic
def _float_bits(typingctx, x):
    """The IEEE 754 bits of a float64 as an int64 (a bitcast, no conversion)."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _bits_float(typingctx, bits):
    """The float64 whose IEEE 754 bits are the int64 ``bits``."""
    if bits != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@njit(cache=True, inline="always", fastmath={"contract"})
def exp_nonpositive(x):
    """exp(x) for x <= 0 (not NaN), within 1 ulp of the C library's; 0 below -708."""
    y = x if x > UNDERFLOW else UNDERFLOW
    shifted = y * INV_LN2 + MAGIC
    n = shifted - MAGIC
    r = (y - n * LN2_HI) - n * LN2_LO
    p = 1.0 / 6227020800.0  # 1/13!
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    two_to_n = _bits_float((_float_bits(shifted) - MAGIC_BITS + EXPONENT_BIAS) << 52)
    value = p * two_to_n
    return value if x >= UNDERFLOW else 0.0


@njit(cache=True, nogil=True, fastmath={"contract"})
def rbf_from_dots(out, sq_i, z_sq, gamma):
    """out[j] <- exp(-gamma max(0, sq_i + z_sq[j] - 2 out[j])): a row of dot products x_i . z_j
    made a row of the RBF kernel, one vectorized loop."""
    for j in range(out.shape[0]):
        d2 = sq_i + z_sq[j] - 2.0 * out[j]
        d2 = d2 if d2 > 0.0 else 0.0
        out[j] = exp_nonpositive(-gamma * d2)

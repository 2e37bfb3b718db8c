# tools/compare_triton.py — the Triton kernels ./lab compare times beside the
# course's (tools/compare.py imports this file only where Triton is installed).
#
# Written the way Triton's tutorials write theirs: the elementwise kernels give
# each program one block of elements; softmax and LayerNorm give each program
# one row, held whole in a power-of-two block, with masked loads for the tail.
# Rows too long for one block (softmax past 32768 columns) take a looped
# kernel: an online pass for the max and the sum, a second pass for y.
#
# Each launcher takes torch tensors (contiguous, float32, on the GPU), returns
# fresh output tensors and launches on PyTorch's current stream: compare.py
# makes that the stream the course's harness times.
#
#   TRITON_INTERPRET=1 python3 tests/test_compare.py   runs them on the CPU
#   (Triton's interpreter), where PyTorch and Triton are installed.
import torch
import triton
import triton.language as tl

# The widest row a program keeps in one block: 32768 floats (128 KiB of
# registers over 16 warps). The course's softmax keeps the same on chip.
MAX_ROW_BLOCK = 32768
# Columns a looped program loads at a time.
LOOP_BLOCK = 4096
# Elements per program of the elementwise kernels.
ELEMENT_BLOCK = 1024


def _row_warps(block):
    """Warps for a program that holds `block` floats: about 32 to 64 per thread."""
    if block <= 1024:
        return 4
    if block <= 4096:
        return 8
    return 16


# ============================================================================
# elementwise: c = a + b, and y = (a + b) * s + c
# ============================================================================

@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, a + b, mask=mask)


@triton.jit
def fused_elementwise_kernel(a_ptr, b_ptr, c_ptr, y_ptr, s, n, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    c = tl.load(c_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, (a + b) * s + c, mask=mask)


def add(a, b):
    """c = a + b."""
    c = torch.empty_like(a)
    n = a.numel()
    add_kernel[(triton.cdiv(n, ELEMENT_BLOCK),)](a, b, c, n, BLOCK=ELEMENT_BLOCK)
    return c


def fused_elementwise(a, b, c, s):
    """y = (a + b) * s + c in one kernel."""
    y = torch.empty_like(a)
    n = a.numel()
    fused_elementwise_kernel[(triton.cdiv(n, ELEMENT_BLOCK),)](a, b, c, y, s, n,
                                                              BLOCK=ELEMENT_BLOCK)
    return y


# ============================================================================
# softmax over the rows of a (rows, cols) matrix
# ============================================================================

@triton.jit
def softmax_row_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    # one program per row; the row in registers, read once, written once
    base = tl.program_id(0).to(tl.int64) * cols
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + base + offs, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)                     # m = max_j x_j
    e = tl.exp(x - m)                         # masked lanes: exp(-inf) = 0
    d = tl.sum(e, axis=0)                     # d = sum_j exp(x_j - m)
    tl.store(y_ptr + base + offs, e / d, mask=mask)


@triton.jit
def softmax_looped_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    # rows longer than a block: each lane keeps a running max m and a running
    # sum d over the blocks it sees (the online softmax), then the lanes are
    # combined and a second pass writes y
    base = tl.program_id(0).to(tl.int64) * cols
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    d = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + offs, mask=offs < cols, other=-float("inf"))
        m_new = tl.maximum(m, x)
        # a lane that has seen only the masked tail keeps m = -inf: no
        # exp(-inf - -inf) = NaN there
        seen = m_new > -float("inf")
        d = d * tl.where(seen, tl.exp(m - m_new), 1.0) + tl.where(seen, tl.exp(x - m_new), 0.0)
        m = m_new
    m_row = tl.max(m, axis=0)
    d_row = tl.sum(tl.where(m > -float("inf"), d * tl.exp(m - m_row), 0.0), axis=0)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_ptr + base + offs, mask=mask, other=-float("inf"))
        tl.store(y_ptr + base + offs, tl.exp(x - m_row) / d_row, mask=mask)


def softmax(x):
    """y = softmax(x) over the last dimension of a (rows, cols) matrix."""
    rows, cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    if block <= MAX_ROW_BLOCK:
        softmax_row_kernel[(rows,)](x, y, cols, BLOCK=block, num_warps=_row_warps(block))
    else:
        softmax_looped_kernel[(rows,)](x, y, cols, BLOCK=LOOP_BLOCK, num_warps=8)
    return y


# ============================================================================
# LayerNorm forward over the rows of a (rows, cols) matrix
# ============================================================================

@triton.jit
def layernorm_fwd_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, cols, eps,
                         BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / cols                      # mean = (1/cols) sum_c x_c
    xc = tl.where(mask, x - mean, 0.0)                   # the tail must not add (0 - mean)^2
    var = tl.sum(xc * xc, axis=0) / cols                 # two passes over registers, no E[x^2] - mean^2
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(y_ptr + row * cols + offs, xc * rstd * w + b, mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


def layernorm_fwd(x, weight, bias, eps):
    """(y, mean, rstd) of LayerNorm over the rows of x; rows of up to 32768 columns."""
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    if block > MAX_ROW_BLOCK:
        raise ValueError(f"layernorm_fwd keeps a row in one block: at most {MAX_ROW_BLOCK} columns")
    y = torch.empty_like(x)
    mean = torch.empty(rows, dtype=torch.float32, device=x.device)
    rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
    layernorm_fwd_kernel[(rows,)](x, weight, bias, y, mean, rstd, cols, eps, BLOCK=block,
                                  num_warps=_row_warps(block))
    return y, mean, rstd

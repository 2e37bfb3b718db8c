#!/usr/bin/env python3
# tools/compare.py — a lesson's kernels side by side with PyTorch and Triton.
#
#   ./lab compare [NN]     builds the libraries and runs this for each lesson
#   python3 tools/compare.py --lesson 02 \
#       --solution-lib build/libfusionlab_compare_02_solution.so \
#       [--student-lib build/libfusionlab_compare_02_student.so] \
#       [--csv plots/02-fused-softmax-compare.csv] [--quick] [--samples N]
#
# For every shape it times, in one interleaved run of the course's own timing
# protocol (fl_time_variants of common/timing.h, called through ctypes):
#   - the worked solution's kernel and the student's: the shared libraries
#     that lesson_add(... COMPARE) builds (cmake/Lesson.cmake)
#   - the course's unfused baseline
#   - PyTorch eager, one operation at a time (the unfused way)
#   - PyTorch's fused operation, where there is one (torch.softmax,
#     F.layer_norm forward and, through autograd, backward,
#     F.scaled_dot_product_attention with each backend)
#   - a Triton kernel (tools/compare_triton.py), where one applies
# Every variant's outputs are poisoned with NaN before every sample and
# checked after the timed loop against a float64 reference that PyTorch
# computes on the GPU, within the tolerances of the lesson's tests
# (tests/thresholds.h). A wrong variant is reported WRONG and its time is
# compared with nothing. The student's kernels first run once in a child
# process, so that one which crashes the GPU context cannot take the rest
# with it.
#
# Out: a CSV (plots/NN-name-compare.csv; the lesson's plot.gp draws it beside
# the bench's curves), a Markdown table per operation on stdout, and a line
# per goal of the worked solution (its speedup over Triton or PyTorch, or its
# share of the copy bandwidth).
#
# Without PyTorch or a CUDA GPU it says so in one line and exits 0
# (--skip-code N: exits N instead). Python >= 3.10; the standard library,
# PyTorch, and Triton where it is installed.
from __future__ import annotations

import argparse
import contextlib
import ctypes
import csv
import datetime
import gc
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# ============================================================================
# the ABI of common/timing.h
# ============================================================================
# These declarations must match common/timing.h member for member;
# abi_mismatches() compares them with what the C compiler chose
# (tools/compare_abi.c) and load_library() refuses a library that differs.

RUN_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
CHECK_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


class FlVariant(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("run", RUN_FN), ("ctx", ctypes.c_void_p),
                ("bytes", ctypes.c_double), ("flops", ctypes.c_double),
                ("prepare", RUN_FN), ("check", CHECK_FN)]


class FlTimingOpts(ctypes.Structure):
    _fields_ = [("warmup", ctypes.c_int), ("samples", ctypes.c_int),
                ("flush_bytes", ctypes.c_size_t), ("ceiling_gbs", ctypes.c_double),
                ("check_each", ctypes.c_int), ("adaptive_hold", ctypes.c_int)]


class FlStats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_double) for name in ("median", "mean", "min", "max", "p10", "p90")]


class FlTiming(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("samples", ctypes.c_int), ("us", FlStats),
                ("event_median_us", ctypes.c_double), ("wall_median_us", ctypes.c_double),
                ("gbs", ctypes.c_double), ("tflops", ctypes.c_double),
                ("pct_of_ceiling", ctypes.c_double), ("hidden_work", ctypes.c_int),
                ("check_ok", ctypes.c_int), ("check_failed_run", ctypes.c_int),
                ("check_runs", ctypes.c_int), ("check_msg", ctypes.c_char * 512),
                ("launch_late", ctypes.c_int)]


# C name -> (ctypes declaration, the C function that says its size)
ABI = {
    "fl_variant": (FlVariant, "fl_timing_sizeof_variant"),
    "fl_timing_opts": (FlTimingOpts, "fl_timing_sizeof_opts"),
    "fl_stats": (FlStats, "fl_timing_sizeof_stats"),
    "fl_timing": (FlTiming, "fl_timing_sizeof_timing"),
}
SIZE_MAX = ctypes.c_size_t(-1).value
CUDA_ERROR_UNKNOWN = 999  # what a Python callback returns when it raised

P, SZ, I, F = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_float
# The lessons' C API (their headers' EXTERN_C prototypes), as ctypes sees it:
# name -> (result, arguments). tests/test_compare.py checks it against the
# headers.
C_API = {
    "vector_add": (I, [P, P, P, SZ, P]),
    "fused_elementwise": (I, [P, P, P, F, P, SZ, P]),
    "unfused_elementwise": (I, [P, P, P, F, P, P, P, SZ, P]),
    "softmax_fused": (I, [P, P, SZ, SZ, P]),
    "softmax_unfused": (I, [P, P, P, P, P, P, SZ, SZ, P]),
    "layernorm_fwd_fused": (I, [P, P, P, P, P, P, SZ, SZ, F, P]),
    "layernorm_bwd_fused": (I, [P, P, P, P, P, P, P, P, P, SZ, SZ, P]),
    "layernorm_bwd_fused_atomic": (I, [P, P, P, P, P, P, P, P, SZ, SZ, P]),
    "layernorm_fwd_unfused": (I, [P, P, P, P, P, P, P, SZ, SZ, F, P]),
    "layernorm_bwd_unfused": (I, [P, P, P, P, P, P, P, P, P, SZ, SZ, P]),
    "attention_fused_f32": (I, [P, P, P, P, I, I, I, F, I, P]),
    "attention_fused_f16": (I, [P, P, P, P, I, I, I, F, I, P]),
    "attention_fused_f32_tc": (I, [P, P, P, P, I, I, I, F, I, P]),
    "attention_fused_f16_wgmma": (I, [P, P, P, P, I, I, I, F, I, P]),
    "attention_unfused_workspace_bytes": (SZ, [I, I, I]),
    "attention_unfused_f32": (I, [P, P, P, P, I, I, I, F, I, P, SZ, P]),
    "attention_unfused_f16": (I, [P, P, P, P, I, I, I, F, I, P, SZ, P]),
    # the CPU references' tolerances (lessons/NN-*/*_reference.h)
    "fused_elementwise_atol": (ctypes.c_double, [F]),
    "attention_f16_sampled_atol": (ctypes.c_double, [ctypes.c_double]),
}


class AbiError(RuntimeError):
    pass


def abi_mismatches(lib):
    """Where the declarations above and the library's C layout differ ([] when
    they agree): sizes, and the offset of every member."""
    offsetof = lib.fl_timing_offsetof
    offsetof.restype, offsetof.argtypes = ctypes.c_size_t, [ctypes.c_char_p, ctypes.c_char_p]
    member_at = lib.fl_timing_member
    member_at.restype, member_at.argtypes = ctypes.c_char_p, [ctypes.c_char_p, ctypes.c_int]
    problems = []
    for cname, (struct, sizeof_name) in ABI.items():
        sizeof = getattr(lib, sizeof_name)
        sizeof.restype, sizeof.argtypes = ctypes.c_size_t, []
        if sizeof() != ctypes.sizeof(struct):
            problems.append(f"sizeof({cname}) is {sizeof()} in C, {ctypes.sizeof(struct)} here")
        for member, _ in struct._fields_:
            c_off = offsetof(cname.encode(), member.encode())
            if c_off == SIZE_MAX:
                problems.append(f"{cname}.{member}: declared here, unknown to compare_abi.c")
            elif c_off != getattr(struct, member).offset:
                problems.append(f"{cname}.{member} is at offset {c_off} in C, "
                                f"{getattr(struct, member).offset} here")
        declared = {name for name, _ in struct._fields_}
        i = 0
        while (name := member_at(cname.encode(), i)) is not None:
            if name.decode() not in declared:
                problems.append(f"{cname}.{name.decode()}: in C (compare_abi.c), not declared here")
            i += 1
    return problems


def load_library(path):
    """A fusionlab_compare_* library, its functions declared; AbiError when its
    structures are not the ones declared above."""
    lib = ctypes.CDLL(os.path.abspath(path))
    problems = abi_mismatches(lib)
    if problems:
        raise AbiError(f"{path}: tools/compare.py's ctypes structures do not match "
                       f"common/timing.h: " + "; ".join(problems))
    lib.fl_time_variants.restype = ctypes.c_int
    lib.fl_time_variants.argtypes = [ctypes.POINTER(FlVariant), ctypes.c_int,
                                     ctypes.POINTER(FlTimingOpts), ctypes.POINTER(FlTiming)]
    lib.fl_timing_defaults.restype, lib.fl_timing_defaults.argtypes = FlTimingOpts, []
    lib.fl_copy_bandwidth_gbs.restype = ctypes.c_int
    lib.fl_copy_bandwidth_gbs.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_double)]
    lib.fl_copy_bandwidth_at.restype = ctypes.c_int
    lib.fl_copy_bandwidth_at.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_double)]
    lib.fl_copy_ceiling_for.restype = ctypes.c_int
    lib.fl_copy_ceiling_for.argtypes = [ctypes.c_double, ctypes.POINTER(ctypes.c_double)]
    lib.fl_compare_fact.restype = ctypes.c_double
    lib.fl_compare_fact.argtypes = [ctypes.c_char_p] + [ctypes.c_double] * 4
    lib.cudaGetErrorName.restype, lib.cudaGetErrorName.argtypes = ctypes.c_char_p, [ctypes.c_int]
    for name, (result, args) in C_API.items():
        fn = getattr(lib, name, None)  # (each library has its own lesson's)
        if fn is not None:
            fn.restype, fn.argtypes = result, args
    return lib


class Facts:
    """The lessons' facts, from their headers and tests/thresholds.h, through
    tools/compare_abi.c: fact('L02_RTOL'), fact('softmax_fused_bytes', rows, cols)."""

    def __init__(self, lib):
        self.lib = lib

    def __call__(self, name, a=0.0, b=0.0, c=0.0, d=0.0):
        value = self.lib.fl_compare_fact(name.encode(), a, b, c, d)
        if math.isnan(value):
            raise KeyError(f"tools/compare_abi.c has no fact named {name}")
        return value


def cuda_error_name(lib, code):
    try:
        return lib.cudaGetErrorName(code).decode()
    except Exception:  # (no library, or one without cudart's symbols)
        return f"CUDA error {code}"


# ============================================================================
# results: rows, speedups, goals, CSV and Markdown (no PyTorch needed)
# ============================================================================

# check: ok (within the tests' tolerance), WRONG (outside it), ERROR (did not
# run: an error, a crash), n/a (not available here: no Triton, a backend
# that does not take this shape)
@dataclass
class Row:
    op: str
    shape: dict          # the lesson's shape columns, in order
    label: str           # the shape, short, for the table
    variant: str
    kind: str            # solution, student, course, torch eager, torch fused, triton
    check: str
    median_us: float | None = None
    gbs: float | None = None
    pct_of_ceiling: float | None = None
    tflops: float | None = None
    max_err: float | None = None
    note: str = ""
    launch_late: bool = False  # the host queued past the longest hold (see fl_timing)


@dataclass
class Goal:
    """The worked solution (or the variant named `variant`) against `against` on
    every shape of `op` whose label contains `where`: its speedup (against's
    time / its own) at least `at_least`; with against None, its share of the
    copy bandwidth at least `at_least` percent."""
    text: str
    op: str
    against: str | None
    at_least: float
    variant: str = "solution"
    where: str = ""


SOLUTION = "solution"


def speedups(rows, against=SOLUTION):
    """{(op, label, variant): the variant's time / the time of `against` (the
    worked solution unless named)} over the shapes where both are right (> 1:
    `against` is faster)."""
    solution = {(r.op, r.label): r.median_us for r in rows
                if r.variant == against and r.check == "ok" and r.median_us}
    out = {}
    for r in rows:
        base = solution.get((r.op, r.label))
        if base and r.check == "ok" and r.median_us:
            out[(r.op, r.label, r.variant)] = r.median_us / base
    return out


def goal_lines(rows, goals):
    """One line per goal: met at how many shapes, and where it was missed or
    could not be judged."""
    by_shape = {}
    for r in rows:
        by_shape.setdefault((r.op, r.label), {})[r.variant] = r
    lines = []
    for g in goals:
        ratio = speedups(rows, g.variant)
        labels = [label for (op, label) in by_shape if op == g.op and g.where in label]
        met, missed, unjudged = 0, [], []
        for label in labels:
            have = by_shape[(g.op, label)]
            sol = have.get(g.variant)
            if sol is None or sol.check != "ok":
                unjudged.append(f"{label} ({g.variant} {sol.check if sol else 'not run'})")
                continue
            if g.against is None:
                value = sol.pct_of_ceiling
                shown = "" if value is None else f"{value:.1f}% of copy"
            else:
                other = have.get(g.against)
                if other is None or other.check != "ok":
                    unjudged.append(f"{label} ({g.against} {other.check if other else 'not run'})")
                    continue
                if other.launch_late or sol.launch_late:
                    late = g.against if other.launch_late else g.variant
                    unjudged.append(f"{label} ({late} launch-bound: its time may hold host time)")
                    continue
                value = ratio[(g.op, label, g.against)]
                # (three decimals on a miss: 1.497 is not 1.50)
                shown = f"{value:.2f}x" if value >= g.at_least else f"{value:.3f}x"
            if value is None:
                unjudged.append(f"{label} (no ceiling measured)")
            elif value >= g.at_least:
                met += 1
            else:
                missed.append(f"{label} {shown}")
        judged = met + len(missed)
        line = f"goal: {g.text}: met at {met} of {judged} shape{'s' if judged != 1 else ''}"
        if missed:
            line += "; missed at " + ", ".join(missed)
        if unjudged:
            line += "; not judged at " + ", ".join(unjudged)
        lines.append(line)
    return lines


CSV_HEAD = ["variant", "kind", "median_us", "gbs", "pct_of_ceiling", "tflops", "check",
            "max_err", "solution_speedup", "note"]


def _num(x, fmt):
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def write_csv(out, rows, device, date):
    """The CSV: device, date, op, the lesson's shape columns, then CSV_HEAD.
    solution_speedup is the variant's time over the worked solution's (blank
    where either is not right). The rows come grouped by operation, then by
    variant, shapes in the order they were timed: each series is one block of
    lines, which gnuplot joins (a row it skips breaks a line). Commas in notes
    become semicolons, so that gnuplot, which splits at every comma, reads the
    columns where they are."""
    shape_cols = list(rows[0].shape) if rows else []
    ratio = speedups(rows)
    ops = {op: i for i, op in enumerate(dict.fromkeys(r.op for r in rows))}
    variants = {v: i for i, v in enumerate(dict.fromkeys(r.variant for r in rows))}
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["device", "date", "op"] + shape_cols + CSV_HEAD)
    for r in sorted(rows, key=lambda r: (ops[r.op], variants[r.variant])):
        w.writerow([device, date, r.op] + [r.shape[c] for c in shape_cols] + [
            r.variant, r.kind, _num(r.median_us, ".3f"), _num(r.gbs, ".1f"),
            _num(r.pct_of_ceiling, ".1f"), _num(r.tflops, ".2f"), r.check,
            _num(r.max_err, ".3g"), _num(ratio.get((r.op, r.label, r.variant)), ".3f"),
            r.note.replace(",", ";").replace("\n", " ")])


def markdown_tables(rows, goals, compute_bound=False):
    """Per operation, a table: one line per shape, the median time of each
    variant (µs), the worked solution's GB/s and % of the copy ceiling (or
    TFLOP/s), and the speedup of each goal's variant over the variant it is
    judged against."""
    ratio = {v: speedups(rows, v) for v, _ in
             dict.fromkeys((g.variant, g.against) for g in goals if g.against)}
    out = []
    ops = list(dict.fromkeys(r.op for r in rows))
    for op in ops:
        mine = [r for r in rows if r.op == op]
        variants = list(dict.fromkeys(r.variant for r in mine))
        pairs = list(dict.fromkeys((g.variant, g.against) for g in goals
                                   if g.op == op and g.against))
        head = ["shape"] + [f"{v} (µs)" for v in variants]
        head += ["solution TFLOP/s"] if compute_bound else ["solution GB/s", "% of copy"]
        head += [f"{v} vs {a}" for v, a in pairs]
        out.append(f"{op}:")
        out.append("")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "|".join("---" for _ in head) + "|")
        for label in dict.fromkeys(r.label for r in mine):
            cells, sol = [label], None
            at = {r.variant: r for r in mine if r.label == label}
            for v in variants:
                r = at.get(v)
                if r is None:
                    cells.append("")
                elif r.check == "ok":
                    cells.append(f"{r.median_us:.1f}")
                else:
                    cells.append(r.check)
            sol = at.get(SOLUTION)
            good = sol is not None and sol.check == "ok"
            if compute_bound:
                cells.append(_num(sol.tflops, ".1f") if good else "")
            else:
                cells += [_num(sol.gbs, ".0f") if good else "",
                          _num(sol.pct_of_ceiling, ".0f") + "%" if good and sol.pct_of_ceiling is not None else ""]
            for v, a in pairs:
                x = ratio[v].get((op, label, a))
                cells.append(f"{x:.2f}x" if x is not None else "")
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return out


def report(rows, goals, device, date, samples, compute_bound=False):
    """What stdout shows: the tables, a legend, the goals, the variants' notes."""
    lines = markdown_tables(rows, goals, compute_bound)
    lines.append(f"(median of {samples} samples of the course's timing protocol on {device}, "
                 f"{date}; WRONG: outside the tests' tolerance, its time compared with nothing; "
                 f"ERROR: did not run; n/a: not available here; solution vs X: X's time over "
                 f"the worked solution's)")
    lines += goal_lines(rows, goals)
    notes = list(dict.fromkeys(f"{r.variant}: {r.note}" for r in rows if r.note))
    if notes:
        lines.append("notes:")
        lines += [f"  {n}" for n in notes[:40]]
        if len(notes) > 40:
            lines.append(f"  ... and {len(notes) - 40} more in the CSV")
    return lines


# ============================================================================
# variants and cases
# ============================================================================

class Variant:
    """One way to compute a case's outputs, as fl_time_variants runs it:
    prepare(stream) poisons the outputs (untimed), run(stream) queues the work
    on `stream` (a cudaStream_t, as an int), outputs() is what the last run
    left: {name: tensor}. `tolerance` overrides the case's for some outputs."""

    def __init__(self, env, name, kind, tolerance=None):
        self.env, self.name, self.kind = env, name, kind
        self.tolerance = tolerance or {}
        self.failure = None     # why it did not run: (check, message)
        self.result = None      # (ok, max_err, message): the first wrong check, else the largest error

    def prepare(self, stream):
        raise NotImplementedError

    def run(self, stream):
        raise NotImplementedError

    def outputs(self):
        raise NotImplementedError


class KernelVariant(Variant):
    """A C launcher of the course: launch(stream) -> cudaError_t, writing into
    outputs allocated once. optional: a launcher that may say
    cudaErrorNotSupported on a GPU it does not serve (lesson 05's float32 on
    tensor cores, its float16 on Hopper's wgmma), which then reads n/a, not
    ERROR."""

    def __init__(self, env, name, kind, launch, outputs, tolerance=None, scratch=(),
                 optional=False):
        super().__init__(env, name, kind, tolerance)
        self.launch, self._outputs, self._scratch = launch, outputs, tuple(scratch)
        self.optional = optional

    def prepare(self, stream):
        # the outputs, and any scratch the launcher is handed (a launcher
        # must not rely on what a scratch held: the tests poison it too)
        with self.env.on_stream(stream):
            for t in list(self._outputs.values()) + list(self._scratch):
                t.fill_(math.nan)
        return 0

    def run(self, stream):
        return self.launch(stream)

    def outputs(self):
        return self._outputs


class TorchVariant(Variant):
    """PyTorch or Triton: fn() returns fresh tensors (one, or a tuple in the
    order of `names`) on the current stream. prepare fills the previous
    output with NaN and drops it, so that the block the caching allocator
    hands the next run holds NaN, and the check sees only what that run wrote.
    setup(), when given, runs untimed on each new stream before the first run
    there (autograd runs a backward on its forward's stream)."""

    def __init__(self, env, name, kind, fn, names, setup=None, tolerance=None):
        super().__init__(env, name, kind, tolerance)
        self.fn, self.names, self.setup = fn, names, setup
        self.last, self.setup_stream = None, None

    def prepare(self, stream):
        with self.env.on_stream(stream):
            if self.setup is not None and self.setup_stream != stream:
                self.setup()
                self.setup_stream = stream
            if self.last is not None:
                for t in self.last.values():
                    t.fill_(math.nan)
                self.last = None
        return 0

    def run(self, stream):
        with self.env.on_stream(stream):
            out = self.fn()
        if not isinstance(out, tuple):
            out = (out,)
        if len(out) != len(self.names):
            raise ValueError(f"{self.name} returned {len(out)} outputs, not "
                             f"{len(self.names)} ({', '.join(self.names)})")
        self.last = dict(zip(self.names, out))
        return 0

    def outputs(self):
        return self.last or {}


@dataclass
class Case:
    """One operation at one shape: its variants, the bytes it must move (the
    fused count of the lesson's header, the same for every variant, so that
    GB/s ranks the variants as their times do), its FLOPs (0: not judged by
    them), a float64 reference computed on first use, the tolerances per
    output {name: (atol, rtol)}."""
    op: str
    shape: dict
    label: str
    bytes: float
    flops: float
    reference: object                  # () -> {name: float64 tensor}
    tolerance: dict
    variants: list = field(default_factory=list)
    _want: dict | None = None

    def want(self):
        if self._want is None:
            self._want = self.reference()
        return self._want

    def key(self):
        return f"{self.op} {self.label}"


def compare_outputs(torch, got, want, tolerance):
    """(ok, max_err, message): every output within atol + rtol |want| (NaN is
    never within), max_err the largest |got - want| over all of them."""
    worst, bad_msgs = 0.0, []
    if not any(name in got for name in want):
        return False, math.nan, "no output to check (the variant returned none of " + \
            ", ".join(want) + ")"
    for name, ref in want.items():
        if name not in got:
            continue
        atol, rtol = tolerance[name]
        g = got[name].double().reshape(ref.shape)
        err = (g - ref).abs()
        finite = torch.isfinite(g)
        bad = ~(err <= atol + rtol * ref.abs()) | ~finite
        n_bad = int(bad.sum().item())
        if not bool(finite.all().item()):
            worst = math.nan
        elif not math.isnan(worst):
            worst = max(worst, float(err.max().item()) if err.numel() else 0.0)
        if n_bad:
            first = int(torch.argmax(bad.reshape(-1).to(torch.uint8)).item())
            bad_msgs.append(f"{name}: {n_bad} of {ref.numel()} elements wrong, first at flat index "
                            f"{first}: got {g.reshape(-1)[first].item():.6g}, want "
                            f"{ref.reshape(-1)[first].item():.6g} (atol {atol:g}, rtol {rtol:g})")
    if not got:
        return False, math.nan, "no output"
    return not bad_msgs, worst, "; ".join(bad_msgs) or "within the tests' tolerance"


def check_variant(env, case, v):
    tol = dict(case.tolerance)
    tol.update(v.tolerance)
    return compare_outputs(env.torch, v.outputs(), case.want(), tol)


# ============================================================================
# timing through fl_time_variants
# ============================================================================

class Env:
    """What the lessons build their cases from: PyTorch, the device, the
    loaded libraries (None where absent) and the facts, Triton or why not."""

    def __init__(self, torch, device, solution=None, student=None, facts=None,
                 triton=None, triton_missing="", size="full"):
        self.torch, self.device = torch, device
        self.solution, self.student = solution, student
        # the library whose baseline ("course unfused") is timed; None: no C
        # kernels at all (tests/test_compare.py's dry runs on the CPU)
        self.course = solution or student
        self.facts = facts
        self.triton, self.triton_missing = triton, triton_missing
        self.size = size  # the shapes: full, quick (a smoke test) or tiny (CPU dry runs)
        self._streams = {}

    def on_stream(self, stream):
        """Make `stream` (a cudaStream_t from the harness) PyTorch's current one."""
        if self.device.type != "cuda" or not stream:
            return contextlib.nullcontext()
        s = self._streams.get(stream)
        if s is None:
            s = self._streams[stream] = self.torch.cuda.ExternalStream(stream)
        return self.torch.cuda.stream(s)

    def sides(self):
        """(variant name, kind, library) of the worked solution and the student's file."""
        for name, lib in ((SOLUTION, self.solution), ("student", self.student)):
            if lib is not None:
                yield name, name, lib

    def generator(self, seed):
        g = self.torch.Generator(device=self.device)
        g.manual_seed(seed)
        return g

    def uniform(self, shape, lo, hi, seed, dtype=None):
        t = self.torch.rand(shape, generator=self.generator(seed), device=self.device,
                            dtype=dtype or self.torch.float32)
        return t.mul_(hi - lo).add_(lo)

    def normal(self, shape, mean, std, seed):
        t = self.torch.randn(shape, generator=self.generator(seed), device=self.device)
        return t.mul_(std).add_(mean)

    def nan_like(self, t):
        return self.torch.full_like(t, math.nan)

    def nan(self, n):
        return self.torch.full((n,), math.nan, device=self.device)


def preflight(env, case, v):
    """Run v once, untimed, on a stream of its own: one that raises or returns
    an error is left out of the timing (v.failure says why)."""
    torch = env.torch
    stream = torch.cuda.Stream() if env.device.type == "cuda" else None
    ptr = stream.cuda_stream if stream is not None else 0
    try:
        rc = v.prepare(ptr) or v.run(ptr)
        if env.device.type == "cuda":
            torch.cuda.synchronize()
    except Exception as e:  # a backend that does not take the shape, ...
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        v.failure = ("n/a" if v.kind in ("torch eager", "torch fused", "triton") else "ERROR",
                     f"{type(e).__name__}: {first}")
        return
    if rc:
        name = cuda_error_name(env.course, rc)
        na = getattr(v, "optional", False) and (name == "cudaErrorNotSupported" or rc == 801)
        v.failure = ("n/a" if na else "ERROR",
                     "not on this GPU (returned cudaErrorNotSupported)" if na else f"returned {name}")


def _callbacks(env, case, v):
    """The ctypes callbacks of one variant. An exception must not escape into
    C (ctypes would print it and return 0, cudaSuccess): it is kept in
    v.failure and the harness gets an error code."""
    def run(_ctx, stream):
        try:
            rc = v.run(stream or 0)
        except Exception as e:
            v.failure = ("ERROR", f"{type(e).__name__}: {e}")
            return CUDA_ERROR_UNKNOWN
        if rc:
            v.failure = ("ERROR", f"returned {cuda_error_name(env.course, rc)}")
        return rc

    def prepare(_ctx, stream):
        try:
            return v.prepare(stream or 0)
        except Exception as e:
            v.failure = ("ERROR", f"prepare: {type(e).__name__}: {e}")
            return CUDA_ERROR_UNKNOWN

    def check(_ctx, msg, length):
        try:
            res = check_variant(env, case, v)
        except Exception as e:
            res = (False, math.nan, f"the check failed: {type(e).__name__}: {e}")
        # (every run is checked: the first wrong one is the one reported, and
        # max_err is the largest seen)
        if v.result is None or (v.result[0] and not res[0]):
            v.result = res
        elif v.result[0]:
            v.result = (True, max(v.result[1], res[1]), res[2])
        text = res[2].encode()[: max(0, length - 1)] + b"\0"
        ctypes.memmove(msg, text, len(text))
        return 1 if res[0] else 0

    return RUN_FN(run), RUN_FN(prepare), CHECK_FN(check)


def time_with_harness(lib, env, case, variants, samples, ceiling_gbs):
    """fl_time_variants over `variants`, interleaved: (cudaError_t, [FlTiming])."""
    n = len(variants)
    keep = []  # the callbacks and names must outlive the call
    arr = (FlVariant * n)()
    for i, v in enumerate(variants):
        run, prepare, check = _callbacks(env, case, v)
        name = v.name.encode()
        keep += [run, prepare, check, name]
        arr[i] = FlVariant(name, run, None, case.bytes, case.flops, prepare, check)
    opts = lib.fl_timing_defaults()
    opts.samples = samples
    opts.ceiling_gbs = ceiling_gbs
    # every run checked (warm-ups too, untimed), not only the last: a variant
    # right only sometimes is WRONG
    opts.check_each = 1
    # a framework call that takes the host longer than the 300 us hold to
    # queue gets a longer one (up to 25 ms): its GPU time, not the host's
    opts.adaptive_hold = 1
    out = (FlTiming * n)()
    rc = lib.fl_time_variants(arr, n, ctypes.byref(opts), out)
    return rc, list(out)


def time_case(env, case, timer):
    """Rows for one case: preflight every variant, time the ones that ran
    with `timer(env, case, variants)` -> (rc, timings), and retry without a
    variant that failed during the timing."""
    for v in case.variants:
        if v.failure is None:
            preflight(env, case, v)
    timings = {}
    for _attempt in range(3):
        live = [v for v in case.variants if v.failure is None]
        if not live:
            break
        for v in live:
            if isinstance(v, TorchVariant):
                v.setup_stream, v.last = None, None
        rc, out = timer(env, case, live)
        if rc == 0:
            timings = {v.name: t for v, t in zip(live, out)}
            break
        if not any(v.failure for v in live):  # the harness itself failed
            for v in live:
                v.failure = ("ERROR", f"fl_time_variants returned "
                                      f"{cuda_error_name(env.course, rc)}")
            break
    rows = []
    for v in case.variants:
        row = Row(case.op, dict(case.shape), case.label, v.name, v.kind, "ERROR")
        t = timings.get(v.name)
        if v.failure is not None or t is None:
            row.check, row.note = v.failure or ("ERROR", "not timed")
        else:
            ok = t.check_ok == 1
            row.check = "ok" if ok else "WRONG"
            row.median_us, row.gbs = t.us.median, t.gbs
            row.pct_of_ceiling = t.pct_of_ceiling or None
            row.tflops = t.tflops if case.flops else None
            if v.result is not None:
                row.max_err = v.result[1]
                if not ok:
                    row.note = v.result[2]
            if t.hidden_work:
                row.note = (row.note + "; " if row.note else "") + (
                    "work outside the timed stream: charged the wall clock")
            if t.launch_late:
                # the host queued longer than the protocol's longest hold:
                # the time may include the GPU waiting for Python (not judged)
                row.launch_late = True
                row.note = (row.note + "; " if row.note else "") + (
                    f"launch-bound in {t.launch_late} of {t.samples} samples: the host took longer "
                    "to queue the work than the GPU was held (25 ms), so the time may include "
                    "waiting for it")
        rows.append(row)
    return rows


# ============================================================================
# lesson 01: vector add, and y = (a + b) * s + c
# ============================================================================

def pow2_label(n):
    k = n.bit_length() - 1
    rest = n - (1 << k)
    return f"2^{k}" + (f"+{rest}" if rest else "")


def cases_01(env):
    torch, facts = env.torch, env.facts
    # odd n (the tests use 2^20 + 3 and 2^26): a tail the vector loads must handle
    sizes = {"tiny": [4097], "quick": [(1 << 20) + 1]}.get(
        env.size, [(1 << 20) + 1, (1 << 22) + 1, (1 << 24) + 1, (1 << 26) + 1])
    s = 1.5
    y_tol = facts.lib.fused_elementwise_atol(s)
    for n in sizes:
        a = env.uniform(n, -1.0, 1.0, 0x0101)
        b = env.uniform(n, -1.0, 1.0, 0x0102)
        c = env.uniform(n, -1.0, 1.0, 0x0103)
        shape, label = {"n": n}, pow2_label(n)

        # c = a + b: one rounding of the exact sum, at most 2^-24 of it
        case = Case("vector_add", shape, label, facts("vector_add_bytes", n), 0.0,
                    lambda: {"c": a.double() + b.double()}, {"c": (0.0, 2.0 ** -24)})
        for name, kind, lib in env.sides():
            out = env.nan_like(a)
            case.variants.append(KernelVariant(
                env, name, kind, lambda st, lib=lib, out=out: lib.vector_add(
                    a.data_ptr(), b.data_ptr(), out.data_ptr(), n, st), {"c": out}))
        case.variants.append(TorchVariant(env, "torch eager", "torch eager", lambda: a + b, ["c"]))
        case.variants += triton_variants(env, lambda T: (lambda: T.add(a, b)), ["c"])
        yield case

        # y = (a + b) * s + c
        case = Case("fused_elementwise", shape, label, facts("elementwise_fused_bytes", n), 0.0,
                    lambda: {"y": (a.double() + b.double()) * s + c.double()},
                    {"y": (y_tol, facts("L01_FUSED_RTOL"))})
        for name, kind, lib in env.sides():
            out = env.nan_like(a)
            case.variants.append(KernelVariant(
                env, name, kind, lambda st, lib=lib, out=out: lib.fused_elementwise(
                    a.data_ptr(), b.data_ptr(), c.data_ptr(), s, out.data_ptr(), n, st),
                {"y": out}))
        if env.course is not None:
            lib = env.course
            t1, t2, y = env.nan_like(a), env.nan_like(a), env.nan_like(a)
            case.variants.append(KernelVariant(
                env, "course unfused", "course", lambda st: lib.unfused_elementwise(
                    a.data_ptr(), b.data_ptr(), c.data_ptr(), s, t1.data_ptr(), t2.data_ptr(),
                    y.data_ptr(), n, st), {"y": y}))
        # eager PyTorch: three kernels, t1 and t2 in device memory
        case.variants.append(TorchVariant(env, "torch eager", "torch eager",
                                          lambda: (a + b) * s + c, ["y"]))
        case.variants += triton_variants(env, lambda T: (lambda: T.fused_elementwise(a, b, c, s)),
                                         ["y"])
        yield case


def course_unfused(env, case, outputs, launch, fn, scratch_floats):
    """The course's own unfused baseline (lesson 03: it needs a scratch of
    `scratch_floats` floats), where the library has one."""
    if env.course is None:
        return
    o = outputs()
    scratch = env.torch.empty(int(scratch_floats), device=env.device)
    case.variants.append(KernelVariant(env, "course unfused", "course",
                                       launch(getattr(env.course, fn), o, scratch), o,
                                       scratch=[scratch]))


def triton_variants(env, make, names):
    """[the Triton variant]: make(compare_triton) -> fn; n/a without Triton."""
    v = TorchVariant(env, "triton", "triton", None, names)
    if env.triton is None:
        v.failure = ("n/a", env.triton_missing)
    else:
        v.fn = make(env.triton)
    return [v]


# ============================================================================
# lesson 02: softmax over the rows
# ============================================================================

def softmax_eager(x):
    """What eager PyTorch runs for softmax written out: 5 kernels (softmax.h)."""
    m = x.amax(dim=1, keepdim=True)
    e = (x - m).exp()
    return e / e.sum(dim=1, keepdim=True)


def cases_02(env):
    torch, facts = env.torch, env.facts
    # 4096 rows at every power of two the fused kernel keeps on chip, then an
    # odd shape and rows long enough for the online softmax
    shapes = {"tiny": [(8, 300), (2, 40001)], "quick": [(4096, 1024), (1823, 781)]}.get(
        env.size, [(4096, 256 << k) for k in range(8)] + [(1823, 781), (3, 262147)])
    tol = {"y": (facts("L02_ATOL"), facts("L02_RTOL"))}
    for rows, cols in shapes:
        x = env.uniform((rows, cols), -4.0, 4.0, 0x0200 + cols)
        case = Case("softmax", {"rows": rows, "cols": cols}, f"{rows}x{cols}",
                    facts("softmax_fused_bytes", rows, cols), 0.0,
                    lambda: {"y": torch.softmax(x.double(), dim=1)}, tol)
        for name, kind, lib in env.sides():
            y = env.nan_like(x)
            case.variants.append(KernelVariant(
                env, name, kind, lambda st, lib=lib, y=y: lib.softmax_fused(
                    x.data_ptr(), y.data_ptr(), rows, cols, st), {"y": y}))
        if env.course is not None:
            lib = env.course
            row_max = torch.empty(rows, device=env.device)
            row_sum = torch.empty(rows, device=env.device)
            shifted, e, y = env.nan_like(x), env.nan_like(x), env.nan_like(x)
            case.variants.append(KernelVariant(
                env, "course unfused", "course", lambda st: lib.softmax_unfused(
                    x.data_ptr(), row_max.data_ptr(), shifted.data_ptr(), e.data_ptr(),
                    row_sum.data_ptr(), y.data_ptr(), rows, cols, st), {"y": y}))
        case.variants.append(TorchVariant(env, "torch eager", "torch eager",
                                          lambda: softmax_eager(x), ["y"]))
        case.variants.append(TorchVariant(env, "torch.softmax", "torch fused",
                                          lambda: torch.softmax(x, dim=1), ["y"]))
        case.variants += triton_variants(env, lambda T: (lambda: T.softmax(x)), ["y"])
        yield case
        case = shifted = e = y = None  # (the next shape's buffers in their place)


# ============================================================================
# lesson 03: LayerNorm forward and backward
# ============================================================================

def layernorm_fwd_eager(torch, x, w, b, eps):
    """LayerNorm written as tensor operations (layernorm.h's unfused list)."""
    mean = x.mean(-1, keepdim=True)
    xc = x - mean
    sq = xc * xc
    var = sq.mean(-1, keepdim=True)
    rstd = torch.rsqrt(var + eps)
    xhat = xc * rstd
    yw = xhat * w
    y = yw + b
    return y, mean.squeeze(-1), rstd.squeeze(-1)


def layernorm_bwd_eager(dy, x, w, mean, rstd):
    """The backward as tensor operations (layernorm.h's unfused list)."""
    mean, rstd = mean[:, None], rstd[:, None]
    xc = x - mean
    xhat = xc * rstd
    dbias = dy.sum(0)
    p = dy * xhat
    dweight = p.sum(0)
    g = dy * w
    mg = g.mean(-1, keepdim=True)
    q = g * xhat
    mgx = q.mean(-1, keepdim=True)
    t = g - mg
    u = xhat * mgx
    v = t - u
    dx = v * rstd
    return dx, dweight, dbias


def layernorm_reference(torch, x, w, b, dy, eps):
    """Forward and backward in float64, from the float32 inputs."""
    x64, w64, b64, dy64 = x.double(), w.double(), b.double(), dy.double()
    mean = x64.mean(-1)
    xc = x64 - mean[:, None]
    rstd = torch.rsqrt((xc * xc).mean(-1) + eps)
    xhat = xc * rstd[:, None]
    g = dy64 * w64
    dx = rstd[:, None] * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))
    return {"y": xhat * w64 + b64, "mean": mean, "rstd": rstd,
            "dx": dx, "dweight": (dy64 * xhat).sum(0), "dbias": dy64.sum(0)}


class LayerNormProblem:
    """One shape's inputs (x, dy, weight, bias) and its float64 reference,
    computed once, on first use, for the forward and the backward."""

    def __init__(self, env, rows, cols):
        self.rows, self.cols, self.eps = rows, cols, env.facts("LAYERNORM_EPS")
        self.x = env.normal((rows, cols), -2.3, 0.5, 0x0300 + cols)
        self.dy = env.normal((rows, cols), 0.0, 1.0, 0x0301 + cols)
        self.w = env.normal(cols, 1.0, 0.25, 0x0302)
        self.b = env.normal(cols, 0.0, 0.5, 0x0303)
        self.shape, self.label = {"rows": rows, "cols": cols}, f"{rows}x{cols}"
        self._ref, self._torch = None, env.torch

    def reference(self, names):
        if self._ref is None:
            self._ref = layernorm_reference(self._torch, self.x, self.w, self.b, self.dy, self.eps)
        return {k: self._ref[k] for k in names}


def layernorm_fwd_case(env, p):
    torch, facts = env.torch, env.facts
    x, w, b, rows, cols, eps = p.x, p.w, p.b, p.rows, p.cols, p.eps
    tol = (facts("L03_FWD_ATOL"), facts("L03_FWD_RTOL"))
    case = Case("layernorm_fwd", p.shape, p.label, facts("layernorm_fwd_fused_bytes", rows, cols),
                0.0, lambda: p.reference(["y", "mean", "rstd"]),
                {"y": tol, "mean": tol, "rstd": tol})

    def outputs():
        return {"y": env.nan_like(x), "mean": env.nan(rows), "rstd": env.nan(rows)}

    def launch(fn, o, *scratch):
        return lambda st: fn(x.data_ptr(), w.data_ptr(), b.data_ptr(), o["y"].data_ptr(),
                             o["mean"].data_ptr(), o["rstd"].data_ptr(),
                             *[t.data_ptr() for t in scratch], rows, cols, eps, st)

    for name, kind, lib in env.sides():
        o = outputs()
        case.variants.append(KernelVariant(env, name, kind, launch(lib.layernorm_fwd_fused, o), o))
    course_unfused(env, case, outputs, launch, "layernorm_fwd_unfused",
                   facts("layernorm_fwd_unfused_scratch_floats", rows, cols))
    case.variants.append(TorchVariant(env, "torch eager", "torch eager",
                                      lambda: layernorm_fwd_eager(torch, x, w, b, eps),
                                      ["y", "mean", "rstd"]))
    # (F.layer_norm gives y only: mean and rstd are not checked for it)
    case.variants.append(TorchVariant(env, "F.layer_norm", "torch fused",
                                      lambda: torch.nn.functional.layer_norm(x, (cols,), w, b, eps),
                                      ["y"]))
    case.variants += triton_variants(
        env, lambda T: (lambda: T.layernorm_fwd(x, w, b, eps)), ["y", "mean", "rstd"])
    return case


def layernorm_bwd_case(env, p):
    """The backward: dy, x, weight and the forward's mean and rstd (the
    reference's, rounded to float) in; dx, dweight and dbias out."""
    torch, facts = env.torch, env.facts
    x, w, dy, rows, cols = p.x, p.w, p.dy, p.rows, p.cols
    stats = p.reference(["mean", "rstd"])
    mean, rstd = stats["mean"].float(), stats["rstd"].float()
    dwb_tol = (facts("L03_DWB_ATOL_PER_ROW") * rows, facts("L03_DWB_RTOL"))
    case = Case("layernorm_bwd", p.shape, p.label, facts("layernorm_bwd_fused_bytes", rows, cols),
                0.0, lambda: p.reference(["dx", "dweight", "dbias"]),
                {"dx": (facts("L03_DX_ATOL"), facts("L03_DX_RTOL")),
                 "dweight": dwb_tol, "dbias": dwb_tol})

    def outputs():
        return {"dx": env.nan_like(x), "dweight": env.nan_like(w), "dbias": env.nan_like(w)}

    def launch(fn, o, *scratch):
        return lambda st: fn(dy.data_ptr(), x.data_ptr(), w.data_ptr(), mean.data_ptr(),
                             rstd.data_ptr(), o["dx"].data_ptr(), o["dweight"].data_ptr(),
                             o["dbias"].data_ptr(), *[t.data_ptr() for t in scratch], rows, cols,
                             st)

    for name, kind, lib in env.sides():
        # each side its own scratch, poisoned before every run
        partials = torch.empty(int(facts("layernorm_bwd_scratch_floats", cols)), device=env.device)
        o = outputs()
        case.variants.append(KernelVariant(env, name, kind,
                                           launch(lib.layernorm_bwd_fused, o, partials), o,
                                           scratch=[partials]))
        o = outputs()
        case.variants.append(KernelVariant(env, f"{name} atomic", kind,
                                           launch(lib.layernorm_bwd_fused_atomic, o), o))
    course_unfused(env, case, outputs, launch, "layernorm_bwd_unfused",
                   facts("layernorm_bwd_unfused_scratch_floats", rows, cols))
    case.variants.append(TorchVariant(env, "torch eager", "torch eager",
                                      lambda: layernorm_bwd_eager(dy, x, w, mean, rstd),
                                      ["dx", "dweight", "dbias"]))
    case.variants.append(layernorm_autograd(env, x, w, p.b, dy, p.eps))
    return case


def cases_03(env):
    # 4096 rows from 512 columns to the widest the lesson takes, then two
    # more shapes of models (hidden sizes 512 and 768, more rows)
    shapes = {"tiny": [(16, 300)], "quick": [(4096, 1024)]}.get(
        env.size, [(4096, c) for c in (512, 1024, 2048, 4096, 8192, 16384)] +
        [(8192, 512), (12288, 768)])
    for rows, cols in shapes:
        p = LayerNormProblem(env, rows, cols)
        yield layernorm_fwd_case(env, p)
        yield layernorm_bwd_case(env, p)
        p = None  # (the next shape's buffers in its place)


def layernorm_autograd(env, x, w, b, dy, eps):
    """F.layer_norm's backward through autograd: the forward runs untimed
    (setup, on the timed stream: autograd runs a backward on its forward's
    stream), each run is torch.autograd.grad of it."""
    torch, cols = env.torch, x.shape[1]
    graph = {}

    def setup():
        leaves = [t.detach().requires_grad_() for t in (x, w, b)]
        with torch.enable_grad():
            graph["y"] = torch.nn.functional.layer_norm(leaves[0], (cols,), leaves[1], leaves[2], eps)
        graph["leaves"] = leaves

    def backward():
        return tuple(torch.autograd.grad(graph["y"], graph["leaves"], dy, retain_graph=True))

    return TorchVariant(env, "F.layer_norm autograd", "torch fused", backward,
                        ["dx", "dweight", "dbias"], setup=setup)


# ============================================================================
# lesson 05: attention forward
# ============================================================================

def attention_eager(torch, q, k, v, scale, mask):
    """What eager PyTorch runs for softmax(q k^T * scale) v: S and P in memory."""
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if mask is not None:
        s = s.masked_fill(mask, -math.inf)
    p = torch.softmax(s, dim=-1)
    return torch.matmul(p, v)


def attention_reference(torch, q, k, v, scale, mask, heads_at_once=4):
    """O in float64, a few heads at a time (S of 32 heads at seq 4096 would be 4 GiB)."""
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    for h in range(0, q.shape[0], heads_at_once):
        sl = slice(h, h + heads_at_once)
        s = torch.matmul(q[sl].double(), k[sl].double().transpose(-2, -1)) * scale
        if mask is not None:
            s.masked_fill_(mask, -math.inf)
        out[sl] = torch.matmul(torch.softmax(s, dim=-1), v[sl].double())
    return out


SDPA_BACKENDS = [("sdpa flash", "FLASH_ATTENTION"), ("sdpa efficient", "EFFICIENT_ATTENTION"),
                 ("sdpa cudnn", "CUDNN_ATTENTION")]


def sdpa_variants(env, q4, k4, v4, scale, causal):
    """F.scaled_dot_product_attention pinned to each backend in turn; n/a where
    this PyTorch lacks the backend or it does not take the shape or dtype."""
    torch = env.torch
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        SDPBackend = sdpa_kernel = None
    out = []
    for name, member in SDPA_BACKENDS:
        backend = getattr(SDPBackend, member, None) if SDPBackend else None

        def fn(backend=backend):
            with sdpa_kernel(backend):
                o = torch.nn.functional.scaled_dot_product_attention(
                    q4, k4, v4, is_causal=bool(causal), scale=scale)
            # (as it comes: a reshape here would copy the flash and efficient
            # backends' transposed output inside the timed region; the check
            # reshapes it outside)
            return o

        v = TorchVariant(env, name, "torch fused", fn, ["o"])
        if backend is None:
            v.failure = ("n/a", f"this PyTorch ({torch.__version__}) has no "
                                f"torch.nn.attention.SDPBackend.{member}")
        out.append(v)
    return out


# lesson 05's going-further launchers, as a variant's name: "solution" + this
TENSOR_CORES = " tensor cores"  # float32 on TF32 tensor cores
WGMMA = " wgmma"                # float16 on Hopper's warpgroup MMA


def cases_05(env):
    torch, facts = env.torch, env.facts
    # eager float32 matmuls in float32, not TF32 (the course's baseline runs
    # cuBLAS without TF32 too)
    torch.backends.cuda.matmul.allow_tf32 = False
    batch, heads = 2, 16
    bh = batch * heads
    # (seq, head_dim, causal, dtype)
    configs = {"tiny": [(70, 64, 1, "f32"), (33, 128, 0, "f16")],
               "quick": [(512, 64, 0, "f32"), (512, 64, 1, "f16")]}.get(
        env.size, [(4096, d, causal, dt) for dt in ("f32", "f16") for d in (64, 128)
                   for causal in (0, 1)])
    lib0 = env.course
    for seq, d, causal, dt in configs:
        f16 = dt == "f16"
        dtype = torch.float16 if f16 else torch.float32
        # inputs uniform in [-1, 1); float16 runs get the same values rounded
        q, k, v = (env.uniform((bh, seq, d), -1.0, 1.0, 0x0500 + i).to(dtype) for i in range(3))
        scale = ctypes.c_float(1.0 / math.sqrt(d)).value  # the float the kernels get
        mask = torch.ones(seq, seq, dtype=torch.bool, device=env.device).triu(1) if causal else None
        elem = 2 if f16 else 4
        if f16:
            fused_tol = (facts.lib.attention_f16_sampled_atol(float(v.abs().max().item())), 0.0)
            unfused_tol = (facts("L05_F16_BASELINE_ATOL"), 0.0)  # S and P held in float16
        else:
            fused_tol = unfused_tol = (facts("L05_F32_ATOL"), facts("L05_F32_RTOL"))
        shape = {"dtype": dt, "batch": batch, "heads": heads, "seq": seq, "head_dim": d,
                 "causal": causal}
        label = f"{dt} d{d} {'causal' if causal else 'full'} seq {seq}"
        case = Case("attention", shape, label, facts("attention_fused_bytes", bh, seq, d, elem),
                    facts("attention_flops", bh, seq, d, causal),
                    lambda q=q, k=k, v=v, mask=mask, scale=scale: {
                        "o": attention_reference(torch, q, k, v, scale, mask)},
                    {"o": fused_tol})
        fused = "attention_fused_f16" if f16 else "attention_fused_f32"
        # each precision also through its going-further launcher (float32 on
        # tensor cores, float16 on Hopper's wgmma) where a side's file defines it
        launchers = [(fused, "")] + ([("attention_fused_f16_wgmma", WGMMA)] if f16 else
                                     [("attention_fused_f32_tc", TENSOR_CORES)])
        for name, kind, lib in env.sides():
            for fn, suffix in launchers:
                if getattr(lib, fn, None) is None:
                    continue
                o = env.nan_like(q)
                case.variants.append(KernelVariant(
                    env, name + suffix, kind, lambda st, lib=lib, fn=fn, o=o, q=q, k=k, v=v,
                    seq=seq, d=d, scale=scale, causal=causal: getattr(lib, fn)(
                        q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), bh, seq, d,
                        scale, causal, st),
                    {"o": o}, optional=bool(suffix)))
        if lib0 is not None:
            o = env.nan_like(q)
            ws_bytes = lib0.attention_unfused_workspace_bytes(1 if f16 else 0, bh, seq)
            ws = torch.empty(ws_bytes, dtype=torch.uint8, device=env.device)
            unfused = "attention_unfused_f16" if f16 else "attention_unfused_f32"
            case.variants.append(KernelVariant(
                env, "course unfused", "course", lambda st, o=o, ws=ws, q=q, k=k, v=v, seq=seq,
                d=d, scale=scale, causal=causal: getattr(lib0, unfused)(
                    q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), bh, seq, d, scale,
                    causal, ws.data_ptr(), ws_bytes, st), {"o": o}, tolerance={"o": unfused_tol}))
        case.variants.append(TorchVariant(
            env, "torch eager", "torch eager",
            lambda q=q, k=k, v=v, scale=scale, mask=mask: attention_eager(torch, q, k, v, scale, mask),
            ["o"], tolerance={"o": unfused_tol}))
        # (batch_heads, seq, d) is (batch, heads, seq, d) in the same memory
        q4, k4, v4 = (t.view(batch, heads, seq, d) for t in (q, k, v))
        case.variants += sdpa_variants(env, q4, k4, v4, scale, causal)
        yield case
        case = o = ws = q = k = v = q4 = k4 = v4 = None


# ============================================================================
# the lessons
# ============================================================================

@dataclass
class Lesson:
    name: str
    cases: object          # env -> generator of Case
    goals: list
    compute_bound: bool = False
    samples: int = 30


LESSONS = {
    "01-vector-add": Lesson("01-vector-add", cases_01, [
        Goal("fused y = (a + b) * s + c at >= 90% of the copy bandwidth", "fused_elementwise", None, 90.0),
        Goal("c = a + b at >= 90% of the copy bandwidth", "vector_add", None, 90.0)]),
    "02-fused-softmax": Lesson("02-fused-softmax", cases_02, [
        Goal("at least as fast as Triton's tutorial-style kernel at every row length", "softmax", "triton", 1.0),
        Goal("at least as fast as torch.softmax at every row length", "softmax", "torch.softmax", 1.0)]),
    "03-layernorm": Lesson("03-layernorm", cases_03, [
        Goal("forward >= 1.5x F.layer_norm", "layernorm_fwd", "F.layer_norm", 1.5),
        Goal("backward >= 1.5x F.layer_norm's (autograd)", "layernorm_bwd", "F.layer_norm autograd", 1.5)]),
    "05-flash-attention": Lesson("05-flash-attention", cases_05, [
        Goal("float16 at least as fast as SDPA's flash backend", "attention", "sdpa flash", 1.0,
             where="f16"),
        Goal("float16 on Hopper's wgmma (going further) at least as fast as SDPA's flash backend",
             "attention", "sdpa flash", 1.0, variant=SOLUTION + WGMMA, where="f16"),
        Goal("float32 on tensor cores (going further) >= 1.2x SDPA's memory-efficient backend "
             "at head_dim 64", "attention", "sdpa efficient", 1.2,
             variant=SOLUTION + TENSOR_CORES, where="f32 d64 "),
        Goal("float32 on tensor cores (going further) >= 1.0x SDPA's memory-efficient backend "
             "at head_dim 128", "attention", "sdpa efficient", 1.0,
             variant=SOLUTION + TENSOR_CORES, where="f32 d128 ")],
        compute_bound=True, samples=20),
}
NOT_COMPARED = {
    "04-memory-traffic": "it measures memory traffic (byte models, DRAM counters, a "
                         "transpose): no fused operation to compare",
}


def resolve_lesson(arg):
    """'2', '02' or '02-fused-softmax' -> the lesson folder's name, or None."""
    if arg.isdigit() and len(arg) == 1:
        arg = "0" + arg
    names = sorted(os.listdir(os.path.join(ROOT, "lessons")))
    for name in names:
        if name == arg or name.startswith(arg + "-"):
            return name
    return None


# ============================================================================
# the environment, the student's trial run, main
# ============================================================================

def environment():
    """None when Python, PyTorch and a CUDA GPU are there; else the one line
    that says what is missing and how to get it."""
    if sys.version_info < (3, 10):
        return (f"compare: PyTorch was not looked for: ./lab compare needs Python 3.10 or newer "
                f"(python3 here is {sys.version.split()[0]})")
    try:
        import torch
    except ImportError:
        return ("compare: PyTorch was not found (import torch fails for "
                f"{sys.executable}): install it with  pip install torch  (Triton comes with it "
                "on Linux), then run ./lab compare again")
    except Exception as e:
        return f"compare: PyTorch did not load ({type(e).__name__}: {e}): fix or reinstall it (pip install torch)"
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_available():
        build = getattr(getattr(torch, "version", None), "cuda", None)
        why = ("this PyTorch is a CPU-only build: install one with CUDA (pip install torch)"
               if getattr(torch, "version", None) is not None and build is None
               else "run ./lab compare on a machine with an NVIDIA GPU")
        return f"compare: no CUDA GPU visible to PyTorch {getattr(torch, '__version__', '')}: {why}"
    return None


def load_triton():
    """(compare_triton module, '') or (None, why not)."""
    try:
        sys.path.insert(0, HERE)
        import compare_triton
        return compare_triton, ""
    except ImportError as e:
        return None, f"Triton is not installed ({e}): pip install triton"
    except Exception as e:
        return None, f"Triton did not load: {type(e).__name__}: {e}"
    finally:
        sys.path.remove(HERE)


def probe_main(args, lesson):
    """The child's side of the student's trial run: each student variant once,
    one JSON line per variant, flushed, so that the lines before a crash reach
    the parent."""
    import torch
    lib = load_library(args.student_lib)
    env = Env(torch, torch.device("cuda"), student=lib, facts=Facts(lib), triton_missing="-",
              size="quick" if args.quick else "full")
    for case in lesson.cases(env):
        for v in case.variants:
            if v.kind != "student":
                continue
            print(json.dumps({"case": case.key(), "variant": v.name, "status": "start"}), flush=True)
            preflight(env, case, v)
            status, msg = v.failure or ("ok", "")
            print(json.dumps({"case": case.key(), "variant": v.name, "status": status,
                              "message": msg}), flush=True)
    return 0


def probe_student(args, lesson, timeout_s=600):
    """Run the student's kernels once in a child process (probe_main).
    {(case key, variant): (check, message)} for every student variant that
    must not be timed: one that returned an error, the one running when the
    child crashed or hung, and every one the child did not reach."""
    cmd = [sys.executable, os.path.abspath(__file__), "--probe", "--lesson", lesson.name,
           "--student-lib", args.student_lib] + (["--quick"] if args.quick else [])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err, rc = f"no answer in {timeout_s} s", None
    failures, done, running = read_probe(out)
    stopped = None
    if rc != 0:
        last = (err.strip().splitlines() or [f"exit code {rc}"])[-1]
        stopped = (running, f"your kernel's trial run crashed or hung here ({last}): "
                            f"./lab check {lesson.name[:2]} --sanitize says where")
    return failures, done, stopped


def read_probe(out):
    """The child's lines (probe_main): {(case key, variant): (check, message)}
    for each variant that did not run right (n/a for an optional launcher not
    for this GPU, ERROR for the rest), the set of variants that finished, and
    the one that started and did not finish (None)."""
    failures, done, running = {}, set(), None
    for line in out.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        key = (rec["case"], rec["variant"])
        if rec["status"] == "start":
            running = key
            continue
        running = None
        done.add(key)
        if rec["status"] != "ok":
            failures[key] = ("n/a" if rec["status"] == "n/a" else "ERROR", rec["message"])
    return failures, done, running


def student_failure(key, failures, done, stopped):
    """Why the student's variant `key` is not timed, or None (probe_student)."""
    if key in failures:
        return failures[key]
    if stopped is None or key in done:
        return None
    running, why = stopped
    if key == running:
        return ("ERROR", why)
    return ("ERROR", "not run: your kernel's trial run stopped before it" +
            (f" (at {running[0]}, {running[1]})" if running else f" ({why})"))


def copy_ceiling_at(lib, moved, cache):
    """The copy ceiling (GB/s) of a case moving `moved` bytes in all, as the
    benches and the speed tests measure it (fl_copy_ceiling_for, timing.h:
    the fastest of its copies, reads and mixed streams at 256 MiB buffers and
    at the case's size), once per size; 0 when the measurement failed."""
    if moved not in cache:
        gbs = ctypes.c_double(0.0)
        rc = lib.fl_copy_ceiling_for(float(moved), ctypes.byref(gbs))
        cache[moved] = gbs.value if rc == 0 else 0.0
    return cache[moved]


def run_lesson(args, lesson, timer=time_with_harness):
    import torch
    solution = load_library(args.solution_lib) if args.solution_lib else None
    student = load_library(args.student_lib) if args.student_lib else None
    if solution is None and student is None:
        raise SystemExit("compare: give --solution-lib or --student-lib (./lab compare builds them)")
    triton, triton_missing = load_triton()
    lib = solution or student
    env = Env(torch, torch.device("cuda"), solution, student, Facts(lib), triton, triton_missing,
              "quick" if args.quick else "full")
    probe = ({}, set(), None)
    if student is not None:
        print(f"compare: {lesson.name}: a trial run of your kernels, in a process of their own",
              file=sys.stderr)
        probe = probe_student(args, lesson)
    ceiling = ctypes.c_double(0.0)
    rc = lib.fl_copy_bandwidth_gbs(0, ctypes.byref(ceiling))
    if rc != 0:
        raise SystemExit(f"compare: measuring the copy bandwidth failed: {cuda_error_name(lib, rc)}")
    at_size = {}
    samples = args.samples or (5 if args.quick else lesson.samples)
    rows = []
    for case in lesson.cases(env):
        for v in case.variants:
            if v.kind == "student":
                v.failure = student_failure((case.key(), v.name), *probe)
        print(f"compare: {lesson.name}: {case.key()} ({len(case.variants)} variants)",
              file=sys.stderr)
        # "% of copy": against the copy ceiling of the case's bytes (reads +
        # writes), timed the same way; a shape whose buffers are a few times
        # the L2 can move more a second than the large copy above
        same = copy_ceiling_at(lib, case.bytes, at_size) or ceiling.value
        rows += time_case(env, case, lambda e, c, vs: timer(lib, e, c, vs, samples, same))
        case = None
        gc.collect()
        torch.cuda.empty_cache()
    if student is None and args.student_build_failed:
        note = f"your file did not build (./lab check {lesson.name[:2]} shows why)"
        rows += [Row(r.op, dict(r.shape), r.label, "student", "student", "ERROR", note=note)
                 for r in rows if r.variant == SOLUTION]
    return rows, torch.cuda.get_device_name(), ceiling.value, samples


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Time a lesson's worked solution and your kernel beside PyTorch and Triton, "
                    "with the course's timing protocol (./lab compare runs this).")
    ap.add_argument("--lesson", help="01, 02, 03, 05 (04 has nothing to compare)")
    ap.add_argument("--solution-lib", help="libfusionlab_compare_NN_solution.so")
    ap.add_argument("--student-lib", help="libfusionlab_compare_NN_student.so")
    ap.add_argument("--student-build-failed", action="store_true",
                    help="say so in the student's rows (lab sets it)")
    ap.add_argument("--csv", help="where the CSV goes (default plots/NN-name-compare.csv)")
    ap.add_argument("--quick", action="store_true", help="two shapes or so, 5 samples (a smoke test)")
    ap.add_argument("--samples", type=int, default=0, help="timed samples per variant")
    ap.add_argument("--env-check", action="store_true",
                    help="only say whether PyTorch and a GPU are there (exit 0), or why not")
    ap.add_argument("--skip-code", type=int, default=0,
                    help="exit code when PyTorch or a GPU is missing (default 0)")
    ap.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    lesson = None
    if args.lesson is not None:
        name = resolve_lesson(args.lesson)
        if name is None:
            print(f"compare: no lesson '{args.lesson}' (lessons: "
                  f"{' '.join(sorted(list(LESSONS) + list(NOT_COMPARED)))})", file=sys.stderr)
            return 2
        if name in NOT_COMPARED:
            print(f"compare: lesson {name} is skipped: {NOT_COMPARED[name]}")
            return args.skip_code if args.env_check else 0
        lesson = LESSONS.get(name)
        if lesson is None:
            print(f"compare: lesson {name} has no comparison in tools/compare.py", file=sys.stderr)
            return 2
    missing = environment()
    if missing:
        print(missing)
        return args.skip_code
    if args.env_check:
        return 0
    if lesson is None:
        print("compare: name a lesson: --lesson NN (./lab compare runs every lesson)", file=sys.stderr)
        return 2
    if args.probe:
        return probe_main(args, lesson)
    try:
        rows, device, ceiling, samples = run_lesson(args, lesson)
    except AbiError as e:
        print(f"compare: {e}", file=sys.stderr)
        return 1
    date = datetime.date.today().isoformat()
    path = args.csv or os.path.join(ROOT, "plots", f"{lesson.name}-compare.csv")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as f:
        write_csv(f, rows, device, date)
    print(f"## lesson {lesson.name}: the worked solution, your kernel, PyTorch and Triton")
    print("")
    print("\n".join(report(rows, lesson.goals, device, date, samples, lesson.compute_bound)))
    print(f"(% of copy: of the copy ceiling of each shape's bytes, fl_copy_ceiling_for: the "
          f"fastest of copies, reads and streams of two or three reads a write, timed the same "
          f"way, at 256 MiB buffers ({ceiling:.0f} GB/s here) and at the shape's own bytes; "
          f"CSV: {os.path.relpath(path)})")
    print("")
    # (n/a: an optional launcher not for this GPU: lesson 05's going-further kernels)
    wrong = [r for r in rows if r.kind in (SOLUTION, "course") and r.check not in ("ok", "n/a")]
    for r in wrong:
        print(f"compare: the course's own {r.variant} is {r.check} at {r.op} {r.label}: {r.note}",
              file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())

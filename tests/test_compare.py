#!/usr/bin/env python3
# tests/test_compare.py — tools/compare.py (./lab compare) where there is no
# GPU and, usually, no PyTorch.
#
#   python3 tests/test_compare.py                  the parts that need neither
#                                                  (ctest compare/units)
#   python3 tests/test_compare.py --lib LIB ...    also the ctypes structures
#                                                  against built libraries
#                                                  (ctest compare/abi)
#   python3 tests/test_compare.py --fake-csv LESSON OUT DEVICE
#                                                  write a made-up compare CSV
#                                                  (tests/compare.sh draws it)
#
# Units: speedups, goals, the CSV (and the columns each plot.gp reads of it),
# the Markdown table, the rows made from a made-up timing result, the
# student's trial-run bookkeeping, the ctypes prototypes against the lessons'
# headers, the command line. ABI: each library's fl_variant, fl_timing_opts,
# fl_stats and fl_timing against compare.py's ctypes declarations (a drifted
# declaration must be refused), and the facts it reads of the headers. Where
# PyTorch, Triton and the libraries are all there, a dry run of every lesson
# on the CPU (Triton's interpreter, no C kernel): every PyTorch and Triton
# variant must be right. Exits 77 (ctest: skipped) when every test it ran
# was skipped.
import contextlib
import ctypes
import io
import json
import math
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
import compare  # noqa: E402
from compare import Goal, Row  # noqa: E402

LIBS = []  # --lib: the built fusionlab_compare_* libraries


def row(op, label, variant, us, check="ok", shape=None, kind=None, **kw):
    return Row(op, shape or {"rows": 4, "cols": int(label.split("x")[-1])}, label, variant,
               kind or variant, check, median_us=us, **kw)


# ============================================================================
# made-up results: the shapes and variants tools/compare.py writes
# ============================================================================

def fake_rows(lesson):
    """A whole lesson's rows as tools/compare.py would write them, with times
    made up: the student WRONG at its first shape and Triton n/a at one."""
    out = []

    def add(op, shape, label, variants, base):
        for i, v in enumerate(variants):
            kind = {"solution": "solution", "student": "student", "course unfused": "course",
                    "torch eager": "torch eager", "triton": "triton"}.get(v, "torch fused")
            check = "ok"
            if v == "student" and not any(r.variant == "student" for r in out):
                check = "WRONG"
            us = base * (1.0 + 0.3 * i)
            gbs = 1000.0 * (1 + i % 3)
            out.append(Row(op, dict(shape), label, v, kind, check, us, gbs, gbs / 40.0,
                           None, 1e-7 if check == "ok" else math.nan,
                           "" if check == "ok" else "y: 4 of 16 elements wrong, first at 0"))

    if lesson == "01-vector-add":
        for k in (20, 22, 24, 26):
            n = (1 << k) + 1
            add("vector_add", {"n": n}, compare.pow2_label(n),
                ["solution", "student", "torch eager", "triton"], 2.0 ** (k - 14))
            add("fused_elementwise", {"n": n}, compare.pow2_label(n),
                ["solution", "student", "course unfused", "torch eager", "triton"], 2.0 ** (k - 13))
    elif lesson == "02-fused-softmax":
        for rows, cols in [(4096, 256 << k) for k in range(8)] + [(1823, 781), (3, 262147)]:
            add("softmax", {"rows": rows, "cols": cols}, f"{rows}x{cols}",
                ["solution", "student", "course unfused", "torch eager", "torch.softmax", "triton"],
                rows * cols / 4e5)
        out[-1].check, out[-1].median_us, out[-1].note = "n/a", None, "Triton is not installed"
    elif lesson == "03-layernorm":
        for rows, cols in [(4096, c) for c in (512, 1024, 2048, 4096, 8192, 16384)] + [
                (8192, 512), (12288, 768)]:
            shape, label = {"rows": rows, "cols": cols}, f"{rows}x{cols}"
            add("layernorm_fwd", shape, label, ["solution", "student", "course unfused",
                                                "torch eager", "F.layer_norm", "triton"],
                rows * cols / 4e5)
            add("layernorm_bwd", shape, label, ["solution", "solution atomic", "student",
                                                "student atomic", "course unfused", "torch eager",
                                                "F.layer_norm autograd"], rows * cols / 3e5)
    elif lesson == "05-flash-attention":
        for dt in ("f32", "f16"):
            for d in (64, 128):
                for causal in (0, 1):
                    shape = {"dtype": dt, "batch": 2, "heads": 16, "seq": 4096, "head_dim": d,
                             "causal": causal}
                    n = len(out)
                    add("attention", shape, f"{dt} d{d} {'causal' if causal else 'full'} seq 4096",
                        ["solution", "student", "course unfused", "torch eager", "sdpa flash",
                         "sdpa efficient", "sdpa cudnn"], 500.0 * d / 64)
                    for r in out[n:]:
                        r.tflops, r.pct_of_ceiling = 100.0 / r.median_us * 500, None
                    if dt == "f32":
                        for r in out[n:]:
                            if r.variant in ("sdpa flash", "sdpa cudnn"):
                                r.check, r.median_us, r.tflops = "n/a", None, None
    else:
        raise SystemExit(f"no made-up rows for lesson {lesson}")
    return out


# ============================================================================
# units: no PyTorch, no GPU
# ============================================================================

class Speedups(unittest.TestCase):
    def test_ratio_is_variant_over_solution(self):
        rows = [row("softmax", "4x256", "solution", 10.0), row("softmax", "4x256", "triton", 12.5),
                row("softmax", "4x256", "torch.softmax", 8.0)]
        r = compare.speedups(rows)
        self.assertAlmostEqual(r[("softmax", "4x256", "triton")], 1.25)
        self.assertAlmostEqual(r[("softmax", "4x256", "torch.softmax")], 0.8)
        self.assertAlmostEqual(r[("softmax", "4x256", "solution")], 1.0)

    def test_wrong_variants_are_compared_with_nothing(self):
        rows = [row("softmax", "4x256", "solution", 10.0),
                row("softmax", "4x256", "student", 1.0, check="WRONG"),
                row("softmax", "4x512", "solution", 10.0, check="WRONG"),
                row("softmax", "4x512", "triton", 12.0)]
        r = compare.speedups(rows)
        self.assertNotIn(("softmax", "4x256", "student"), r)
        self.assertNotIn(("softmax", "4x512", "triton"), r, "a wrong solution has no speedup")

    def test_shapes_and_ops_are_kept_apart(self):
        rows = [row("layernorm_fwd", "4x256", "solution", 10.0),
                row("layernorm_bwd", "4x256", "solution", 20.0),
                row("layernorm_fwd", "4x256", "F.layer_norm", 30.0),
                row("layernorm_fwd", "4x512", "F.layer_norm", 5.0)]
        r = compare.speedups(rows)
        self.assertAlmostEqual(r[("layernorm_fwd", "4x256", "F.layer_norm")], 3.0)
        self.assertNotIn(("layernorm_fwd", "4x512", "F.layer_norm"), r)


class Goals(unittest.TestCase):
    def test_met_missed_and_not_judged(self):
        rows = [row("softmax", "4x256", "solution", 10.0), row("softmax", "4x256", "triton", 9.0),
                row("softmax", "4x512", "solution", 10.0), row("softmax", "4x512", "triton", 11.0),
                row("softmax", "4x1024", "solution", 10.0),
                row("softmax", "4x1024", "triton", None, check="n/a"),
                row("softmax", "4x2048", "solution", 10.0, check="WRONG"),
                row("softmax", "4x2048", "triton", 12.0)]
        (line,) = compare.goal_lines(rows, [Goal("at least Triton", "softmax", "triton", 1.0)])
        self.assertTrue(line.startswith("goal: at least Triton: met at 1 of 2 shapes"), line)
        self.assertIn("missed at 4x256 0.900x", line)
        self.assertIn("4x1024 (triton n/a)", line)
        self.assertIn("4x2048 (solution WRONG)", line)

    def test_share_of_the_copy_bandwidth(self):
        s = {"n": 5}
        rows = [row("fused_elementwise", "2^20", "solution", 5.0, shape=s, pct_of_ceiling=95.0),
                row("fused_elementwise", "2^22", "solution", 9.0, shape=s, pct_of_ceiling=85.5)]
        (line,) = compare.goal_lines(rows, [Goal(">= 90% of copy", "fused_elementwise", None, 90.0)])
        self.assertIn("met at 1 of 2 shapes", line)
        self.assertIn("missed at 2^22 85.5% of copy", line)

    def test_a_ratio_goal_above_one(self):
        rows = [row("layernorm_fwd", "4x256", "solution", 10.0),
                row("layernorm_fwd", "4x256", "F.layer_norm", 14.0)]
        (line,) = compare.goal_lines(rows, [Goal(">= 1.5x", "layernorm_fwd", "F.layer_norm", 1.5)])
        self.assertIn("met at 0 of 1 shape;", line)
        self.assertIn("missed at 4x256 1.400x", line)

    def test_a_miss_by_a_hair_is_not_rounded_up(self):
        rows = [row("layernorm_bwd", "4x512", "solution", 10.0),
                row("layernorm_bwd", "4x512", "F.layer_norm autograd", 14.97)]
        (line,) = compare.goal_lines(rows, [Goal(">= 1.5x", "layernorm_bwd", "F.layer_norm autograd", 1.5)])
        self.assertIn("missed at 4x512 1.497x", line)

    def test_a_goal_of_another_variant_on_some_shapes(self):
        f32, f32_128, f16 = "f32 d64 full seq 4096", "f32 d128 full seq 4096", "f16 d64 full seq 4096"
        s = {"seq": 4096}
        rows = [row("attention", f32, "solution", 30.0, shape=s),
                row("attention", f32, "solution tensor cores", 20.0, shape=s),
                row("attention", f32, "sdpa efficient", 25.0, shape=s),
                row("attention", f32_128, "solution tensor cores", 50.0, shape=s),
                row("attention", f32_128, "sdpa efficient", 40.0, shape=s),
                row("attention", f16, "solution", 5.0, shape=s),
                row("attention", f16, "sdpa efficient", 9.0, shape=s)]
        (line,) = compare.goal_lines(rows, [Goal(">= 1.2x", "attention", "sdpa efficient", 1.2,
                                                 variant="solution tensor cores", where="f32 d64 ")])
        # 25 / 20: the tensor-core variant's ratio, not the solution's (25 / 30); one shape
        self.assertTrue(line.startswith("goal: >= 1.2x: met at 1 of 1 shape"), line)
        self.assertNotIn("missed", line)
        (line,) = compare.goal_lines(rows, [Goal(">= 1x", "attention", "sdpa efficient", 1.0,
                                                 variant="solution tensor cores", where="f32")])
        self.assertIn("met at 1 of 2 shapes; missed at f32 d128 full seq 4096 0.800x", line)
        self.assertNotIn("f16", line)

    def test_the_table_shows_each_goals_pair(self):
        s, label = {"seq": 4096}, "f32 d64 full seq 4096"
        rows = [row("attention", label, "solution", 30.0, shape=s),
                row("attention", label, "solution tensor cores", 20.0, shape=s),
                row("attention", label, "sdpa efficient", 25.0, shape=s)]
        lines = compare.markdown_tables(rows, compare.LESSONS["05-flash-attention"].goals, True)
        head = next(l for l in lines if l.startswith("| shape"))
        self.assertTrue(head.endswith("| solution vs sdpa flash | solution wgmma vs sdpa flash | "
                                      "solution tensor cores vs sdpa efficient |"), head)
        line = next(l for l in lines if l.startswith("| " + label))
        self.assertTrue(line.endswith("|  |  | 1.25x |"), line)  # 25 / 20; no flash time: empty

    def test_a_launch_bound_time_is_not_judged(self):
        late = row("layernorm_bwd", "4x512", "F.layer_norm autograd", 118.1)
        late.launch_late = True
        rows = [row("layernorm_bwd", "4x512", "solution", 20.0), late,
                row("layernorm_bwd", "4x4096", "solution", 85.0),
                row("layernorm_bwd", "4x4096", "F.layer_norm autograd", 163.0)]
        (line,) = compare.goal_lines(rows, [Goal(">= 1.5x", "layernorm_bwd", "F.layer_norm autograd", 1.5)])
        self.assertIn("met at 1 of 1 shape;", line)
        self.assertIn("4x512 (F.layer_norm autograd launch-bound", line)


class Csv(unittest.TestCase):
    def written(self, rows, device="NVIDIA H100 80GB HBM3"):
        buf = io.StringIO()
        compare.write_csv(buf, rows, device, "2026-11-25")
        return buf.getvalue().splitlines()

    def test_columns_and_values(self):
        rows = [row("softmax", "4x256", "solution", 10.0, gbs=800.0, pct_of_ceiling=20.0,
                    max_err=3e-8),
                row("softmax", "4x256", "triton", 12.5, gbs=640.0, pct_of_ceiling=16.0, max_err=1e-7),
                row("softmax", "4x256", "student", None, check="ERROR",
                    note="returned cudaErrorInvalidValue, twice, here")]
        lines = self.written(rows)
        self.assertEqual(lines[0], "device,date,op,rows,cols,variant,kind,median_us,gbs,"
                                   "pct_of_ceiling,tflops,check,max_err,solution_speedup,note")
        self.assertEqual(lines[1], "NVIDIA H100 80GB HBM3,2026-11-25,softmax,4,256,solution,"
                                   "solution,10.000,800.0,20.0,,ok,3e-08,1.000,")
        self.assertEqual(lines[2].split(",")[13], "1.250")
        # an ERROR row: no numbers, the note without the commas gnuplot would split at
        self.assertEqual(lines[3].split(",")[7:], ["", "", "", "", "ERROR", "", "",
                                                   "returned cudaErrorInvalidValue; twice; here"])
        self.assertEqual(len({len(line.split(",")) for line in lines}), 1, lines)

    def test_each_series_is_one_block_of_lines(self):
        rows = [row(op, f"4x{c}", v, 10.0) for c in (256, 512) for op in ("fwd", "bwd")
                for v in ("solution", "triton")]
        got = [tuple(line.split(",")[2:6:3]) + (line.split(",")[4],)
               for line in self.written(rows)[1:]]
        self.assertEqual(got, [("fwd", "solution", "256"), ("fwd", "solution", "512"),
                               ("fwd", "triton", "256"), ("fwd", "triton", "512"),
                               ("bwd", "solution", "256"), ("bwd", "solution", "512"),
                               ("bwd", "triton", "256"), ("bwd", "triton", "512")])

    def test_a_device_name_with_a_comma_is_quoted(self):
        lines = self.written([row("softmax", "4x256", "solution", 10.0)], device="GPU, the big one")
        self.assertTrue(lines[1].startswith('"GPU, the big one",2026-11-25,'), lines[1])

    def test_every_plot_reads_the_columns_the_csv_has(self):
        """Each plot.gp names the compare CSV's columns by number
        (fl_cmp_col(v, COL, VARIANT, CHECK), 'using X:'); they must be the
        ones write_csv puts there for that lesson."""
        for lesson in ("01-vector-add", "02-fused-softmax", "03-layernorm", "05-flash-attention"):
            head = self.written(fake_rows(lesson))[0].split(",")
            col = {name: i + 1 for i, name in enumerate(head)}
            with open(os.path.join(ROOT, "lessons", lesson, "plot.gp")) as f:
                text = f.read()
            calls = re.findall(r"fl_cmp_col\(v, (\w+), (\d+), (\d+)\)", text)
            self.assertTrue(calls, f"{lesson}/plot.gp does not read a compare CSV")
            # the values drawn: fl_cmp_col's own, or those its lesson's c0N() is given
            values = re.findall(r"\bc0\d\('[^']*', (\d+)\)", text)
            for value, vcol, chk in calls:
                self.assertEqual(int(vcol), col["variant"], f"{lesson}: the variant column")
                self.assertEqual(int(chk), col["check"], f"{lesson}: the check column")
                if value.isdigit():
                    values.append(value)
            self.assertTrue(values, f"{lesson}/plot.gp draws no column of the compare CSV")
            for value in values:
                self.assertIn(int(value), (col["gbs"], col["tflops"], col["solution_speedup"]),
                              f"{lesson}: column {value} is {head[int(value) - 1]}")
            x = "n" if lesson.startswith("01") else "seq" if lesson.startswith("05") else "cols"
            # every series of the compare CSV is drawn against its size column
            for m in re.findall(r"'%s' using (\d+):|'' using (\d+):\(c0", text):
                used = int(m[0] or m[1])
                self.assertEqual(used, col[x], f"{lesson}: x is column {used}, not {x}")
            for m in re.findall(r"strcol\((\d+)\) eq '(f16|f32|layernorm_\w+|fused_elementwise)'",
                                text):
                want = "dtype" if m[1] in ("f16", "f32") else "op"
                self.assertEqual(int(m[0]), col[want], f"{lesson}: {m[1]} is in column {want}")


class Table(unittest.TestCase):
    def test_one_line_per_shape_one_column_per_variant(self):
        rows = fake_rows("02-fused-softmax")
        goals = compare.LESSONS["02-fused-softmax"].goals
        lines = compare.markdown_tables(rows, goals)
        self.assertEqual(lines[0], "softmax:")
        head = lines[2]
        self.assertEqual(head, "| shape | solution (µs) | student (µs) | course unfused (µs) | "
                               "torch eager (µs) | torch.softmax (µs) | triton (µs) | "
                               "solution GB/s | % of copy | solution vs triton | "
                               "solution vs torch.softmax |")
        body = [line for line in lines if line.startswith("| ") and line is not head]
        self.assertEqual(len(body), 10, "one line per shape")
        first = body[0].split(" | ")
        self.assertEqual(first[0], "| 4096x256")
        self.assertEqual(first[2], "WRONG")
        # made-up times: variant i takes 1 + 0.3 i times the solution's
        self.assertEqual(first[-2:], ["2.50x", "2.20x |"], "over triton (i = 5), torch.softmax (4)")
        last = body[-1].split(" | ")
        self.assertEqual(last[6], "n/a")
        self.assertEqual(last[-2], "")  # no speedup over a variant that did not run

    def test_attention_is_judged_by_tflops(self):
        rows = fake_rows("05-flash-attention")
        lines = compare.markdown_tables(rows, compare.LESSONS["05-flash-attention"].goals,
                                        compute_bound=True)
        self.assertIn("solution TFLOP/s", lines[2])
        self.assertNotIn("GB/s", lines[2])
        self.assertEqual(sum(1 for line in lines if line.startswith("| f")), 8)

    def test_report_has_the_legend_and_the_goals(self):
        rows = fake_rows("03-layernorm")
        lines = compare.report(rows, compare.LESSONS["03-layernorm"].goals, "GPU", "2026-11-25", 30)
        self.assertEqual(sum(1 for line in lines if line.startswith("goal: ")), 2)
        self.assertTrue(any(line.startswith("(median of 30 samples") for line in lines))
        self.assertIn("layernorm_fwd:", lines)
        self.assertIn("layernorm_bwd:", lines)


class FakeVariant(compare.Variant):
    def __init__(self, name, kind, rc=0, raises=None, right=True):
        super().__init__(None, name, kind)
        self.rc, self.raises, self.right, self.runs = rc, raises, right, 0

    def prepare(self, stream):
        return 0

    def run(self, stream):
        self.runs += 1
        if self.raises:
            raise self.raises
        return self.rc


class FakeEnv:
    """An Env without PyTorch: preflight runs the variants on "stream 0"."""
    class device:
        type = "cpu"
    torch = course = None


def fake_timer(failing=None):
    """A stand-in for fl_time_variants: every variant 10 us more than the one
    before, its check as the variant says; `failing` fails the call once."""
    calls = []

    def timer(env, case, variants):
        calls.append([v.name for v in variants])
        if failing is not None and any(v.name == failing for v in variants):
            next(v for v in variants if v.name == failing).failure = ("ERROR", "raised")
            return 1, []
        out = []
        for i, v in enumerate(variants):
            t = compare.FlTiming()
            t.us.median, t.gbs, t.pct_of_ceiling = 10.0 * (i + 1), 100.0 / (i + 1), 50.0 / (i + 1)
            t.check_ok = 1 if v.right else 0
            t.hidden_work = 1 if v.name == "hidden" else 0
            v.result = (v.right, 1e-7 if v.right else math.nan,
                        "ok" if v.right else "y: 3 of 4 elements wrong")
            out.append(t)
        return 0, out
    return timer, calls


class Rows(unittest.TestCase):
    def case(self, variants):
        c = compare.Case("softmax", {"rows": 4, "cols": 8}, "4x8", 256.0, 0.0, None, {})
        c.variants = variants
        return c

    def test_rows_from_a_made_up_timing(self):
        vs = [FakeVariant("solution", "solution"), FakeVariant("student", "student", right=False),
              FakeVariant("triton", "triton", raises=RuntimeError("no Triton kernel\nmore")),
              FakeVariant("course unfused", "course", rc=1), FakeVariant("hidden", "torch eager")]
        timer, calls = fake_timer()
        rows = compare.time_case(FakeEnv, self.case(vs), timer)
        self.assertEqual(calls, [["solution", "student", "hidden"]], "only what ran is timed")
        by = {r.variant: r for r in rows}
        self.assertEqual([r.variant for r in rows], [v.name for v in vs], "the variants' order")
        self.assertEqual((by["solution"].check, by["solution"].median_us, by["solution"].gbs),
                         ("ok", 10.0, 100.0))
        self.assertEqual(by["solution"].pct_of_ceiling, 50.0)
        self.assertIsNone(by["solution"].tflops, "no FLOPs declared: no TFLOP/s")
        self.assertEqual(by["student"].check, "WRONG")
        self.assertIn("3 of 4 elements wrong", by["student"].note)
        self.assertEqual((by["triton"].check, by["triton"].note),
                         ("n/a", "RuntimeError: no Triton kernel"))
        self.assertEqual(by["course unfused"].check, "ERROR")
        self.assertIn("returned", by["course unfused"].note)
        self.assertIn("charged the wall clock", by["hidden"].note)

    def test_an_optional_launcher_that_is_not_for_this_gpu_reads_n_a(self):
        # cudaErrorNotSupported is 801; FakeEnv has no library to name it
        tc = FakeVariant("solution tensor cores", "solution", rc=801)
        tc.optional = True
        other = FakeVariant("solution", "solution", rc=801)  # not optional: an error
        timer, calls = fake_timer()
        rows = compare.time_case(FakeEnv, self.case([tc, other]), timer)
        self.assertEqual([(r.check, r.note) for r in rows],
                         [("n/a", "not on this GPU (returned cudaErrorNotSupported)"),
                          ("ERROR", "returned CUDA error 801")])

    def test_a_variant_that_fails_during_the_timing_is_left_out_and_the_rest_timed_again(self):
        vs = [FakeVariant("solution", "solution"), FakeVariant("torch eager", "torch eager")]
        timer, calls = fake_timer(failing="torch eager")
        rows = compare.time_case(FakeEnv, self.case(vs), timer)
        self.assertEqual(calls, [["solution", "torch eager"], ["solution"]])
        self.assertEqual([r.check for r in rows], ["ok", "ERROR"])


class StudentTrialRun(unittest.TestCase):
    def test_errors_crashes_and_what_was_not_reached(self):
        failures = {("softmax 4x8", "student"): ("ERROR", "returned cudaErrorInvalidValue")}
        done = {("softmax 4x8", "student"), ("softmax 4x16", "student")}
        stopped = (("softmax 4x32", "student"), "crashed (an illegal memory access)")
        f = compare.student_failure
        self.assertEqual(f(("softmax 4x8", "student"), failures, done, stopped)[1],
                         "returned cudaErrorInvalidValue")
        self.assertIsNone(f(("softmax 4x16", "student"), failures, done, stopped))
        self.assertEqual(f(("softmax 4x32", "student"), failures, done, stopped),
                         ("ERROR", "crashed (an illegal memory access)"))
        self.assertIn("stopped before it (at softmax 4x32",
                      f(("softmax 4x64", "student"), failures, done, stopped)[1])
        self.assertIsNone(f(("softmax 4x64", "student"), {}, done, None), "no crash: all ran")

    def test_an_optional_launcher_not_for_this_gpu_stays_n_a(self):
        na = "not on this GPU (returned cudaErrorNotSupported)"
        lines = [{"case": "a", "variant": "student wgmma", "status": "start"},
                 {"case": "a", "variant": "student wgmma", "status": "n/a", "message": na},
                 {"case": "a", "variant": "student", "status": "start"},
                 {"case": "a", "variant": "student", "status": "ERROR", "message": "returned x"},
                 {"case": "b", "variant": "student", "status": "start"}]
        failures, done, running = compare.read_probe("\n".join(json.dumps(l) for l in lines))
        self.assertEqual(failures[("a", "student wgmma")], ("n/a", na))
        self.assertEqual(failures[("a", "student")], ("ERROR", "returned x"))
        self.assertEqual(done, {("a", "student wgmma"), ("a", "student")})
        self.assertEqual(running, ("b", "student"))


class Prototypes(unittest.TestCase):
    CTYPES = {"size_t": ctypes.c_size_t, "int": ctypes.c_int, "float": ctypes.c_float,
              "double": ctypes.c_double, "cudaError_t": ctypes.c_int, "cudaStream_t": ctypes.c_void_p,
              "attn_dtype": ctypes.c_int}

    def c_type(self, decl):
        decl = re.sub(r"\bconst\b", "", decl).strip()
        if "*" in decl:
            return ctypes.c_void_p
        return self.CTYPES[decl.rsplit(None, 1)[0] if " " in decl else decl]

    def test_every_declared_function_matches_its_header(self):
        protos = {}
        for lesson in os.listdir(os.path.join(ROOT, "lessons")):
            folder = os.path.join(ROOT, "lessons", lesson)
            for h in os.listdir(folder):
                if h.endswith(".h"):
                    with open(os.path.join(folder, h)) as f:
                        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
                    for m in re.finditer(r"EXTERN_C\s+(\w+)\s+(\w+)\s*\(([^)]*)\)", text):
                        protos[m.group(2)] = (m.group(1), m.group(3))
        for name, (result, args) in compare.C_API.items():
            self.assertIn(name, protos, f"{name} is in no lesson header")
            c_result, c_args = protos[name]
            params = [a for a in c_args.split(",") if a.strip() not in ("", "void")]
            self.assertEqual(len(params), len(args), f"{name}: {len(params)} parameters in C")
            self.assertIs(self.c_type(c_result), result, f"{name}'s result")
            for i, (p, a) in enumerate(zip(params, args)):
                self.assertIs(self.c_type(p), a, f"{name}, parameter {i + 1} ({p.strip()})")


class CommandLine(unittest.TestCase):
    def main(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = compare.main(list(argv))
        return rc, out.getvalue(), err.getvalue()

    def test_lessons_by_number(self):
        self.assertEqual(compare.resolve_lesson("2"), "02-fused-softmax")
        self.assertEqual(compare.resolve_lesson("05"), "05-flash-attention")
        self.assertEqual(compare.resolve_lesson("03-layernorm"), "03-layernorm")
        self.assertIsNone(compare.resolve_lesson("9"))

    def test_an_unknown_lesson_is_an_error(self):
        rc, out, err = self.main("--lesson", "99")
        self.assertEqual(rc, 2)
        self.assertIn("no lesson '99'", err)

    def test_lesson_04_is_skipped_with_a_reason(self):
        rc, out, _ = self.main("--lesson", "04")
        self.assertEqual(rc, 0)
        self.assertEqual(out.count("\n"), 1)
        self.assertIn("04-memory-traffic is skipped", out)
        self.assertIn("no fused operation to compare", out)
        self.assertEqual(self.main("--lesson", "04", "--env-check", "--skip-code", "3")[0], 3)

    def test_every_lesson_folder_is_compared_or_says_why_not(self):
        folders = {d for d in os.listdir(os.path.join(ROOT, "lessons")) if d[:2].isdigit()}
        self.assertEqual(folders, set(compare.LESSONS) | set(compare.NOT_COMPARED))

    def test_without_pytorch_one_line_and_the_skip_code(self):
        """(tests/compare.sh checks the same through ./lab, with a stand-in
        torch that cannot be imported)"""
        stub = os.path.join(HERE, "compare_stubs", "no-torch")
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "compare.py"),
                            "--lesson", "02", "--skip-code", "77"],
                           env=dict(os.environ, PYTHONPATH=stub), capture_output=True, text=True)
        self.assertEqual(p.returncode, 77, p.stderr)
        self.assertEqual(p.stdout.count("\n"), 1, p.stdout)
        self.assertIn("PyTorch was not found", p.stdout)
        self.assertIn("pip install torch", p.stdout)


# ============================================================================
# the ABI guard against the built libraries (--lib)
# ============================================================================

def load_or_skip(test, path):
    try:
        return compare.load_library(path)
    except OSError as e:
        test.skipTest(f"{os.path.basename(path)} cannot be loaded here ({e}): the ABI check "
                      f"needs the library and its CUDA runtime (libcudart), not a GPU")


class Abi(unittest.TestCase):
    def setUp(self):
        if not LIBS:
            self.skipTest("no --lib given (ctest compare/abi gives the built libraries)")

    def test_the_declarations_match_every_library(self):
        for path in LIBS:
            lib = load_or_skip(self, path)
            self.assertEqual(compare.abi_mismatches(lib), [], path)

    def test_a_drifted_declaration_is_refused(self):
        lib_path = LIBS[0]
        load_or_skip(self, lib_path)
        saved = compare.ABI["fl_timing_opts"]

        class Shorter(ctypes.Structure):  # the last member left out, as if timing.h had grown it
            _fields_ = compare.FlTimingOpts._fields_[:-1]

        class Swapped(ctypes.Structure):  # two members in the wrong order
            f = compare.FlTimingOpts._fields_
            _fields_ = [f[1], f[0]] + f[2:]

        class Unknown(ctypes.Structure):  # a member timing.h does not have
            _fields_ = compare.FlTimingOpts._fields_ + [("repeat", ctypes.c_int)]
        try:
            last = compare.FlTimingOpts._fields_[-1][0]
            for struct, want in ((Shorter, f"fl_timing_opts.{last}: in C (compare_abi.c), not "
                                           "declared here"),
                                 (Swapped, "fl_timing_opts.samples is at offset 4 in C, 0 here"),
                                 (Unknown, "fl_timing_opts.repeat: declared here, unknown")):
                compare.ABI["fl_timing_opts"] = (struct, saved[1])
                problems = compare.abi_mismatches(ctypes.CDLL(os.path.abspath(lib_path)))
                self.assertTrue(any(want in p for p in problems), (struct.__name__, problems))
                with self.assertRaises(compare.AbiError):
                    compare.load_library(lib_path)
        finally:
            compare.ABI["fl_timing_opts"] = saved

    def test_the_facts_come_from_the_headers(self):
        lib = load_or_skip(self, LIBS[0])
        fact = compare.Facts(lib)
        self.assertEqual(fact("softmax_fused_bytes", 4096, 4096), 2 * 4 * 4096 * 4096)
        self.assertEqual(fact("attention_flops", 32, 4096, 64, 0), 4.0 * 32 * 4096 * 4096 * 64)
        self.assertEqual(fact("attention_flops", 32, 4096, 64, 1), 2.0 * 32 * 4096 * 4097 * 64)
        self.assertEqual(fact("layernorm_bwd_scratch_floats", 768), 2 * 1024 * 768)
        self.assertAlmostEqual(fact("LAYERNORM_EPS"), 1e-5, places=10)
        self.assertEqual(fact("L02_RTOL"), 1e-5)
        with self.assertRaises(KeyError):
            fact("no_such_fact")

    def test_each_library_has_its_lessons_launchers(self):
        wanted = {"01": ["vector_add", "fused_elementwise", "unfused_elementwise"],
                  "02": ["softmax_fused", "softmax_unfused"],
                  "03": ["layernorm_fwd_fused", "layernorm_bwd_fused_atomic", "layernorm_bwd_unfused"],
                  "05": ["attention_fused_f16", "attention_unfused_workspace_bytes"]}
        for path in LIBS:
            num = re.search(r"compare_(\d\d)_", os.path.basename(path)).group(1)
            lib = load_or_skip(self, path)
            for name in wanted[num] + ["fl_time_variants", "fl_copy_bandwidth_gbs",
                                       "fl_copy_bandwidth_at", "fl_copy_ceiling_for",
                                       "cudaGetErrorName"]:
                self.assertTrue(hasattr(lib, name), f"{path} lacks {name}")
            self.assertEqual(lib.cudaGetErrorName(1), b"cudaErrorInvalidValue")


# ============================================================================
# a dry run of every lesson on the CPU (PyTorch and Triton, no C kernel)
# ============================================================================

def lib_of(lesson):
    for path in LIBS:
        if f"compare_{lesson[:2]}_" in os.path.basename(path):
            return path
    return None


class DryRun(unittest.TestCase):
    """Every lesson's cases at tiny shapes on the CPU: PyTorch's variants, and
    Triton's through its interpreter, timed by a stand-in that runs them and
    checks them against the float64 reference. They must all be right, and
    the poisoning must be what the check sees when a run writes nothing."""

    def setUp(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("PyTorch is not installed (the dry run needs it, not a GPU)")
        if os.environ.get("TRITON_INTERPRET") != "1":
            self.skipTest("run with TRITON_INTERPRET=1 (Triton's kernels on the CPU)")

    def env(self, lesson):
        import torch
        path = lib_of(lesson)
        if path is None:
            self.skipTest(f"no --lib for lesson {lesson[:2]} (its facts come from it)")
        lib = load_or_skip(self, path)
        triton, missing = compare.load_triton()
        return compare.Env(torch, torch.device("cpu"), facts=compare.Facts(lib), triton=triton,
                           triton_missing=missing, size="tiny")

    def timer(self, env, case, variants):
        out = []
        for v in variants:
            rc = v.prepare(0) or v.run(0)
            self.assertEqual(rc, 0, v.name)
            v.result = compare.check_variant(env, case, v)
            t = compare.FlTiming()
            t.us.median, t.check_ok = 1.0, 1 if v.result[0] else 0
            out.append(t)
        return 0, out

    def run_lesson(self, lesson):
        env = self.env(lesson)
        rows = []
        for case in compare.LESSONS[lesson].cases(env):
            rows += compare.time_case(env, case, self.timer)
            # a run that writes nothing leaves the poison: the check must fail
            for v in case.variants:
                if isinstance(v, compare.TorchVariant) and v.failure is None:
                    v.prepare(0)
                    v.last = {k: env.nan_like(t) for k, t in case.want().items()}
                    self.assertFalse(compare.check_variant(env, case, v)[0], v.name)
                    break
        return rows

    def assert_right(self, rows, allowed_na=()):
        self.assertTrue(rows)
        for r in rows:
            if r.check == "n/a" and r.variant in allowed_na:
                continue
            self.assertEqual(r.check, "ok", f"{r.op} {r.label} {r.variant}: {r.note}")
            self.assertLess(r.max_err, 1e-2, f"{r.op} {r.label} {r.variant}")

    def test_01(self):
        rows = self.run_lesson("01-vector-add")
        self.assert_right(rows)
        self.assertEqual({r.variant for r in rows}, {"torch eager", "triton"})

    def test_02(self):
        rows = self.run_lesson("02-fused-softmax")
        self.assert_right(rows)
        self.assertEqual({r.label for r in rows}, {"8x300", "2x40001"})

    def test_03(self):
        rows = self.run_lesson("03-layernorm")
        self.assert_right(rows)
        self.assertEqual({(r.op, r.variant) for r in rows}, {
            ("layernorm_fwd", "torch eager"), ("layernorm_fwd", "F.layer_norm"),
            ("layernorm_fwd", "triton"), ("layernorm_bwd", "torch eager"),
            ("layernorm_bwd", "F.layer_norm autograd")})

    def test_05(self):
        rows = self.run_lesson("05-flash-attention")
        # (the efficient and cuDNN backends are CUDA-only)
        self.assert_right(rows, allowed_na=("sdpa flash", "sdpa efficient", "sdpa cudnn"))
        self.assertIn("torch eager", {r.variant for r in rows if r.check == "ok"})


# ============================================================================

def main():
    args = sys.argv[1:]
    if args[:1] == ["--fake-csv"]:
        lesson, out, device = args[1:4]
        with open(out, "w", newline="") as f:
            compare.write_csv(f, fake_rows(lesson), device, "2026-11-25")
        return 0
    rest = []
    while args:
        a = args.pop(0)
        if a == "--lib":
            LIBS.append(args.pop(0))
        else:
            rest.append(a)
    prog = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2)
    r = prog.result
    if not r.wasSuccessful():
        return 1
    if r.testsRun and len(r.skipped) == r.testsRun:
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""scripts/figures_report.py on recorded raw results (tests/figures/raw/: a
quick run of scripts/figures.sh on the development VM, serve_bench with 3
repetitions, cuda_bench on the fake driver for its layout only; device_bench
and export_bench left out on purpose), so the producer of docs/figures.md
cannot rot unnoticed. Standard library only; ctest runs it as figures_report."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
REPORT = os.path.join(REPO, "scripts", "figures_report.py")
RAW = os.path.join(HERE, "raw")
sys.path.insert(0, os.path.join(REPO, "scripts"))

import figures_report  # noqa: E402
import figures_sections  # noqa: E402


def render(out_dir, *extra):
    out = os.path.join(out_dir, "figures.md")
    proc = subprocess.run([sys.executable, REPORT, "render", "--raw", RAW, "--out", out, *extra],
                          capture_output=True, text=True)
    with open(out, encoding="utf-8") as f:
        return proc, f.read()


class RenderedFigures(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="hetrt-figures-test-")
        cls.proc, cls.doc = render(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def assertLine(self, fragment):
        self.assertIn(fragment, self.doc)

    def test_ratios_divide_results_of_the_same_run(self):
        # graph_bench's interleaved counters, not two separate benchmarks
        self.assertLine("| chain200 per run, executor / direct-call floor (same loop of prepared calls, interleaved) "
                        "| 1.16 us / 1.18 us = **0.976x** |")
        self.assertLine("| chain200, executor / floor as two separate benchmarks (not interleaved) "
                        "| 1.13 us / 1.16 us = 0.974x |")
        self.assertLine("| resnet18, 1 thread / 2 threads (ratio 2 / 1) | 106 ms / 60.5 ms (0.568x) |")
        # python_bench's two loops of one process
        self.assertLine("| 1.40 us vs 1.16 us: +237 ns per run (1.20x) |")
        # async_bench: the slower branch alone is the max of the two, from the same run
        self.assertLine("- two-branch model, default threads: asynchronous / slower branch alone "
                        "= 5.03 ms / 3.47 ms = **1.45x**")
        self.assertLine("- two-branch model, 1 CPU thread + 1 PoCL thread: asynchronous / slower branch alone "
                        "= 3.40 ms / 3.36 ms = **1.01x**")
        # serve_bench_pinned_devices(_batch): 2 instances against 1 (and 2 executors against 1) of one run each
        self.assertLine("| two-stage model (CPU stage, then OpenCL stage), default scheduling "
                        "| 351/s vs 257/s (1.37x) | 320/s vs 244/s (1.31x) |")
        self.assertLine("| two-stage model, SCHED_BATCH (`chrt -b 0`) | 474/s vs 264/s (1.80x) | 385/s vs 251/s (1.53x) |")
        self.assertLine("- `hetero_opencl_seed` asynchronous / the device round trip alone (means): "
                        "38.1 us / 23.4 us = 1.63x")
        self.assertLine("| cnn | 1.30 ms | 1.37 ms (1.05x) | 4.95 ms (3.81x) | 1.49e-08 |")
        # serve_load.py: hetrt against the floor server of the same h2load run
        self.assertLine("| `mlp` | grpc, 16 | 0.721x | +18.2 us | +191.0 us |")
        self.assertLine("| `large_relu` (6 MiB) | rest-binary, 4 | 1.42x | -2923.7 us | -7490.0 us |")
        # --rounds 3: each cell the median of the rounds, each ratio from its own round's pair
        self.assertLine("| `small_relu` | grpc, 16 | 0.976x (0.900x to 1.13x) | +2.0 us (-1.4 us to +4.9 us) "
                        "| +14.0 us (-45.0 us to +41.0 us) |")

    def test_repetitions_are_reported_by_their_median(self):
        # serve_bench.json holds mean/median/stddev/cv aggregates; the mean p50 would read 57.7 us
        self.assertLine("| `mlp`, 1 instance, concurrency 1, p50 / p99 | 4.51 us / 5.94 us "
                        "| 56.7 us / 138 us (**+52.2 us** at p50) |")
        self.assertIn("Serve/mlp/Grpc/threads:1 (median of 3)", self.doc)

    def test_cuda_copies_are_paired_with_cumemcpy_of_the_same_run(self):
        self.assertLine("| host -> device (pinned), 4 KiB | 21.0 GB/s vs 39.6 GB/s (0.531x) |")
        self.assertLine("| MlpCuda | 953 ns / 1.03 us (0.922x) |")

    def test_micro_figures_come_from_the_table_and_the_pipe_run(self):
        self.assertLine("Cortex-M4F (mps2-an386): mlp_aot 10.1x, mlp_graph 11.7x")
        self.assertLine("graph 89005 (parses the graph JSON) vs AOT 1824")
        self.assertLine("mean 70.4 us, median 69.5 us; the device's clock: 51 us")
        self.assertNotIn("/tmp/", self.doc.split("output of the pipe run")[0])  # paths of one run stay out

    def test_llm_serving_reads_the_server_and_its_loopback_floors(self):
        self.assertLine("| server's own CPU per token (target < 15 us) | **29.0 us** |")
        # token_stream_floor's rows, flat out and behind a step (/real_time is not part of their key).
        self.assertLine("| floor: one event on loopback to a client thread asleep in recv, 4 connections, flat out "
                        "| 3.44 us |")
        self.assertLine("| floor: the same after a step (4 connections: batch 4) | 31.3 us |")
        self.assertLine("| floor: the same after a step, 16 connections (batch 16) | 15.1 us |")

    def test_every_section_names_its_commands_and_the_machine(self):
        self.assertLine("| CPU | AMD EPYC, 2 cores available to the benchmarks (2 online) |")
        self.assertLine("**Mode: recorded for tests/figures (not a figure)**")
        self.assertLine("```sh\nbuild/bin/async_bench --benchmark_min_time=0.05")
        self.assertLine("TVM_RUNTIME is unset: no TVM comparison in this run.")
        for anchor in ("cpu", "async", "devices", "demo", "export", "micro", "serving", "serving-floor", "cuda", "tvm"):
            self.assertIn('<a id="%s"></a>' % anchor, self.doc)

    def test_a_figure_that_could_not_be_measured_fails_the_run_and_is_named(self):
        self.assertEqual(self.proc.returncode, 1, self.proc.stderr)
        self.assertIn("figures: devices: not measured: no output from device_bench", self.proc.stderr)
        self.assertIn("figures: export: not measured: no output from export_bench", self.proc.stderr)
        self.assertIn("serve_bench: no result Serve/mlp/RestBinary/threads:1", self.proc.stderr)
        self.assertNotIn("cuda", self.proc.stderr)  # the recorded cuda_bench has every figure
        self.assertIn("not measured (serve_bench: no result", self.doc)
        proc, _ = render(self.tmp, "--allow-missing")
        self.assertEqual(proc.returncode, 0, proc.stderr)


class GeneratedBlocks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="hetrt-figures-blocks-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_blocks_are_rewritten_and_the_text_around_them_kept(self):
        page = os.path.join(self.tmp, "README.md")
        with open(page, "w", encoding="utf-8") as f:
            f.write("intro 1.5 us\n<!-- figures:source -->\nold\n<!-- /figures:source -->\nmiddle\n"
                    "<!-- figures:cpu (generated) -->\n| stale |\n<!-- /figures:cpu -->\n"
                    "<!-- figures:micro page -->\n<!-- /figures:micro -->\nend\n")
        proc, _ = render(self.tmp, "--allow-missing", "--update", page)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        self.assertTrue(text.startswith("intro 1.5 us\n<!-- figures:source -->\nMeasured by `scripts/figures.sh` on "
                                        "AMD EPYC, 2 cores, 2026-11-25 15:12 UTC"), text)
        self.assertIn("\nmiddle\n<!-- figures:cpu (generated) -->\n| what | figure |", text)
        self.assertNotIn("| stale |", text)
        self.assertIn("= **0.976x** |", text)
        self.assertNotIn("two separate benchmarks", text)  # the docs/figures.md-only row
        self.assertIn("| mlp_graph | mps2-an385 |", text)  # the page form keeps every board
        self.assertTrue(text.endswith("<!-- /figures:micro -->\nend\n"))

    def test_an_unknown_block_is_an_error(self):
        page = os.path.join(self.tmp, "page.md")
        with open(page, "w", encoding="utf-8") as f:
            f.write("<!-- figures:nonsense -->\n<!-- /figures:nonsense -->\n")
        proc, _ = render(self.tmp, "--allow-missing", "--update", page)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("unknown figures block 'nonsense'", proc.stderr)


class TheRepositorysPages(unittest.TestCase):
    """README.md and docs/*.md quote docs/figures.md through known blocks."""

    def pages(self):
        docs = os.path.join(REPO, "docs")
        return [os.path.join(REPO, "README.md")] + [os.path.join(docs, n) for n in sorted(os.listdir(docs))
                                                    if n.endswith(".md")]

    def test_every_block_names_a_section(self):
        sections = {s.key for s in (make(figures_report.RawFolder(RAW)) for make in figures_sections.ALL)}
        for page in self.pages():
            with open(page, encoding="utf-8") as f:
                for key in re.findall(r"<!-- figures:(\w+)", f.read()):
                    self.assertIn(key, sections | {"source"}, page)

    def test_readme_quotes_the_run_docs_figures_md_records(self):
        with open(os.path.join(REPO, "docs", "figures.md"), encoding="utf-8") as f:
            date = re.search(r"^\| date \| (.+) \|$", f.read(), re.M).group(1)
        with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
            source = re.search(r"<!-- figures:source[^>]*-->\n(.*?)<!-- /figures:source -->", f.read(), re.S)
        self.assertIsNotNone(source)
        self.assertIn(date, source.group(1))


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""Each figure of docs/figures.md: which raw result it reads and how it is
shown. Every ratio divides two results of one run of one binary."""
import re

from figures_doc import Section
from figures_gbench import Missing, fmt_bytes, fmt_gbs, fmt_rate, fmt_ratio, fmt_s, fmt_us, sig


def _bench_or_none(section, raw, name):
    """The binary's results, its command and raw table recorded; None when it
    did not run (the reason recorded as missing)."""
    section.command(raw.command(name))
    try:
        bench = raw.bench(name)
    except Missing as e:
        section.note_missing(str(e))
        section.text("`%s`: %s" % (name, e), where=("doc", "readme"))
        return None
    section.raw_bench(bench)
    return bench


class _Absent:
    """Stands in for a binary that did not run: every lookup is Missing."""

    def __init__(self, name):
        self.name = name

    def get(self, key):
        raise Missing("%s did not run" % self.name)


def _load(section, raw, name):
    return _bench_or_none(section, raw, name) or _Absent(name)


def _ratio_to_floor(result, measured):
    """A measured call / its direct-call floor = their ratio, from the counters
    of a benchmark that times the two interleaved (bench/interleaved.h)."""
    return "%s / %s = **%s**" % (fmt_us(result.counter(measured)), fmt_us(result.counter("floor_us")),
                                 fmt_ratio(result.counter("ratio")))


def cpu(raw):
    s = Section("cpu", "CPU: graph executor, thread pool, Python (`graph_bench`, `launch_bench`, `python_bench.py`)")
    g = _load(s, raw, "graph_bench")
    launch = _load(s, raw, "launch_bench")
    py = _load(s, raw, "python_bench")

    def chain_ratio():
        return _ratio_to_floor(g.get("BM_Chain200_RatioToFloor"), "executor_us")

    def chain_separate():
        e, f = g.get("BM_Chain200_Executor").real_s, g.get("BM_Chain200_DirectCallFloor").real_s
        return "%s / %s = %s" % (fmt_s(e), fmt_s(f), fmt_ratio(e / f))

    def resnet_threads():
        one, two = g.get("BM_Resnet18/threads:1").real_s, g.get("BM_Resnet18/threads:2").real_s
        return "%s / %s (%s)" % (fmt_s(one), fmt_s(two), fmt_ratio(two / one))

    def launch_empty():
        r = launch.get("BM_ParallelLaunchEmpty/tasks:2")
        return "%s (%d pool threads took part)" % (fmt_s(r.real_s), r.counter("threads_used"))

    def python_run():
        p, c = py.get("Python/chain200/run_from_python").real_s, py.get("Python/chain200/run_from_cpp").real_s
        return "%s vs %s: +%s per run (%s)" % (fmt_s(p), fmt_s(c), fmt_s(p - c), fmt_ratio(p / c))

    def python_add3():
        p, c = (py.get("Python/add3/run_with_three_inputs_from_python").real_s,
                py.get("Python/add3/run_from_cpp").real_s)
        return "%s (the run alone, looped in C++: %s)" % (fmt_s(p), fmt_s(c))

    s.table(["what", "figure"], [
        ["chain200 per run, executor / direct-call floor (same loop of prepared calls, interleaved)", chain_ratio],
        ["resnet18, 1 thread / 2 threads (ratio 2 / 1)", resnet_threads],
        ["resnet18 deploy.so load + executor create", lambda: fmt_s(g.get("BM_Resnet18_LoadAndCreate").real_s)],
        ["peak RSS of `hetrt run resnet18/deploy.so`",
         lambda: sig(g.get("BM_Resnet18_HetrtRunPeakMemory").counter("peak_rss_MB")) + " MB"],
        ["empty 2-task `TVMBackendParallelLaunch` (the CPU plugin's pool)", launch_empty],
    ])
    s.table(["what", "figure"], [
        ["chain200, executor / floor as two separate benchmarks (not interleaved)", chain_separate],
    ], where=("doc",))
    s.table(["Python (`hetrt` package)", "figure"], [
        ["chain200: `m.run()` from a Python loop vs the same runs looped in C++ (`m.benchmark`)", python_run],
        ["add3: `m.run(a=, b=, c=)` with aligned arrays (rebinds three inputs, runs)", python_add3],
    ])
    return s


def relax(raw):
    s = Section("relax", "Relax VM: dispatch against the direct-call floor (`relax_bench`)")
    r = _load(s, raw, "relax_bench")

    def mlp_ratio(replayed):
        return lambda: _ratio_to_floor(r.get("BM_RelaxMlp_RatioToFloor/%d" % replayed), "vm_us")

    def builtins_only(replayed):
        def figure():
            b = r.get("BM_RelaxBuiltinsOnly/%d" % replayed)
            return "%s per call, %s ns per instruction" % (fmt_s(b.real_s),
                                                           sig(b.counter("ns_per_instruction") * 1e9))
        return figure

    def varying():
        b = r.get("BM_RelaxDynBatch_VaryingRows")
        return "%d after warm-up (%s per call)" % (b.counter("plugin_allocations_after_warmup"), fmt_s(b.real_s))

    s.table(["what", "figure"], [
        ["`relax_mlp` per call, VM / its kernels called directly in order on preallocated buffers (interleaved)",
         mlp_ratio(0)],
        ["the same, the call replayed (`EnableReplay`)", mlp_ratio(1)],
        ["the VM alone: 10 builtin instructions (checks, 2 storages, 2 tensors, 2 kills, a tuple)", builtins_only(0)],
        ["the same, replayed (the signature matched, nothing held: no kernel to call)", builtins_only(1)],
        ["`relax_dyn_batch`, batch 1/7/64/16/3 in turn: allocations from the plugin", varying],
    ])
    return s


def llm(raw):
    s = Section("llm", "Language models: tiny_llama's decode step against its kernels, tokens per second, loading (`llm_bench`)")
    r = _load(s, raw, "llm_bench")

    def step(batch):
        def cell():
            b = r.get("BM_DecodeStepVsKernels/%d" % batch)
            return "%s step, %s kernels, **%s** runtime (%d kernel calls), %s tokens/s" % (
                fmt_us(b.counter("step_us")), fmt_us(b.counter("kernels_us")),
                fmt_us(b.counter("runtime_us")), b.counter("kernel_calls"),
                sig(b.counter("tokens_per_s")))
        return cell

    def engine(batch):
        def cell():
            b = r.get("BM_EngineDecode/%d" % batch)
            return "%s per step, %s tokens/s" % (fmt_s(b.real_s), sig(b.counter("tokens_per_s")))
        return cell

    def load():
        b = r.get("BM_LoadTensorCache/128")
        return "%s ms for 128 MiB, peak RSS growth **%sx** the weights" % (
            sig(b.counter("load_ms")), sig(b.counter("peak_rss_growth_over_weights")))

    s.table(["what", "figure"], [
        ["decode step, batch 1: begin_forward, embed, decode, end_forward (+ popn) / the same kernels called "
         "directly on the same memory (interleaved); runtime = the difference", step(1)],
        ["decode step, batch 2", step(2)],
        ["decode step, batch 4 (the library's compiled maximum)", step(4)],
        ["engine step (scheduler + greedy sampling), batch 1", engine(1)],
        ["engine step, batch 2", engine(2)],
        ["engine step, batch 4", engine(4)],
        ["loading weights onto the CPU (memory-mapped tensor cache, a child process)", load],
    ])
    return s


def llm_serving(raw):
    s = Section("llm-serving", "Serving a language model (`llm_serve_load.py`: streams against the engine in "
                "process; `token_stream_floor`)")
    s.text("`hetrt serve` with tiny_llama (batch 4, the library's maximum) under 32 concurrent streaming requests "
           "(prompts of 8..64 tokens, 32 generated each, greedy) against the engine generating the same mix in one "
           "process (`hetrt.llm.Engine.generate_batch`, kept warm), rounds interleaved, medians. The server's own CPU "
           "per token: its process's CPU over the loaded window, per thread from /proc (ns), less the engine's (the "
           "CPU plugin's workers and the scheduler's time inside steps); beside it, the floor one token's event "
           "costs on a loopback socket with a client thread asleep in recv (`token_stream_floor`): sent flat out, "
           "and sent after a 1 ms step that streamed 8 MiB through the caches, as the server's events follow a "
           "model step (the fair floor: on this machine the send itself costs that much more behind a step).")
    s.command(raw.command("llm_serve_load"))
    floor = _load(s, raw, "token_stream_floor")
    if floor is not None:
        s.command(raw.command("token_stream_floor"))
    try:
        data = raw.data("llm_serve_load")
        median = data["median"]
    except (Missing, KeyError, TypeError) as e:
        s.note_missing("llm_serve_load: %s" % e)
        median = None

    def m(key, fmt):
        def cell():
            if median is None:
                raise Missing("llm_serve_load did not run")
            return fmt(median[key])
        return cell

    def event_floor(connections, step_us):
        def cell():
            b = floor.get("BM_SseEventOnLoopback/connections:%d/thread_each:1/step_us:%d"
                          % (connections, step_us))
            return fmt_us(b.counter("sender_cpu_us_per_event"))
        return cell

    s.table(["what", "figure"], [
        ["engine in process, tokens/s", m("engine_tokens_per_s", sig)],
        ["`hetrt serve`, tokens/s over the 32 streams", m("server_tokens_per_s", sig)],
        ["server / engine (target >= 0.9)", m("throughput_ratio", lambda v: "**%s**" % fmt_ratio(v))],
        ["time to first token p50 / p99 (ms)", lambda: "%s / %s" % (m("ttft_p50_ms", sig)(), m("ttft_p99_ms", sig)())],
        ["unloaded time to first token (ms)", m("unloaded_ttft_ms", sig)],
        ["p99 TTFT / unloaded (target < 10; batch 4 queues 28 requests behind 4)", m("ttft_p99_ratio", fmt_ratio)],
        ["server's mean queue time (ms, /metrics)", m("server_queue_mean_ms", sig)],
        ["server's own CPU per token (target < 15 us)", m("server_own_us_per_token", lambda v: "**%s**" % fmt_us(v))],
        ["floor: one event on loopback to a client thread asleep in recv, 4 connections, flat out",
         event_floor(4, 0)],
        ["floor: the same after a step (4 connections: batch 4)", event_floor(4, 1000)],
        ["floor: the same after a step, 16 connections (batch 16)", event_floor(16, 1000)],
    ])
    return s


def _variants(result):
    """{variant: {mean, p50, p99, ratio}} from async_bench's counters."""
    out = {}
    for k, v in result.counters.items():
        m = re.match(r"(.+)_(mean_us|p50_us|p99_us|mean_ratio)$", k)
        if m:
            out.setdefault(m.group(1), {})[m.group(2)] = v
    return out


def _variant_table(section, title, result_of):
    def rows():
        r = result_of()
        return [[name, fmt_us(v["mean_us"]), fmt_us(v["p50_us"]), fmt_us(v["p99_us"]),
                 fmt_ratio(v["mean_ratio"]) if "mean_ratio" in v else "baseline"]
                for name, v in _variants(r).items()]
    try:
        section.table([title, "mean", "p50", "p99", "mean / baseline"], rows(), where=("doc",))
    except Missing as e:
        section.note_missing(str(e))


def asynchronous(raw):
    s = Section("async", "Asynchronous executor, CPU + OpenCL on PoCL (`async_bench`)")
    a = _load(s, raw, "async_bench")
    one = _load(s, raw, "async_bench_one_thread_each")

    def mean(bench, key, variant):
        return bench.get(key).counter(variant + "_mean_us")

    def copy(direction):
        key = "BM_Copy4KiB/%d" % direction
        return [lambda: fmt_us(mean(a, key, "sequential+staged")), lambda: "**%s**" % fmt_us(mean(a, key, "async")),
                lambda: fmt_ratio(a.get(key).counter("async_mean_ratio"))]

    def three(variant):
        r = a.get("BM_HeteroOpenClSeed")
        return " / ".join(fmt_us(r.counter(variant + suffix)).replace(" us", "") for suffix in
                          ("_mean_us", "_p50_us", "_p99_us")) + " us"

    def two_branch(bench):
        return [lambda: fmt_us(mean(bench, "BM_TwoBranch", "sequential")),
                lambda: fmt_us(mean(bench, "BM_TwoBranch", "async")),
                lambda: "**%s**" % fmt_ratio(bench.get("BM_TwoBranch").counter("async_mean_ratio"))]

    s.table(["what", "before: sequential (+ staged copies)", "asynchronous", "ratio (mean)"], [
        ["`__copy` of 4 KiB, host -> OpenCL, mean (baseline: sequential + staged)"] + copy(0),
        ["`__copy` of 4 KiB, OpenCL -> host, mean (baseline: sequential + staged)"] + copy(1),
        ["`hetero_opencl_seed` mean / p50 / p99 (baseline: sequential + staged)", lambda: three("sequential+staged"),
         lambda: "**%s**" % three("async"),
         lambda: fmt_ratio(a.get("BM_HeteroOpenClSeed").counter("async_mean_ratio"))],
        ["the device's own round trip (record an event, wait)", "", lambda: three("device_round_trip"), ""],
        ["two-branch model (CPU branch ‖ OpenCL branch), default threads (baseline: sequential)"] + two_branch(a),
        ["two-branch model, 1 CPU thread + 1 PoCL thread (second run)"] + two_branch(one),
    ])

    def seed_vs_round_trip():
        r = a.get("BM_HeteroOpenClSeed")
        run, trip = r.counter("async_mean_us"), r.counter("device_round_trip_mean_us")
        return ("`hetero_opencl_seed` asynchronous / the device round trip alone (means): %s / %s = %s"
                % (fmt_us(run), fmt_us(trip), fmt_ratio(run / trip)))

    def overlap(bench, label):
        def compute():
            r = bench.get("BM_TwoBranch")
            run = r.counter("async_mean_us")
            alone = max(r.counter("cpu_branch_alone_mean_us"), r.counter("opencl_branch_alone_mean_us"))
            return ("two-branch model, %s: asynchronous / slower branch alone = %s / %s = **%s**"
                    % (label, fmt_us(run), fmt_us(alone), fmt_ratio(run / alone)))
        return compute

    def wake_up():
        r = a.get("BM_HeteroOpenClSeedWaitPolicy")
        return ("this machine's thread wake-up latency, measured in the same run: median %s, p90 %s; the poll budget "
                "it gives a device wait (`hetrt/sdk/wake_up.h`): %d us"
                % (fmt_us(r.counter("wakeup_median_us")), fmt_us(r.counter("wakeup_p90_us")),
                   round(r.counter("auto_budget_us"))))

    s.line(seed_vs_round_trip)
    s.line(wake_up)
    s.line(overlap(a, "default threads"))
    s.line(overlap(one, "1 CPU thread + 1 PoCL thread"))
    _variant_table(s, "`BM_HeteroOpenClSeed` variant", lambda: a.get("BM_HeteroOpenClSeed"))
    _variant_table(s, "`BM_HeteroOpenClSeedWaitPolicy` variant (how the host waits; baseline: sequential)",
                   lambda: a.get("BM_HeteroOpenClSeedWaitPolicy"))
    for d, name in ((0, "host -> OpenCL"), (1, "OpenCL -> host")):
        _variant_table(s, "`BM_Copy4KiB` %s variant" % name, lambda d=d: a.get("BM_Copy4KiB/%d" % d))
    _variant_table(s, "`BM_TwoBranch` variant, default threads", lambda: a.get("BM_TwoBranch"))
    _variant_table(s, "`BM_TwoBranch` variant, 1 + 1 threads", lambda: one.get("BM_TwoBranch"))
    return s


_README_SIZES = (4 << 10, 256 << 10, 16 << 20, 256 << 20)


def _copy_sizes(bench):
    sizes = sorted({int(k.split("/")[1]) for k in getattr(bench, "results", {}) if k.startswith("BM_Memcpy/")})
    return sizes or list(_README_SIZES)


def _copy_table(section, d, rows, sizes, where):
    def cell(bench_name, size):
        def compute():
            r = d.get("%s/%d" % (bench_name, size))
            text = fmt_gbs(r.counter("bytes_per_second"))
            if bench_name == "BM_Memcpy":
                return text
            base = d.get("BM_Memcpy/%d" % size).counter("bytes_per_second")
            extra = [fmt_s(r.real_s)] if size <= (32 << 10) else []
            return "%s (%s)" % (text, ", ".join(extra + [fmt_ratio(r.counter("bytes_per_second") / base)]))
        return compute
    section.table(["copy (GB/s; time per copy; ratio to memcpy of the same run)"] + [fmt_bytes(n) for n in sizes],
                  [[label] + [cell(name, n) for n in sizes] for label, name in rows], where=where)


def devices(raw):
    s = Section("devices", "Device copies, Vulkan dispatch and models on lavapipe (`device_bench`)")
    d = _load(s, raw, "device_bench")
    opencl = [("memcpy (baseline)", "BM_Memcpy"), ("host -> OpenCL", "BM_OpenClHostToDevice"),
              ("OpenCL -> host", "BM_OpenClDeviceToHost")]
    vulkan = [("memcpy (baseline)", "BM_Memcpy"), ("host -> Vulkan, mapped", "BM_VulkanHostToDevice"),
              ("Vulkan -> host, mapped", "BM_VulkanDeviceToHost"),
              ("host -> Vulkan, staged (`direct_mapping=0`)", "BM_VulkanHostToDeviceStaged"),
              ("Vulkan -> host, staged", "BM_VulkanDeviceToHostStaged")]
    sizes = _copy_sizes(d)
    for rows in (opencl, vulkan):
        _copy_table(s, d, rows, _README_SIZES, ("readme",))
        _copy_table(s, d, rows, sizes, ("doc",))

    def two_branch():
        cpu_only, vk = d.get("BM_TwoBranchModel/0").real_s, d.get("BM_TwoBranchModel/1").real_s
        return "%s / %s (%s)" % (fmt_s(cpu_only), fmt_s(vk), fmt_ratio(vk / cpu_only))

    def dispatch(arg):
        return lambda: fmt_s(1.0 / d.get("BM_VulkanDispatch/%d" % arg).counter("items_per_second"))

    s.table(["Vulkan on lavapipe", "figure"], [
        ["two-branch model (16x256, four dense+relu per branch): all CPU / one branch on Vulkan (ratio Vulkan / CPU)",
         two_branch],
        ["relu dispatch over 4096 floats, 32 per batch, per dispatch", dispatch(0)],
        ["dense 16x256 by 256x256 dispatch, 32 per batch, per dispatch", dispatch(1)],
    ])
    for key, title in (("BM_TwoBranchVulkanPerNode", "two-branch model on CPU + Vulkan"),
                       ("BM_HeteroOpenClPerNode", "`hetero_opencl_seed` on CPU + OpenCL")):
        def rows(key=key):
            r = d.get(key)
            return [[k[:-3], fmt_us(v)] for k, v in r.counters.items() if k.endswith("_us")]
        try:
            s.table(["node@device, %s (device time per node, mean)" % title, "time"], rows(), where=("doc",))
        except Missing as e:
            s.note_missing(str(e))
    return s


def demo(raw):
    s = Section("demo", "`hetrt demo` (MLP and CNN from the graph builder, 20 runs per placement)")
    s.command(raw.command("demo"))
    try:
        text = raw.text("demo")
    except Missing as e:
        s.note_missing(str(e))
        s.text("`hetrt demo`: %s" % e, where=("doc", "readme"))
        return s
    models = {}
    model = None
    for line in text.splitlines():
        m = re.match(r"== (\w+)", line)
        if m:
            model = models.setdefault(m.group(1), {})
            continue
        m = re.match(r"\s+(all on cpu|cpu \+ \w+): ([\d.]+) ms per run", line)
        if m and model is not None:
            model[m.group(1)] = float(m.group(2)) * 1e-3
        m = re.match(r"\s+check against all-cpu: max \|diff\| = (\S+)", line)
        if m and model is not None:
            model["diff"] = max(model.get("diff", 0.0), float(m.group(1)))

    def placed(name, placement):
        def compute():
            t, base = models[name][placement], models[name]["all on cpu"]
            return "%s (%s)" % (fmt_s(t), fmt_ratio(t / base))
        return compute

    s.table(["model", "all on CPU", "CPU + OpenCL (ratio)", "CPU + Vulkan (ratio)", "largest difference to all-CPU"],
            [[name, lambda n=name: fmt_s(models[n]["all on cpu"]), placed(name, "cpu + opencl"),
              placed(name, "cpu + vulkan"), lambda n=name: "%.3g" % models[n]["diff"]] for name in sorted(models)]
            or [["(no model in the output)", "", "", "", ""]])
    if not models:
        s.note_missing("hetrt demo printed no model")
    s.raw("output of `hetrt demo`", ["```"] + text.rstrip().splitlines() + ["```"])
    return s


def export(raw):
    s = Section("export", "Export (`export_bench`)")
    e = _load(s, raw, "export_bench")

    def emit():
        r = e.get("BM_EmitDevcC/50")
        return "%s (%s)" % (fmt_s(r.real_s), fmt_gbs(r.counter("bytes_per_second")))

    s.table(["what", "figure"], [
        ["write the `devc.c` of a 50 MiB blob", emit],
        ["write + compile + link it with `cc -O2` (1 MiB blob / 50 MiB blob)",
         lambda: "%s / %s" % (fmt_s(e.get("BM_CompileDevcC/1").real_s), fmt_s(e.get("BM_CompileDevcC/50").real_s))],
    ])
    return s


def _micro_rows(text):
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0] and cells[0] not in ("model",) and not cells[0].startswith("-"):
            rows[(cells[0], cells[1])] = cells
    return rows


def _instructions(rows, model, board):
    cells = rows.get((model, board))
    if not cells or "/" not in cells[5]:
        raise Missing("no instruction count for %s on %s" % (model, board))
    init, run = (int(x) for x in cells[5].split("/"))
    return init, run


def micro(raw):
    s = Section("micro", "micro: Cortex-M boards on QEMU (`plugins/micro/figures.sh`) and a device program over a pipe")
    s.command(raw.command("micro_table"))
    s.command(raw.command("micro_pipe"))
    try:
        table = re.sub(r"/tmp/[\w./-]+", "<tmp>", raw.text("micro_table"))
        table = re.sub(r"[\w./-]*/(tvm-0\.18/)", r"$HETRT_FIXTURES/\1", table)
    except Missing as e:
        s.note_missing(str(e))
        s.text("`plugins/micro/figures.sh`: %s" % e, where=("doc", "readme"))
        table = ""
    head, _, tail = table.partition("\n\n")
    if head:
        s.text("Sizes in bytes; `.bss` includes the stack and the static arena. \"arena used\" is the peak the board "
               "reported; the budget is the MLF metadata's main workspace + io + constants. Instructions from QEMU "
               "`-icount` (instructions, not cycles).", where=("doc", "readme", "page"))
        s.text(head.strip(), where=("doc", "page"))
        m4f = [line for line in head.strip().splitlines() if "mps2-an386" in line or not line.startswith("| ")
               or line.startswith("| model")]
        s.text("\n".join(m4f), where=("readme",))
    if tail:
        s.text("```\n" + tail.strip() + "\n```", where=("doc", "page"))
    rows = _micro_rows(head)

    def graph_init():
        g, a = _instructions(rows, "mlp_graph", "mps2-an386")[0], _instructions(rows, "mlp_aot", "mps2-an386")[0]
        return "instructions at init, mlp on mps2-an386: graph %d (parses the graph JSON) vs AOT %d" % (g, a)

    def no_fpu():
        parts = []
        for model in ("mlp_aot", "mlp_graph"):
            m3, m4 = _instructions(rows, model, "mps2-an385")[1], _instructions(rows, model, "mps2-an386")[1]
            parts.append("%s %s" % (model, fmt_ratio(m3 / m4)))
        return ("instructions per inference, Cortex-M3 without FPU (mps2-an385) / Cortex-M4F (mps2-an386): "
                + ", ".join(parts))

    s.line(graph_init, where=("doc", "page"))
    s.line(no_fpu, where=("doc", "page"))

    def pipe():
        text = raw.text("micro_pipe")
        m = re.search(r"time per run: mean ([\d.]+) us, median ([\d.]+) us", text)
        if not m:
            raise Missing("`hetrt run` printed no time per run")
        device = re.search(r"last run (\d+) us on the device clock", text)
        return ("mlp AOT in a device program over a pipe (host-driven, one run including the round trip): mean %s, "
                "median %s%s" % (fmt_us(float(m.group(1))), fmt_us(float(m.group(2))),
                                 "; the device's clock: %s us" % device.group(1) if device else ""))
    s.line(pipe, where=("doc", "readme", "page"))
    try:
        s.raw("output of the pipe run", ["```"] + raw.text("micro_pipe").rstrip().splitlines() + ["```"])
    except Missing:
        pass
    return s


def serving(raw):
    s = Section("serving", "Serving (`serve_bench`: `hetrt serve` in process, gRPC, REST binary)")
    b = _load(s, raw, "serve_bench")

    def r(path, threads):
        return b.get("Serve/%s/threads:%d" % (path, threads))

    def lat(path):
        return lambda: "%s / %s" % (fmt_us(r(path, 1).counter("p50_us")), fmt_us(r(path, 1).counter("p99_us")))

    def grpc_lat():
        g, i = r("mlp/Grpc", 1).counter("p50_us"), r("mlp/InProcess", 1).counter("p50_us")
        return "%s (**+%s** at p50)" % (lat("mlp/Grpc")(), fmt_us(g - i))

    def rate(path, threads):
        return fmt_rate(r(path, threads).counter("items_per_second"))

    def versus(path, threads, base_path, base_threads):
        def compute():
            x, y = r(path, threads).counter("items_per_second"), r(base_path, base_threads).counter("items_per_second")
            return "%s (%s)" % (fmt_rate(x), fmt_ratio(x / y))
        return compute

    pinned = {"": _load(s, raw, "serve_bench_pinned_devices"),
              "batch": _load(s, raw, "serve_bench_pinned_devices_batch")}

    def pinned_rate(run, path, threads):
        return pinned[run].get("Serve/%s/threads:%d" % (path, threads)).counter("items_per_second")

    def two_vs_one(run, two, one):
        def compute():
            x2, x1 = pinned_rate(run, *two), pinned_rate(run, *one)
            return "%s vs %s (%s)" % (fmt_rate(x2), fmt_rate(x1), fmt_ratio(x2 / x1))
        return compute

    def overlap_row(label, run, model, in_process=True):
        return [label,
                two_vs_one(run, ("two_stage_x1/InProcess", 2), ("two_stage_x1/InProcess", 1)) if in_process else "",
                two_vs_one(run, (model + "_x2/Grpc", 4), (model + "_x1/Grpc", 4))]

    s.table(["what", "in process", "gRPC", "REST binary"], [
        ["`mlp`, 1 instance, concurrency 1, p50 / p99", lat("mlp/InProcess"), grpc_lat, lat("mlp/RestBinary")],
        ["`mlp`, 1 instance, requests/s at concurrency 1 / 4 / 16", lambda: rate("mlp/InProcess", 1) + " (c1)",
         lambda: " / ".join(rate("mlp/Grpc", t) for t in (1, 4, 16)),
         lambda: " / ".join(rate("mlp/RestBinary", t) for t in (1, 4, 16))],
        ["`mlp`, 2 instances, concurrency 16 (ratio to two in-process threads)", lambda: rate("mlp_x2/InProcess", 2),
         versus("mlp_x2/Grpc", 16, "mlp_x2/InProcess", 2), versus("mlp_x2/RestBinary", 16, "mlp_x2/InProcess", 2)],
        ["`resnet18`, 2 instances, concurrency 16 (ratio to two in-process threads)",
         lambda: rate("resnet18_x2/InProcess", 2), versus("resnet18_x2/Grpc", 16, "resnet18_x2/InProcess", 2), ""],
        ["batch-4 model, one-row requests, concurrency 16: dynamic batching (ratio to one request per run)", "",
         lambda: "%s vs %s" % (versus("batch4_batched/Grpc", 16, "batch4_padded/Grpc", 16)(),
                               rate("batch4_padded/Grpc", 16)), ""],
        ["`relax_dyn_batch` (Relax, symbolic batch), one-row requests, concurrency 16: dynamic batching, "
         "rows concatenated without padding (ratio to one request per run)", "",
         lambda: "%s vs %s" % (versus("relax_dyn_batched/Grpc", 16, "relax_dyn_unbatched/Grpc", 16)(),
                               rate("relax_dyn_unbatched/Grpc", 16)), ""],
        ["`hetero_opencl_seed` (CPU + OpenCL), concurrency 4: 2 instances (ratio to 1)", "",
         lambda: "%s vs %s" % (versus("hetero_x2/Grpc", 4, "hetero_x1/Grpc", 4)(), rate("hetero_x1/Grpc", 4)), ""],
    ])
    s.text("CPU + OpenCL with each device on a core of its own (the process, with one CPU thread per executor, "
           "on one core; PoCL's one worker on another), so one instance and two get the same hardware; "
           "concurrency 4; 2 instances vs 1 (in process: 2 threads each with an executor vs 1):", where=("doc", "readme"))
    s.table(["model, scheduling", "in process", "gRPC"], [
        overlap_row("two-stage model (CPU stage, then OpenCL stage), default scheduling", "", "two_stage"),
        overlap_row("two-stage model, SCHED_BATCH (`chrt -b 0`)", "batch", "two_stage"),
        overlap_row("`hetero_opencl_seed`, default scheduling", "", "hetero", in_process=False),
    ])
    return s


def _floor_rounds(data):
    """serve_load.py's rows as {(protocol, concurrency): [{"floor": row, "hetrt": row} per round]}, in run order."""
    rounds = {}
    for row in data["rows"]:
        pairs = rounds.setdefault((row["protocol"], row["concurrency"]), {})
        pairs.setdefault(row.get("round", 0), {})[row["server"]] = row
    return {key: [pairs[r] for r in sorted(pairs)] for key, pairs in rounds.items()}


def _median_and_range(values, text):
    """The middle value of several rounds, with the lowest and highest beside it."""
    values = sorted(values)
    middle = text(values[len(values) // 2])
    return middle if len(values) == 1 else "%s (%s to %s)" % (middle, text(values[0]), text(values[-1]))


def protocol_floor(raw):
    s = Section("serving-floor", "Serving against the protocol floor (`serve_load.py`: h2load, `hetrt serve` "
                "beside `protocol_floor_server`)")
    s.text("`protocol_floor_server` answers the same Open Inference Protocol requests without a model (a "
           "response prepared at start); h2load drives both servers with the same runs. Per protocol and "
           "concurrency: hetrt's requests/s as a ratio of the floor's, and what hetrt's process spends above the "
           "floor's per request (CPU, from /proc over the measured window) and at p50. `mlp` is the TVM fixture; "
           "`small_relu` costs next to nothing, so its rows show what the server itself adds; `large_relu` moves "
           "6 MiB in and 6 MiB out (throughput in MB/s of inputs, the same ratio). With several rounds (the two "
           "servers alternate, each round in the other order: a shared machine drifts within seconds), each cell is "
           "the median of the rounds' figures, with the lowest and highest in brackets.")
    models = (("serve_load", "`mlp`"), ("serve_load_small_relu", "`small_relu`"),
              ("serve_load_large_relu", "`large_relu` (6 MiB)"))
    rows = []
    for name, label in models:
        s.command(raw.command(name))
        try:
            by_load = _floor_rounds(raw.data(name))
        except (Missing, KeyError, TypeError) as e:
            s.note_missing("%s: %s" % (name, e))
            rows.append([label, "not measured (%s)" % e, "", "", ""])
            continue
        for (protocol, concurrency), pairs in by_load.items():
            def ratio(pairs=pairs):
                return _median_and_range([p["hetrt"]["requests_per_s"] / p["floor"]["requests_per_s"] for p in pairs],
                                         fmt_ratio)

            def above(key, pairs=pairs):
                return _median_and_range([p["hetrt"][key] - p["floor"][key] for p in pairs], lambda v: "%+.1f us" % v)
            rows.append([label, "%s, %d" % (protocol, concurrency), ratio,
                         lambda above=above: above("cpu_us_per_request"), lambda above=above: above("p50_us")])
    s.table(["model", "protocol, concurrency", "throughput / floor", "CPU / request above the floor",
             "p50 above the floor"], rows, where=("doc",))
    return s


def cuda(raw):
    s = Section("cuda", "CUDA on a GPU (`cuda_bench`)", required=False)
    s.command(raw.command("cuda_bench"))
    try:
        c = raw.bench("cuda_bench")
    except Missing as e:
        why = raw.skipped("cuda_bench") or str(e)
        s.text("Not measured in this run: %s." % why.rstrip("."), where=("doc", "readme"))
        return s
    s.required = True  # it ran on a GPU: every figure must come out
    s.raw_bench(c)
    directions = {0: "host -> device", 1: "device -> host", 2: "device -> device"}
    rows = []
    for key in sorted(c.results, key=lambda k: [int(x) if x.isdigit() else x for x in re.split(r"[/:]", k)]):
        m = re.match(r"BM_CudaCopy/dir:(\d)/pinned:(\d)/bytes:(\d+)$", key)
        if not m:
            continue
        def cell(key=key):
            ours, theirs = c.get(key), c.get(key.replace("BM_CudaCopy", "BM_CuMemcpy"))
            a, b = ours.counter("bytes_per_second"), theirs.counter("bytes_per_second")
            return "%s vs %s (%s)" % (fmt_gbs(a), fmt_gbs(b), fmt_ratio(a / b))
        pinned = " (pinned)" if m.group(2) == "1" else ""
        rows.append(["%s%s, %s" % (directions[int(m.group(1))], pinned, fmt_bytes(int(m.group(3)))), cell])
    s.table(["copy through the plugin vs the driver's cuMemcpy (same buffers, same run)", "GB/s (ratio)"], rows)
    model_rows = []
    for model in ("BM_MlpCuda", "BM_HeteroCudaSeed"):
        def cell(model=model):
            a, q = c.get(model + "/0").real_s, c.get(model + "/1").real_s
            return "%s / %s (%s)" % (fmt_s(a), fmt_s(q), fmt_ratio(a / q))
        model_rows.append([model[3:], cell])
    s.table(["model on CPU + CUDA", "asynchronous / sequential (ratio)"], model_rows)
    return s


def tvm(raw):
    s = Section("tvm", "TVM's runtime side by side", required=False)
    reason = raw.skipped("tvm") or "no TVM comparison was attempted"
    s.text(reason + ".", where=("doc", "readme"))
    return s


ALL = (cpu, relax, llm, llm_serving, asynchronous, devices, demo, export, micro, serving, protocol_floor, cuda, tvm)

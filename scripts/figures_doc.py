"""The document model of docs/figures.md: sections of tables and lines whose
values are computed from raw results, rendered in full for docs/figures.md and
as the short form that README.md's generated blocks quote."""
from figures_gbench import Missing, fmt_counter, fmt_s


class Section:
    def __init__(self, key, title, required=True):
        self.key = key
        self.title = title
        self.required = required  # a figure it cannot compute makes figures.sh fail
        self.commands = []
        self.items = []  # (kind, payload, where): kind table|line|text|raw; where: {"doc", "readme"}
        self.missing = []

    def val(self, compute):
        """compute() as a string, or 'not measured' (the reason is recorded)."""
        try:
            return compute()
        except Missing as e:
            self.note_missing(str(e))
            return "not measured (%s)" % e
        except (ZeroDivisionError, ValueError, KeyError, IndexError) as e:
            self.note_missing("%s: %r" % (self.key, e))
            return "not measured (%r)" % e

    def note_missing(self, why):
        if why not in self.missing:
            self.missing.append(why)

    def command(self, cmd):
        if cmd and cmd not in self.commands:
            self.commands.append(cmd)

    def table(self, header, rows, where=("doc", "readme")):
        self.items.append(("table", (header, [[self._cell(c) for c in r] for r in rows]), set(where)))

    def line(self, compute, where=("doc", "readme")):
        """A bullet computed from the results."""
        self.items.append(("line", self.val(compute) if callable(compute) else compute, set(where)))

    def text(self, text, where=("doc",)):
        self.items.append(("text", text, set(where)))

    def raw(self, title, body_lines):
        self.items.append(("raw", (title, body_lines), {"doc"}))

    def raw_bench(self, bench):
        """Every result of one binary, as Google Benchmark reported it."""
        lines = ["| benchmark | threads | iterations | real time | cpu time | counters |", "|---|---|---|---|---|---|"]
        for key, r in bench.results.items():
            if r.error:
                lines.append("| %s | | | error: %s | | |" % (key, r.error))
                continue
            counters = ", ".join("%s=%s" % (k, fmt_counter(v)) for k, v in sorted(r.counters.items()))
            name = key + (" (%s)" % r.aggregate if r.aggregate else "") + (" [%s]" % r.label if r.label else "")
            lines.append("| %s | %d | %d | %s | %s | %s |" % (name, r.threads, r.iterations, fmt_s(r.real_s),
                                                             fmt_s(r.cpu_s), counters))
        ctx = bench.context
        load = ctx.get("load_avg")
        if load:
            lines.append("")
            lines.append("Load average when %s started: %s." % (bench.name, ", ".join("%.2f" % x for x in load)))
        self.raw("raw results of `%s`" % bench.name, lines)

    def _cell(self, c):
        return self.val(c) if callable(c) else c

    def render(self, where):
        out = []
        if where == "doc":
            out += ['<a id="%s"></a>' % self.key, "## " + self.title, ""]
            if self.commands:
                out += ["```sh"] + self.commands + ["```", ""]
        raws = []
        for kind, payload, places in self.items:
            if where not in places:
                continue
            if out and out[-1].startswith("- ") and kind != "line":
                out.append("")
            if kind == "table":
                header, rows = payload
                out.append("| " + " | ".join(header) + " |")
                out.append("|" + "---|" * len(header))
                out += ["| " + " | ".join(r) + " |" for r in rows]
                out.append("")
            elif kind == "line":
                out.append("- " + payload)
            elif kind == "text":
                out += [payload, ""]
            elif kind == "raw":
                raws.append(payload)
        if out and out[-1].startswith("- "):
            out.append("")
        for title, body in raws:  # after the figures they support
            out += ["<details><summary>%s</summary>" % title, ""] + body + ["", "</details>", ""]
        return out

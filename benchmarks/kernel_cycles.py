"""In-core cycles of memmap_init_zone_device()'s operations in the series' own build, for the seed's core.

    .venv/bin/python benchmarks/kernel_cycles.py [--record] [--keep-log DIR]
    .venv/bin/python benchmarks/kernel_cycles.py --from-streams   # price the recorded instructions again

The instructions are the kernel's as it runs them, not a reading of its source: one guest boot of the
series' build (`make kernels`) under TCG with QEMU's `-d in_asm,exec,nochain` restricted to the memmap
init functions binds a 128 MiB namespace per strategy as fsdax and as devdax (align 2 MiB, map=mem), and
the trace gives every translation block executed, with its code as the guest holds it (ftrace's call
sites patched to NOPs, alternatives applied). From each bind's stream of instructions:

- a head: the stream between two visits of memmap_init_zone_device()'s loop head (fsdax: one pfn);
- a tail: the same of memmap_init_compound()'s loop (devdax: one compound tail);
- a compound: devdax's period of the outer loop with its tail iterations cut out, less the head and, for
  the template strategies, the slow tail that seeds the tail template (the operation counts of
  workers/models/memmap/work.py);
- a pageblock: the period of the set_pageblock_migratetype() loop after the walk.

Each is checked against the build's instructions per operation (instructions.toml, fit to kernel rows
under QEMU's counter), then priced by llvm-mca for `-mcpu=icelake-server` (the seed's Ice Lake-SP) as a
loop run 200 times: cycles per iteration. Two things llvm-mca does not model are rewritten first (CPU
manuals say what the core does): the stack pointer tracker (Intel 64 and IA-32 Architectures Optimization
Reference Manual, "Stack Pointer Tracker": PUSH, POP, CALL and RET update RSP in the front end, so their
RSP updates are not a dependency chain) keeps their memory uops and drops the RSP chain; ENDBR64 is a NOP
outside CET (llvm-mca gives it a long latency). --record writes each operation's instructions to
benchmarks/kernel_cycles/<op>.s (what is priced, for a reviewer to read and price again) and the cycles
into workers/models/kernel_cycles.toml (workers/models/incore.py reads them).
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workers.guest import build as series_build  # noqa: E402
from workers.guest.kernels import GuestKernel  # noqa: E402
from workers.guest.records import GuestConfig  # noqa: E402
from workers.guest.runner import run_guest  # noqa: E402
from workers.model import points_frame  # noqa: E402
from workers.models.memmap import MODEL as MEMMAP, work, work_counts  # noqa: E402
from workers.units import MiB  # noqa: E402

STREAMS = Path(__file__).with_name("kernel_cycles")
CYCLES = ROOT / "workers" / "models" / "kernel_cycles.toml"
CPU = "icelake-server"  # the seed's Ice Lake server (MODEL.md); llvm's name for Ice Lake-SP
# Cores the cycles are recorded for (a profile's [copy] cpu names one)
CPUS = (CPU,)
ITERATIONS = 200
SIZE = 128 * MiB  # 32768 pfns a bind: every operation many times, a trace of ~50 MB per bind
STRATEGIES = ("slow", "template", "template_nt", "template_nt_inline")
# The functions a bind runs (System.map names; a compiler suffix such as .isra.0 is allowed).
TRACED = ("memmap_init_zone_device", "memmap_init_compound", "zone_device_page_init_slow", "__zone_device_page_init",
          "zone_device_page_init_from_template", "zone_device_page_init", "__init_single_page",
          "__memcpy_flushcache", "memcpy", "clean_cache_range", "set_pageblock_migratetype",
          "set_pfnblock_flags_mask", "__cond_resched")
# "0xADDR:  48 89 df  movq %rbx, %rdi": the bytes, then two or more spaces, then the instruction; a long
# instruction's last bytes come on a line of their own, bytes only
IN_LINE = re.compile(r"^0x([0-9a-f]+):\s+(?:[0-9a-f]{2} )*[0-9a-f]{2}\s{2,}(\S.*?)\s*$")
TRACE_LINE = re.compile(r"^Trace \d+: (\S+) \[[0-9a-f]+/([0-9a-f]+)/")  # the host block, the guest address


def mca_binary() -> str:
    """llvm-mca of LLVM 19 (Debian's llvm-19), whose Ice Lake-SP model the recorded cycles come from."""
    found = shutil.which("llvm-mca-19")
    if found is None:
        raise SystemExit("memsweep: llvm-mca-19 is not installed (apt-get install llvm-19)")
    return found


def stack_engine(lines: list[str]) -> list[str]:
    """The instructions as llvm-mca should see them (module doc): PUSH a store, POP a load, CALL a store and a
    jump, RET an indirect jump through the stack slot, none of them updating RSP; ENDBR64 a NOP."""
    out = []
    for line in lines:
        op, _, args = line.partition(" ")
        args = args.strip()
        if op in ("pushq", "push"):
            out.append(f"movq {args}, -8(%rsp)")
        elif op in ("popq", "pop"):
            out.append(f"movq -8(%rsp), {args}")
        elif op in ("callq", "call"):
            out += ["movq $0, -8(%rsp)", f"jmp {args}"]
        elif op in ("retq", "ret"):
            out.append("jmpq *-8(%rsp)")
        elif op == "endbr64":
            out.append("nop")
        else:
            out.append(line)
    return out


def price(lines: list[str], mca: str | None = None, cpu: str = CPU) -> float:
    """Cycles per iteration of `lines` run as a loop on `cpu` (llvm-mca, ITERATIONS iterations)."""
    text = "\n".join(stack_engine(lines)) + "\n"
    out = subprocess.run([mca or mca_binary(), f"-mcpu={cpu}", f"-iterations={ITERATIONS}", "-"], input=text,
                         capture_output=True, text=True, check=False)
    found = re.search(r"^Total Cycles:\s+(\d+)", out.stdout, re.M)
    if out.returncode != 0 or found is None:
        raise SystemExit(f"memsweep: llvm-mca failed on:\n{text}\n{out.stderr}")
    return int(found[1]) / ITERATIONS


def mca_version(mca: str) -> str:
    first = subprocess.run([mca, "--version"], capture_output=True, text=True).stdout
    found = re.search(r"LLVM version (\S+)", first)
    return f"llvm-mca {found[1] if found else 'unknown'}"


@dataclass(frozen=True)
class Block:
    pc: int
    code: tuple[str, ...]


def functions(system_map: Path) -> dict[str, tuple[int, int]]:
    """name -> [start, end) of every TRACED function in System.map (end: the next symbol's address)."""
    rows = sorted((int(a, 16), n) for a, _, n in (line.split() for line in system_map.read_text().splitlines()))
    out = {}
    for (addr, name), (after, _) in zip(rows, rows[1:]):
        base = name.split(".")[0]
        if base in TRACED and base not in out and after > addr:
            out[base] = (addr, after)
    return out


def read_trace(log: Path) -> list[Block]:
    """The blocks executed, in order, each with its code. QEMU may hold several translations of one address
    (a block cut short when the instruction counter's deadline falls inside it), so a block's code is the
    translation it ran: the one printed just before its host block's first run, else the latest of its
    address."""
    by_host: dict[str, tuple[str, ...]] = {}
    by_pc: dict[int, tuple[str, ...]] = {}
    run, cur, start, fresh = [], None, None, None
    with open(log, errors="replace") as f:
        for line in f:
            m = TRACE_LINE.match(line)
            if m:
                if cur:
                    fresh = (start, tuple(cur))
                    by_pc[start] = fresh[1]
                cur = None
                host, pc = m[1], int(m[2], 16)
                if fresh is not None and fresh[0] == pc:
                    by_host[host], fresh = fresh[1], None
                run.append(Block(pc, by_host.get(host) or by_pc.get(pc, ())))
                continue
            if line.startswith("IN:"):
                if cur:
                    by_pc[start] = tuple(cur)
                cur, start = [], None
                continue
            m = IN_LINE.match(line)
            if m and cur is not None:
                if start is None:
                    start = int(m[1], 16)
                cur.append(re.sub(r"\s+", " ", m[2]))
    return run


def binds(run: list[Block], fns: dict[str, tuple[int, int]]) -> list[list[Block]]:
    """The stream cut at each entry of memmap_init_zone_device(): one stream per bind, in the order bound."""
    entry = fns["memmap_init_zone_device"][0]
    starts = [i for i, b in enumerate(run) if b.pc == entry]
    return [run[a:b] for a, b in zip(starts, starts[1:] + [len(run)])]


def inside(fns: dict[str, tuple[int, int]], name: str, pc: int) -> bool:
    lo, hi = fns[name]
    return lo <= pc < hi


def period(stream: list[Block], fns, name: str, visits: int, longest: bool = False) -> list[Block]:
    """The most common stretch between two visits of a block of `name` that runs about `visits` times: a
    loop's iteration (any block run once per iteration cuts a rotation of the same loop). Where two loops
    run as often (devdax at align 2 MiB: a compound per pageblock), the shorter one's, or with `longest` the
    longer one's."""
    counts = collections.Counter(b.pc for b in stream if inside(fns, name, b.pc))
    heads = [pc for pc, n in counts.items() if 0.9 * visits <= n <= 1.1 * visits]
    if not heads:
        raise SystemExit(f"memsweep: no block of {name} runs about {visits} times in this bind")
    found = []
    for head in heads:
        at = [i for i, b in enumerate(stream) if b.pc == head]
        common, _ = collections.Counter(tuple(stream[a:b]) for a, b in zip(at, at[1:])).most_common(1)[0]
        found.append(list(common))
    return max(found, key=len) if longest else min(found, key=len)


def cut(stream: list[Block], piece: list[Block]) -> list[Block]:
    """`stream` with every occurrence of `piece` removed."""
    out, i, k = [], 0, len(piece)
    while i < len(stream):
        if stream[i] == piece[0] and stream[i:i + k] == piece:
            i += k
        else:
            out.append(stream[i])
            i += 1
    return out


def code(blocks: list[Block]) -> list[str]:
    return [line for b in blocks for line in b.code]


def trace(build: series_build.Build, fns: dict[str, tuple[int, int]], log: Path) -> list[list[Block]]:
    """One guest boot binding SIZE as fsdax, then devdax (align 2 MiB, map=mem), under each strategy."""
    kernel = GuestKernel(image=build.image, modules=None, release=build.release, strategies=build.strategies)
    configs = [GuestConfig(mode=mode, map="mem", align_bytes=2 * MiB, namespace_size_bytes=SIZE, strategy=s)
               for s in STRATEGIES for mode in ("fsdax", "devdax")]
    ranges = ",".join(f"0x{lo:x}..0x{hi - 1:x}" for lo, hi in fns.values())
    run = run_guest(kernel, configs, accel="tcg", timeout_s=1800,
                    qemu_args=("-d", "in_asm,exec,nochain", "-dfilter", ranges, "-D", str(log)))
    bad = [f"{r.config.strategy} {r.config.mode}: {r.reason}" for r in run.results if r.status != "ok"]
    if bad:
        raise SystemExit(f"memsweep: the traced binds failed: {bad}")
    streams = binds(read_trace(log), fns)
    if len(streams) != len(configs):
        raise SystemExit(f"memsweep: {len(streams)} binds traced, {len(configs)} expected")
    return streams


def visits(mode: str) -> dict[str, int]:
    """How often a traced bind of `mode` runs each loop, as the model counts it (workers.models.memmap's
    work_counts of the traced point): heads, compounds, tails written, pageblocks."""
    point = points_frame(MEMMAP, [{"namespace_size": SIZE, "struct_page_size": 64, "align": 2 * MiB,
                                   "mode": mode, "map": "mem", "strategy": "slow"}])
    _, n = work_counts(point)
    return {k: int(n[op][0]) for k, op in (("heads", "head_slow"), ("compounds", "compound"),
                                            ("tails", "tail_slow"), ("pageblocks", "pageblock"))}


def operations(streams: list[list[Block]], fns) -> dict[str, list[Block]]:
    """Each operation's blocks (module doc), named as instructions.toml names its costs, with the residuals a
    compound is measured from (`compound+[strategy]`)."""
    fs, dd = visits("fsdax"), visits("devdax")
    ops: dict[str, list[Block]] = {}
    for i, strategy in enumerate(STRATEGIES):
        fsdax, devdax = streams[2 * i], streams[2 * i + 1]
        head = period(fsdax, fns, "memmap_init_zone_device", fs["heads"])
        tail = period(devdax, fns, "memmap_init_compound", dd["tails"])
        outer = period(devdax, fns, "memmap_init_zone_device", dd["compounds"], longest=True)
        name = "slow" if strategy == "slow" else f"copy[{strategy}]"
        ops[f"head_{name}"], ops[f"tail_{name}"] = head, tail
        ops[f"compound+[{strategy}]"] = cut(outer, tail)
        if strategy == "slow":
            ops["pageblock"] = period(fsdax, fns, "memmap_init_zone_device", fs["pageblocks"])
    return ops


# The copy of one 64-byte struct page, within a head (the copy model's strategies: memcpy for template,
# an out-of-line __memcpy_flushcache() for template_nt, inline MOVNTI for template_nt_inline).
COPIES = {"memcpy": "head_copy[template]", "nt_call": "head_copy[template_nt]",
          "nt_inline": "head_copy[template_nt_inline]"}
COPY_CODE = ("zone_device_page_init_from_template", "__memcpy_flushcache")


def copy_parts(ops: dict[str, list[Block]], fns) -> dict[str, list[Block]]:
    """The copy model's pieces: each strategy's copy (the head's blocks in COPY_CODE) and one iteration of
    __memcpy_flushcache()'s 32-byte loop (its block that runs twice in a 64-byte copy)."""
    parts = {f"copy[{c}]": [b for b in ops[op] if any(inside(fns, f, b.pc) for f in COPY_CODE)]
             for c, op in COPIES.items()}
    runs = collections.Counter(b for b in parts["copy[nt_call]"] if inside(fns, "__memcpy_flushcache", b.pc))
    parts["copy_loop"] = [max(runs, key=lambda b: (runs[b], len(b.code)))]
    return parts


def costs(ops: dict[str, list[str]], parts: dict[str, list[str]], mca: str, cpu: str) \
        -> tuple[dict[str, float], dict[str, float]]:
    """(instructions, cycles on `cpu`) per operation of work.OPS, from each operation's instructions
    (copies per strategy: a compound's are its residual less the head and, for a template strategy, the slow
    tail that seeds the tail template; a call's entry and exit run once a bind, with no steady loop to trace,
    so they are its fitted instructions at head_slow's IPC), then the copy model's cycles per store, per
    out-of-line call and per copy-loop iteration beyond its stores (64 bytes: 8 stores; __memcpy_flushcache()
    runs its 32-byte loop twice)."""
    ins = {"call": work.recorded_costs(work.PRICED).call, **{k: float(len(v)) for k, v in ops.items()}}
    cyc = {k: price(v, mca, cpu) for k, v in ops.items() if not k.startswith("compound+")}
    cyc["call"] = ins["call"] * cyc["head_slow"] / ins["head_slow"]
    per_strategy = []
    for s in STRATEGIES:
        name = "slow" if s == "slow" else f"copy[{s}]"
        seed = 0.0 if s == "slow" else 1.0
        resid = ops[f"compound+[{s}]"]
        per_strategy.append((len(resid) - ins[f"head_{name}"] - seed * ins["tail_slow"],
                             price(resid, mca, cpu) - cyc[f"head_{name}"] - seed * cyc["tail_slow"]))
    ins["compound"] = sum(n for n, _ in per_strategy) / len(per_strategy)
    cyc["compound"] = sum(c for _, c in per_strategy) / len(per_strategy)
    part = {k: price(v, mca, cpu) for k, v in parts.items()}
    store = (part["copy[memcpy]"] + part["copy[nt_inline]"]) / 16
    loop = max(0.0, part["copy_loop"] - 4 * store)
    cyc.update(copy_store=store, copy_loop=loop, copy_call=max(0.0, part["copy[nt_call]"] - 8 * store - 2 * loop))
    return ({k: v for k, v in ins.items() if not k.startswith("compound+")},
            {k: v for k, v in cyc.items() if not k.startswith("compound+")})


def stream_file(name: str) -> Path:
    """Where --record writes the instructions of operation or copy part `name`."""
    return STREAMS / f"{re.sub(r'[^A-Za-z0-9_]+', '_', name).strip('_')}.s"


def recorded_streams() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The operations' and the copy parts' instructions as --record wrote them (benchmarks/kernel_cycles/*.s),
    under the names operations() and copy_parts() give them."""
    def read(name: str) -> list[str]:
        return [line for line in stream_file(name).read_text().splitlines() if line and not line.startswith("#")]
    ops = [f"head_{n}" for n in ("slow", *(f"copy[{s}]" for s in STRATEGIES[1:]))]
    ops += [f"tail_{n}" for n in ("slow", *(f"copy[{s}]" for s in STRATEGIES[1:]))]
    ops += ["pageblock", *(f"compound+[{s}]" for s in STRATEGIES)]
    return {k: read(k) for k in ops}, {k: read(k) for k in (*(f"copy[{c}]" for c in COPIES), "copy_loop")}


def table(ins: dict[str, float], cyc: dict[str, float], fitted: work.InstructionCosts, cpu: str) -> str:
    """Markdown: per operation the instructions traced and fit, the cycles on `cpu` and the IPC they imply."""
    rows = [f"| operation | instructions traced | instructions fit to kernel rows | cycles ({cpu}) | IPC |",
            "|---|---|---|---|---|"]
    for op in ins:
        traced = "(not traced)" if op == "call" else f"{ins[op]:.0f}"
        rows.append(f"| {op} | {traced} | {fitted_value(fitted, op):.2f} | {cyc[op]:.2f} | {ins[op] / cyc[op]:.2f} |")
    rows += [f"| copy model: per {k.removeprefix('copy_')} | | | {cyc[k]:.3f} | |"
             for k in ("copy_store", "copy_call", "copy_loop")]
    return "\n".join(rows)


def fitted_value(c: work.InstructionCosts, op: str) -> float:
    m = re.fullmatch(r"(head|tail)_copy\[(\w+)\]", op)
    if m:
        return getattr(c, f"{m[1]}_copy")[STRATEGIES.index(m[2]) - 1]
    return getattr(c, op)


def record(streams: dict[str, list[Block]], cycles: dict[str, dict[str, float]], build: series_build.Build,
           tool: str) -> None:
    """The priced instructions as benchmarks/kernel_cycles/*.s; each CPU's cycles in kernel_cycles.toml (a
    table ["<build>"."<cpu>"], replaced where it is there)."""
    STREAMS.mkdir(exist_ok=True)
    for old in STREAMS.glob("*.s"):
        old.unlink()
    for name, blocks in streams.items():
        stream_file(name).write_text(f"# {name}: series:6.12 build {build.digest}, as the guest ran it "
                        "(benchmarks/kernel_cycles.py)\n" + "\n".join(code(blocks)) + "\n")
    text = CYCLES.read_text()
    for cpu, cyc in cycles.items():
        name = f'["{work.PRICED}"."{cpu}"]'
        body = (f"{name}\ntool = \"{tool} -mcpu={cpu}, {ITERATIONS} iterations, the stack pointer tracker's "
                f"and ENDBR64's rewrites (benchmarks/kernel_cycles.py)\"\nbuild = \"{build.digest}\"\n"
                + "".join(f"{k} = {_value(v)}\n" for k, v in _as_toml(cyc).items()))
        pattern = re.compile(re.escape(name) + r"\n(?:[^\[\n].*\n)*")
        text = pattern.sub(lambda _: body, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + body
    tomllib.loads(text)  # still TOML
    CYCLES.write_text(text)


def _value(v) -> str:
    return f"[{', '.join(f'{x:.3f}' for x in v)}]" if isinstance(v, list) else f"{v:.3f}"


def _as_toml(cyc: dict[str, float]) -> dict[str, object]:
    """The costs' own shape: head_copy and tail_copy are lists over the template strategies."""
    out: dict[str, object] = {k: v for k, v in cyc.items() if "[" not in k}
    for kind in ("head", "tail"):
        out[f"{kind}_copy"] = [cyc[f"{kind}_copy[{s}]"] for s in STRATEGIES[1:]]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--record", action="store_true", help="write the streams and the cycles (module doc)")
    parser.add_argument("--keep-log", metavar="DIR", help="keep QEMU's trace log in DIR")
    parser.add_argument("--from-log", metavar="FILE", help="read a kept trace instead of booting a guest")
    parser.add_argument("--from-streams", action="store_true",
                        help="price the recorded benchmarks/kernel_cycles/*.s again (no guest, no build needed)")
    args = parser.parse_args()
    mca = mca_binary()
    if args.from_streams:
        ops, parts = recorded_streams()
        for cpu in CPUS:
            ins, cyc = costs(ops, parts, mca, cpu)
            print(f"recorded streams; {mca_version(mca)} -mcpu={cpu}")
            print(table(ins, cyc, work.recorded_costs(work.PRICED), cpu), end="\n\n")
        return 0
    build = series_build.cached_build()
    if build is None:
        raise SystemExit("memsweep: the series' build is not here: run `make kernels` first")
    fns = functions(build.image.with_name("System.map"))
    if args.from_log:
        streams = binds(read_trace(Path(args.from_log)), fns)
    else:
        with tempfile.TemporaryDirectory(prefix="memsweep-trace-") as tmp:
            log = Path(args.keep_log or tmp) / "trace.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            streams = trace(build, fns, log)
    ops = operations(streams, fns)
    parts = copy_parts(ops, fns)
    cycles = {}
    for cpu in CPUS:
        ins, cycles[cpu] = costs({k: code(v) for k, v in ops.items()}, {k: code(v) for k, v in parts.items()},
                                 mca, cpu)
        print(f"series:6.12 build {build.digest}; {mca_version(mca)} -mcpu={cpu}")
        print(table(ins, cycles[cpu], work.recorded_costs(work.PRICED), cpu), end="\n\n")
    if args.record:
        record({**ops, **parts}, cycles, build, mca_version(mca))
        print(f"recorded: {STREAMS.relative_to(ROOT)}/*.s and {CYCLES.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

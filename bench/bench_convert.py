"""Benchmark: ``dra-migrate convert`` of N pods against a plain YAML load + dump of the same input.

Writes N pods (default 10,000; cycling over the examples' pod templates) to a temporary file,
then times in CPU seconds, in the same process: the baseline, a YAML load and dump of that file
with stock PyYAML over libyaml (``yaml.load_all`` with ``yaml.CSafeLoader``, each document dumped
by one ``yaml.CSafeDumper`` with convert's emitter settings, to a sink): what any tool that loads
and dumps YAML pays, not convert's own reader and writer, so that making those faster counts;
and the whole ``dra-migrate convert -f FILE`` (read, plan, render, write; stdout and stderr to a
sink). Each is timed ``--rounds`` times (default 5), the three taking turns in each round, and
the best of the rounds is kept (as ``timeit`` does: on a shared machine a slower run is one that
other tenants slowed down, by up to 1.5x here); the ratios of the single rounds are printed too.
Prints pods/s and the ratio (target: at most 1.5x); for transparency also the ratio to a
load and dump by convert's own reader and writer (``translate.strict_yaml.StrictLoader``,
``migrate.manifests.Writer``) of the same input. Pods alike but for their name are converted once
(``migrate/convert_memo.py``), so the same is measured again on pods that each have a label of
their own (every pod converted afresh: the cost of the plan itself), its ratio printed beside
the first. ``--mb M`` also converts an input of about M MB
in a process of its own and prints its peak RSS (target for 100 MB: under 300 MB: convert
streams, its memory is bounded by the largest document).

    python bench/bench_convert.py [N] [--rounds 5] [--mb 100] [--smoke]

``--smoke`` (or ``DRA_BENCH_SMOKE=1``): 500 pods, a second or two; CI runs it so the script
cannot rot. Exit status 0 unless it crashes: a missed target is printed.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from dra_bridge.migrate.cli import main as dra_migrate
from dra_bridge.migrate.manifests import Writer
from dra_bridge.translate.strict_yaml import StrictLoader

EXAMPLES = Path(__file__).parents[1] / "tests" / "data" / "examples"
TARGET_RATIO, TARGET_RSS_MB = 1.5, 300


class _Sink(io.StringIO):
    def write(self, text: str) -> int:
        return len(text)


def _templates() -> list[dict[str, object]]:
    templates = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["kind"] == "Pod":
                templates.append(doc)
            elif doc and doc["kind"] in ("Deployment", "Job", "StatefulSet"):
                templates.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": doc["metadata"]["name"], "namespace": "team-a"},
                        "spec": doc["spec"]["template"]["spec"],
                    }
                )
    return templates


def write_corpus(path: Path, n: int, distinct: bool = False) -> None:
    """N pods cycling over the examples' pod templates, as one multi-document YAML file;
    ``distinct``: each pod also has a label of its own (no two pods alike but for the name)."""
    texts = [yaml.safe_dump(t) for t in _templates()]
    with path.open("w") as out:
        for i in range(n):
            text = texts[i % len(texts)]
            # the name is the template's first "name:" under metadata; suffix it per pod
            head, _, rest = text.partition("\nmetadata:\n")
            meta, _, tail = rest.partition("\nspec:")
            lines = [f"{line}-{i}" if line.startswith("  name: ") else line for line in meta.split("\n")]
            lines += [f"  labels:\n    workload: w-{i}"] if distinct else []
            out.write("---\n" + head + "\nmetadata:\n" + "\n".join(lines) + "\nspec:" + tail)


def baseline(path: Path) -> float:
    """Stock PyYAML over libyaml: load each document, dump it with convert's emitter settings."""
    start = time.process_time()
    with path.open(encoding="utf-8") as stream:
        dumper = yaml.CSafeDumper(_Sink(), sort_keys=False, default_flow_style=False, width=100000)
        dumper.open()
        for doc in yaml.load_all(stream, Loader=yaml.CSafeLoader):
            dumper.represent(doc)
        dumper.close()
        dumper.dispose()
    return time.process_time() - start


def ours(path: Path) -> float:
    """The same load and dump by convert's own reader (StrictLoader) and writer (Writer)."""
    start = time.process_time()
    with path.open(encoding="utf-8") as stream:
        writer = Writer(_Sink(), "yaml")
        for doc in yaml.load_all(stream, Loader=StrictLoader):
            writer.write(doc)
        writer.close()
    return time.process_time() - start


def convert(path: Path) -> float:
    start = time.process_time()
    code = dra_migrate(["convert", "-f", str(path)], stdout=_Sink(), stderr=_Sink())
    assert code == 0, code
    return time.process_time() - start


def peak_rss(path: Path) -> float:
    """Peak RSS (MB) of ``dra-migrate convert -f path`` in a process of its own."""
    code = "import sys; from dra_bridge.migrate.cli import main; sys.exit(main(sys.argv[1:]))"
    with open(os.devnull, "w") as null:
        subprocess.run([sys.executable, "-c", code, "convert", "-f", str(path)], check=True, stdout=null, stderr=null)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


SMOKE_PODS = 500


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: a whole number, at least 1")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("n", type=_positive, nargs="?", help="pods to convert (default 10,000; 500 with --smoke)")
    parser.add_argument("--rounds", type=_positive, help="rounds of the three runs (default 5; 1 with --smoke)")
    parser.add_argument("--mb", type=_positive, help="also convert an input of about this many MB, print its peak RSS")
    parser.add_argument(
        "--smoke",
        action="store_true",
        default=os.environ.get("DRA_BENCH_SMOKE") == "1",
        help=f"a short run ({SMOKE_PODS} pods) that CI uses to keep the script working",
    )
    args = parser.parse_args()
    n = args.n or (SMOKE_PODS if args.smoke else 10_000)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pods.yaml"
        write_corpus(path, n)
        print(f"pods: {n} ({path.stat().st_size / 1e6:.1f} MB){' (smoke mode)' if args.smoke else ''}")
        rounds = args.rounds if args.rounds is not None else (1 if args.smoke else 5)
        print(
            f"each time the best of {rounds} rounds, the three runs taking turns in each"
            if rounds > 1
            else "one round of the three runs"
        )
        for distinct in (False, True):
            corpus = Path(tmp) / f"pods-{distinct}.yaml"
            write_corpus(corpus, n, distinct)
            runs = [(baseline(corpus), ours(corpus), convert(corpus)) for _ in range(rounds)]
            base, own, converted = (min(r[i] for r in runs) for i in range(3))
            kind = "each with a label of its own (converted afresh)" if distinct else "alike but for the name"
            print(f"pods {kind}:")
            print(f"  baseline (stock PyYAML: CSafeLoader load + CSafeDumper dump, by document): {base:.2f} s CPU")
            print(f"  convert's own reader + writer, the same load + dump: {own:.2f} s CPU")
            print(f"  convert (read, plan, render, write): {converted:.2f} s CPU = {n / converted:,.0f} pods/s")
            ratio = converted / base
            verdict = "met" if ratio <= TARGET_RATIO else "MISSED"
            each = sorted(r[2] / r[0] for r in runs)
            print(
                f"  ratio convert / baseline: {ratio:.2f} (target <= {TARGET_RATIO}: {verdict}); "
                f"round by round {each[0]:.2f}-{each[-1]:.2f}"
            )
            print(f"  ratio convert / its own reader + writer's load + dump: {converted / own:.2f} (for transparency)")
        if args.mb:
            size = path.stat().st_size
            big = Path(tmp) / "big.yaml"
            write_corpus(big, int(n * args.mb * 1e6 / size))
            rss = peak_rss(big)
            target = TARGET_RSS_MB * args.mb / 100
            print(
                f"convert of {big.stat().st_size / 1e6:.0f} MB: peak RSS {rss:.0f} MB "
                f"(target < {target:.0f} MB: {'met' if rss < target else 'MISSED'})"
            )


if __name__ == "__main__":
    main()

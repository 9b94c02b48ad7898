"""Run every command and code block of README.md and docs/*.md, and check (or rewrite) what they
print, so the docs cannot drift from the code.

    python -m scripts.docs                 # check every file; exit 1 on a difference
    python -m scripts.docs --update        # rewrite the printed outputs in place from a real run
    python -m scripts.docs README.md docs/analysis.md   # only these files
    python -m scripts.docs --list          # the blocks and what happens to each

What runs, in a fresh working directory per run (so ``sweep.nc`` there is the default grid of the
README's own ``sweep run``, written once and shared by every file):

* ``$ COMMAND`` lines (in 4-space-indented blocks or fenced blocks): run with bash, stdout and
  stderr together as a terminal shows them; the lines after a command, up to the next ``$`` line
  or the end of the block, are its expected output (none shown: it must exit 0). ``$?`` is the
  previous command's exit code. Timings, rates and timestamps are masked (:data:`VOLATILE`).
* Python blocks with ``>>>`` prompts: doctest examples, one namespace per file, compared with
  doctest's rules (``# doctest: +ELLIPSIS`` etc. per example), pandas at a width of 100 columns.
* Other Python blocks: executed (in the file's namespace); TOML blocks: parsed, and a grid spec
  (one with a ``hardware`` or ``model`` key) loaded with ``grids.load_spec``.

A comment on the line before a block changes what happens to it:
``<!-- docs: skip: REASON -->`` (not run; the reason is printed by ``--list``),
``<!-- docs: file NAME -->`` (the block is written to NAME in the working directory, for later
blocks), ``<!-- docs: run-only -->`` (run, output not compared). Commands that install packages
or run the test suite (:data:`NOT_RUN`) are never run: CI runs them itself.
"""

from __future__ import annotations

import argparse
import contextlib
import doctest
import io
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: command prefixes never run, with the reason
NOT_RUN = {
    "python3 -m pip install": "installs packages: CI's own first step, not a docs example",
    "pip install": "installs packages: CI's own first step, not a docs example",
    "python3 -m pytest": "the test suite itself (the docs runner is one of its tests)",
}
#: (pattern, replacement) applied to expected and actual output before comparing
VOLATILE = (
    (re.compile(r"^(wall time\s*:).*$"), r"\1 <timing>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"), "<time>"),
    (re.compile(r"\(\d+(\.\d+)? MiB, \d+(\.\d+)? s\)"), "(<size>, <time>)"),
    (re.compile(r"\[\d+ s\]"), "[<time>]"),
)
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
DIRECTIVE = re.compile(r"^\s*<!--\s*docs:\s*(skip|file|run-only)\s*:?\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    """A code block of a Markdown file: lines [start, end) of the file (the code, without the
    fences), its language, and the directive before it."""

    path: Path
    start: int
    end: int
    lang: str
    lines: list[str]
    indent: str = ""  # added back to every line when the block is rewritten
    directive: tuple[str, str] | None = None
    new_lines: list[str] | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.start + 1}"


def parse(path: Path) -> list[Block]:
    """The code blocks of a Markdown file (fenced, and 4-space-indented ones that start with a
    ``$`` command)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0

    def directive_before(k: int):
        j = k - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        m = DIRECTIVE.match(lines[j]) if j >= 0 and k - j <= 2 else None
        return (m.group(1), m.group(2)) if m else None

    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and not re.match(rf"^{m.group(1)}```\s*$", lines[j]):
                j += 1
            blocks.append(Block(path, i + 1, j, m.group(2).lower(), lines[i + 1:j], "",
                                directive_before(i)))
            i = j + 1
            continue
        if lines[i].startswith("    $ ") and (i == 0 or not lines[i - 1].strip()):
            j = i
            while j < len(lines) and lines[j].startswith("    "):
                j += 1
            blocks.append(Block(path, i, j, "console", [x[4:] for x in lines[i:j]], "    ",
                                directive_before(i)))
            i = j
            continue
        i += 1
    return blocks


def mask(text: str) -> str:
    out = []
    for line in text.rstrip().splitlines():
        line = line.rstrip()
        for pat, rep in VOLATILE:
            line = pat.sub(rep, line)
        out.append(line)
    return "\n".join(out)


def keep_volatile(want: list[str], got: list[str]) -> list[str]:
    """``got``, but with the docs' own line wherever the two differ only in masked (volatile)
    parts: a rewrite keeps the timings the docs quote (measured on a quiet machine)."""
    return [w if k < len(want) and mask(w) == mask(g) else g
            for k, (w, g) in enumerate(zip([*want, *[""] * len(got)], got))]


def commands(lines: list[str]) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) of a console block (``\\`` continues a command)."""
    out: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1
            continue
        cmd = [lines[i][2:]]
        while cmd[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd.append(lines[i].strip())
        i += 1
        want = []
        while i < len(lines) and not lines[i].startswith("$ "):
            want.append(lines[i])
            i += 1
        while want and not want[-1].strip():
            want.pop()
        out.append(("\n".join(cmd), want))
    return out


class Runner:
    """Runs the blocks of one or more files in one working directory."""

    def __init__(self, workdir: Path, update: bool) -> None:
        self.workdir = workdir
        self.update = update
        self.env = dict(os.environ, COLUMNS="100", PYTHONPATH=os.pathsep.join(
            [str(ROOT), os.environ.get("PYTHONPATH", "")]), SWEEP_DOCS="1")
        self.namespaces: dict[Path, dict] = {}

    # ---------------------------------------------------------------- console
    def console(self, b: Block) -> None:
        rc = 0
        new = []
        compare = b.directive is None or b.directive[0] != "run-only"
        for cmd, want in commands(b.lines):
            why = next((r for p, r in NOT_RUN.items() if cmd.startswith(p)), None)
            if why:
                new += [f"$ {ln}" if k == 0 else ln for k, ln in enumerate(cmd.splitlines())]
                new += want
                continue
            proc = subprocess.run(["bash", "-c", f"(exit {rc}); {cmd} 2>&1"], cwd=self.workdir,
                                  env=self.env, capture_output=True, text=True, timeout=1800)
            rc = proc.returncode
            got = proc.stdout.rstrip("\n")
            new += [f"$ {ln}" if k == 0 else ln for k, ln in enumerate(cmd.splitlines())]
            if want and compare:
                new += keep_volatile(want, got.splitlines())
                if mask("\n".join(want)) != mask(got):
                    b.problems.append(f"$ {cmd}\n--- the docs show:\n{chr(10).join(want)}\n"
                                      f"--- it prints:\n{got}")
            else:
                new += want
                ok_rc = rc == 0 or "sweep: error" in got
                if not ok_rc:
                    b.problems.append(f"$ {cmd}\nexited {rc}:\n{got[-3000:]}")
        b.new_lines = new

    # ---------------------------------------------------------------- python
    def namespace(self, path: Path) -> dict:
        if path not in self.namespaces:
            ns: dict = {"__name__": "__docs__"}
            exec("import numpy as np, pandas as pd\n"
                 "pd.set_option('display.width', 100)\n"
                 "pd.set_option('display.max_columns', 20)\n", ns)
            self.namespaces[path] = ns
        return self.namespaces[path]

    def python(self, b: Block) -> None:
        text = "\n".join(b.lines) + "\n"
        ns = self.namespace(b.path)
        if ">>>" not in text:
            with _cwd(self.workdir), contextlib.redirect_stdout(io.StringIO()):
                try:
                    exec(compile(text, b.where, "exec"), ns)
                except Exception as exc:  # a doc example that fails is the finding
                    b.problems.append(f"the block raised {type(exc).__name__}: {exc}")
            return
        parts = doctest.DocTestParser().parse(text, b.where)
        checker = doctest.OutputChecker()
        out_lines: list[str] = []
        for part in parts:
            if isinstance(part, str):
                out_lines += part.splitlines() if part.strip() or not out_lines else []
                continue
            got = _run_example(part, ns, self.workdir)
            flags = sum(f for f, on in part.options.items() if on) | doctest.NORMALIZE_WHITESPACE
            if not checker.check_output(part.want, got, flags) and \
                    mask(part.want) != mask(got):
                b.problems.append(f">>> {part.source.strip()}\n--- the docs show:\n"
                                  f"{part.want.rstrip()}\n--- it prints:\n{got.rstrip()}")
                want = got
            else:
                want = part.want
            src = part.source.rstrip("\n").splitlines()
            pad = " " * part.indent
            out_lines += [f"{pad}{'>>> ' if k == 0 else '... '}{ln}" for k, ln in enumerate(src)]
            out_lines += [f"{pad}{ln}" for ln in want.rstrip("\n").splitlines()]
        b.new_lines = out_lines

    # ---------------------------------------------------------------- toml
    def toml(self, b: Block) -> None:
        text = "\n".join(b.lines)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            b.problems.append(f"not valid TOML: {exc}")
            return
        if {"hardware", "model"} & set(data):
            from grids import load_spec

            with _cwd(self.workdir):
                try:
                    load_spec(data)
                except Exception as exc:
                    b.problems.append(f"the grid spec does not load: {exc}")

    def run(self, b: Block) -> str:
        """Run one block; what happened, in one word."""
        kind, arg = b.directive or ("", "")
        if kind == "skip":
            return f"skipped ({arg})"
        if kind == "file":  # written for later blocks (a bad spec on purpose, say): not checked
            (self.workdir / arg).write_text("\n".join(b.lines) + "\n", encoding="utf-8")
            return f"file {arg}"
        if b.lang in ("console", "", "text", "bash", "sh", "shell") and any(
                ln.startswith("$ ") for ln in b.lines):
            self.console(b)
            return "ran"
        if b.lang in ("python", "py", "pycon"):
            self.python(b)
            return "ran"
        if b.lang == "toml":
            self.toml(b)
            return "parsed"
        return "not code"


def _run_example(ex: doctest.Example, ns: dict, workdir: Path) -> str:
    buf = io.StringIO()
    with _cwd(workdir), contextlib.redirect_stdout(buf):
        try:
            exec(compile(ex.source, "<docs>", "single"), ns)
        except Exception as exc:
            print(f"Traceback (most recent call last):\n  ...\n{type(exc).__name__}: {exc}")
    return buf.getvalue()


@contextlib.contextmanager
def _cwd(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def write_back(path: Path, blocks: list[Block]) -> bool:
    lines = path.read_text(encoding="utf-8").splitlines()
    changed = False
    for b in sorted(blocks, key=lambda x: -x.start):
        if b.new_lines is None:
            continue
        new = [f"{b.indent}{ln}" if ln else "" for ln in b.new_lines]
        if new != lines[b.start:b.end]:
            lines[b.start:b.end] = new
            changed = True
    if changed:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return changed


def run_files(files: list[Path], update: bool = False, workdir: Path | None = None,
              log=print) -> list[Block]:
    """Run the blocks of ``files`` (in order, one working directory); the blocks with problems.
    ``update``: rewrite the outputs shown in the files from this run."""
    own = workdir is None
    tmp = Path(tempfile.mkdtemp(prefix="sweep-docs-")) if own else workdir
    runner = Runner(tmp, update)
    bad: list[Block] = []
    # the README first: its `sweep run` writes the sweep.nc every other file reads
    for path in sorted(files, key=lambda p: p.name != "README.md"):
        blocks = parse(path)
        t0 = time.perf_counter()
        for b in blocks:
            runner.run(b)
            if b.problems:
                bad.append(b)
        if update and write_back(path, blocks):
            log(f"updated {path.relative_to(ROOT)}")
        log(f"{path.relative_to(ROOT)}: {len(blocks)} block(s), "
            f"{sum(1 for b in blocks if b.problems)} with differences "
            f"({time.perf_counter() - t0:.1f} s)")
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="Markdown files (default README.md, docs/*.md)")
    ap.add_argument("--update", action="store_true", help="rewrite the outputs in place")
    ap.add_argument("--list", action="store_true", help="list the blocks, run nothing")
    args = ap.parse_args(argv)
    files = [Path(f).resolve() for f in args.files] or doc_files()
    if args.list:
        for path in files:
            for b in parse(path):
                what = (f"{b.directive[0]} {b.directive[1]}" if b.directive else
                        b.lang or "console")
                print(f"{b.where}: {what}")
        return 0
    bad = run_files(files, update=args.update)
    for b in bad:
        print(f"\n{b.where}:\n" + "\n".join(b.problems))
    if bad and not args.update:
        print(f"\n{len(bad)} block(s) differ from the code: fix the docs, or regenerate the "
              f"outputs with: python -m scripts.docs --update")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

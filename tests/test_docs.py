"""The documentation runs: every code block of README.md and docs/**/*.md, and every relative link.

* ``test_code_blocks[<file>]``: the fenced ``python`` and ``bash`` blocks of one Markdown file run in
  order, in a scratch directory whose entries link to the repository's files (what the blocks write,
  such as ``checkpoints/`` or ``arena/``, stays out of the working tree). The ``python`` blocks of a
  file share one namespace, so a later block may use what an earlier one made; they run with
  ``PYTHONPATH`` set to this repository. In ``bash`` blocks the console commands (``tarot-train``,
  ``tarot-arena``, ``tarot-play``, ``tarot-demo``) and ``python`` call this repository's code with
  this interpreter, and the environment set-up steps chained with ``&&`` (``python3 -m venv``,
  ``. .venv/bin/activate``, ``pip install``) and a bare ``pytest`` (this suite) are left out. Standard
  input is empty, so an interactive command ends at once instead of waiting.
* A block preceded by ``<!-- skip-test: reason -->`` (blank lines between are allowed) is not run; the
  reason is required. Blocks of any other language (``text``, untagged) are never run.
* ``test_links[<file>]``: every relative Markdown link points to an existing file, and a ``#anchor``
  into a Markdown file names one of its headings (GitHub's anchor rule).

docs/testing.md describes the convention for the reader.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOC_FILES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
RUN_LANGS = {"python", "bash"}
FENCE = re.compile(r"^(\s*)(`{3,})\s*([\w+-]*)\s*$")
SKIP = re.compile(r"<!--\s*skip-test:\s*(\S.*?)\s*-->")
# set-up steps that the installed test environment has already done, and the suite itself
SETUP = re.compile(r"^(python3? -m venv\b.*|\.\s+\S*activate|source\s+\S*activate|pip3? install\b.*|pytest)$")
# what a scratch directory must not link to: outputs the blocks write, the repository's metadata, and the
# packages, which the blocks import from the repository itself (PYTHONPATH): numba keys its compiled-kernel
# cache by each source file's path, so a package imported through a new scratch path every test would be
# compiled again each time (a minute or more a file)
PACKAGES = {"tarot_env", "agents", "tarot_web"}
NOT_LINKED = {".git", "checkpoints", "runs", "arena", "__pycache__", ".pytest_cache"} | PACKAGES
TIMEOUT_S = 300


@dataclass
class Block:
    lang: str
    code: str
    line: int  # line of the opening fence (1-based)
    skip: str | None  # the skip-test reason, if any


def parse_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, with their skip-test reasons."""
    lines = text.splitlines()
    out: list[Block] = []
    pending_skip: str | None = None
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            indent, ticks, lang = m.groups()
            close = re.compile(rf"^\s*{ticks}`*\s*$")
            start, body = i, []
            i += 1
            while i < len(lines) and not close.match(lines[i]):
                line = lines[i]
                body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
                i += 1
            if i == len(lines):
                raise ValueError(f"code block opened on line {start + 1} is never closed")
            out.append(Block(lang.lower(), "\n".join(body) + "\n", start + 1, pending_skip))
            pending_skip = None
        else:
            s = SKIP.search(lines[i])
            if s:
                pending_skip = s.group(1)
            elif "skip-test" in lines[i]:
                raise ValueError(f"line {i + 1}: malformed marker; write <!-- skip-test: reason -->")
            elif lines[i].strip():
                pending_skip = None  # a marker applies only to the block right after it
        i += 1
    return out


def runnable_bash(code: str) -> str:
    """``code`` without the set-up steps: each ``a && b && c`` line keeps its other commands."""
    out = []
    for line in code.replace("\\\n", " ").splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            out.append(line)
            continue
        kept = [seg.strip() for seg in line.split("&&") if not SETUP.match(seg.strip())]
        if kept:
            out.append(" && ".join(kept))
    return "\n".join(out) + "\n"


def _console_scripts() -> str:
    """A bash function per console script of ``pyproject.toml`` (``[project.scripts]``), running it from
    the repository under test with the test's python, whether or not the package is installed."""
    section = (REPO / "pyproject.toml").read_text().split("[project.scripts]\n", 1)[1].split("\n[", 1)[0]
    lines = []  # (tomllib is Python 3.11+; the section is plain `name = "module:function"` lines)
    for name, module, func in re.findall(r'^([\w-]+)\s*=\s*"([\w.]+):(\w+)"', section, flags=re.MULTILINE):
        lines.append(f"{name}() {{ \"$DOCS_PY\" -c 'import sys; sys.argv[0] = \"{name}\"; "
                     f"from {module} import {func}; {func}()' \"$@\"; }}")
    return "\n".join(lines)


_BASH_PRELUDE = f"""
set -euo pipefail
python() {{ "$DOCS_PY" "$@"; }}
python3() {{ "$DOCS_PY" "$@"; }}
{_console_scripts()}
set -x
"""

# Runs in a subprocess: argv[1] = the Markdown file's display name, argv[2] = JSON list of blocks.
_DRIVER = r"""
import json, subprocess, sys, traceback
name, blocks = sys.argv[1], json.load(open(sys.argv[2]))
prelude = json.load(open(sys.argv[3]))
ns = {"__name__": "__main__"}
for b in blocks:
    where = f"{name}:{b['line']}"
    print(f"----- {where} ({b['lang']})", flush=True)
    if b["lang"] == "python":
        try:
            exec(compile("\n" * b["line"] + b["code"], name, "exec"), ns)
        except BaseException:
            traceback.print_exc()
            print(f"FAILED: the python block at {where}", flush=True)
            sys.exit(1)
    else:
        rc = subprocess.run(["bash", "-c", prelude + b["code"]], stdin=subprocess.DEVNULL, check=False).returncode
        if rc:
            print(f"FAILED: the bash block at {where} (exit status {rc})", flush=True)
            sys.exit(1)
"""


def _scratch(tmp: Path) -> Path:
    work = tmp / "work"
    work.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in NOT_LINKED:
            (work / entry.name).symlink_to(entry)
    return work


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


@pytest.mark.parametrize("doc", DOC_FILES, ids=_rel)
def test_code_blocks(doc: Path, tmp_path: Path):
    blocks = parse_blocks(doc.read_text())
    run = []
    for b in blocks:
        if b.lang in RUN_LANGS and b.skip is None:
            run.append(asdict(b) | {"code": runnable_bash(b.code) if b.lang == "bash" else b.code})
    if not run:
        pytest.skip(f"{_rel(doc)} has no block to run")
    (tmp_path / "blocks.json").write_text(json.dumps(run))
    (tmp_path / "prelude.json").write_text(json.dumps(_BASH_PRELUDE))
    env = dict(os.environ, PYTHONPATH=str(REPO), DOCS_PY=sys.executable, MPLBACKEND="Agg",
               PYTHONHASHSEED="0")
    r = subprocess.run([sys.executable, "-c", _DRIVER, _rel(doc), str(tmp_path / "blocks.json"),
                        str(tmp_path / "prelude.json")],
                       cwd=_scratch(tmp_path), env=env, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=TIMEOUT_S, check=False)
    assert r.returncode == 0, f"a code block of {_rel(doc)} failed:\n{r.stdout[-6000:]}\n{r.stderr[-6000:]}"


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    h = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return h.replace(" ", "-")


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks (their lines are neither headings nor links)."""
    return re.sub(r"^\s*```.*?^\s*```", "", text, flags=re.DOTALL | re.MULTILINE)


def _anchors(md: Path) -> set[str]:
    return {_anchor(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*)$", _prose(md.read_text()), re.MULTILINE)}


def broken_links(doc: Path) -> list[str]:
    """The relative links of ``doc`` whose file, or whose ``#anchor`` in a Markdown file, is missing."""
    text = re.sub(r"`[^`\n]*`", "", _prose(doc.read_text()))  # inline code is not a link
    bad = []
    for m in LINK.finditer(text):
        target = m.group(1) or m.group(2)
        if re.match(r"^[a-z]+://|^mailto:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if not dest.exists():
            bad.append(f"{target}: no such file {dest}")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{target}: no heading with anchor #{anchor} in {dest.name}")
    return bad


@pytest.mark.parametrize("doc", DOC_FILES, ids=_rel)
def test_links(doc: Path):
    bad = broken_links(doc)
    assert not bad, f"broken links in {_rel(doc)}:\n" + "\n".join(bad)


def test_broken_links_finds_a_missing_file_and_a_missing_heading(tmp_path: Path):
    (tmp_path / "b.md").write_text("# B.5.6 Checks against the sources\n")
    doc = tmp_path / "a.md"
    doc.write_text("[ok](b.md#b56-checks-against-the-sources) [web](https://x.org/y) `[code](no.md)`\n"
                   "[gone](c.md) [bad anchor](b.md#b57) ![img](pic.png)\n```text\n[in code](no.md)\n```\n")
    assert broken_links(doc) == [f"c.md: no such file {tmp_path / 'c.md'}",
                                 "b.md#b57: no heading with anchor #b57 in b.md",
                                 f"pic.png: no such file {tmp_path / 'pic.png'}"]


def test_parse_blocks_reads_skip_markers_languages_and_indented_fences():
    text = (
        "intro\n<!-- skip-test: too long -->\n\n```bash\ntrain\n```\n"
        "```python\nx = 1\n```\n"
        "* item\n\n  ```text\n  out\n  ```\n"
        "<!-- skip-test: reason -->\nsome prose\n```python\ny = 2\n```\n"
    )
    got = [(b.lang, b.code, b.line, b.skip) for b in parse_blocks(text)]
    assert got == [("bash", "train\n", 4, "too long"), ("python", "x = 1\n", 7, None),
                   ("text", "out\n", 12, None), ("python", "y = 2\n", 17, None)]


def test_parse_blocks_rejects_an_unclosed_block_and_a_marker_without_reason():
    with pytest.raises(ValueError, match="never closed"):
        parse_blocks("```python\nx = 1\n")
    with pytest.raises(ValueError, match="skip-test: reason"):
        parse_blocks("<!-- skip-test -->\n```bash\nls\n```\n")


def test_runnable_bash_drops_only_the_setup_steps():
    code = ('python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 -e ".[train,dev]" '
            "&& tarot-train --config configs/smoke.yaml\n"
            "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && pytest\n"
            "# a comment\npython -m agents.evaluation.evaluate x.pt --deals 20\n")
    assert runnable_bash(code) == ("tarot-train --config configs/smoke.yaml\n# a comment\n"
                                   "python -m agents.evaluation.evaluate x.pt --deals 20\n")


def test_anchor_follows_github_rule():
    assert _anchor("B.5.6 Checks against the sources") == "b56-checks-against-the-sources"
    assert _anchor("Batched engines (`make_vec`)") == "batched-engines-make_vec"

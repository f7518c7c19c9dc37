"""The commands of README.md and docs/ run as written, checked as a doctest would, without
running them (no JVM):

* every ``python`` block compiles, its ``import`` and ``from … import`` names resolve in the
  installed package, and so does each ``ivm.<name>`` it uses;
* every ``ivm …`` (or ``.venv/bin/ivm …``) line of a shell block, and every ``$ ivm …`` line
  of an output block, parses with ivm's own argparse parser (``ivm.cli.parser``); an ``ivm …``
  command quoted in the text names a subcommand and options that parser has;
* every ``make X``, in a shell block or in the text, names a target of the Makefile;
* every dotted ``ivm.x.y`` quoted in the text resolves, and every repository path quoted
  (``ivm/…``, ``tests/…``, ``benchmarks/…``, ``dbt/…``) exists;
* every relative link between the pages points to a file that exists, and to a heading of it
  where the link names one.

Each check is a function from a page's text to the errors found, so that
:func:`test_the_checks_find_planted_errors` can show each of them failing."""

import argparse
import ast
import contextlib
import importlib
import io
import re
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from ivm.cli import parser

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

SHELL = {"sh", "shell", "bash", "console"}
IVM = {"ivm", ".venv/bin/ivm"}
OPERATORS = {"|", "||", "&&", ";", "&"}
REDIRECT = re.compile(r"^\d*(>>?|<)&?\d*$")
CODE_SPAN = re.compile(r"(`+)\s?(.+?)\s?\1")
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
DOTTED = re.compile(r"^ivm(\.[A-Za-z_]\w*)+")
REPO_PATH = re.compile(r"^(ivm|tests|benchmarks|dbt|\.ci)/[\w./-]*$")


@dataclass(frozen=True)
class Block:
    """A fenced block: its info string, the line of its first line, its lines."""

    language: str
    line: int
    lines: list[str]


@dataclass(frozen=True)
class Page:
    """A page split into fenced blocks and paragraphs of text (each with its first line)."""

    blocks: list[Block]
    paragraphs: list[tuple[int, str]]
    headings: list[str]


def read(text: str) -> Page:
    blocks, paragraphs, headings = [], [], []
    fence, language, start, body = None, "", 0, []
    paragraph: list[str] = []
    paragraph_line = 0

    def end_paragraph():
        if paragraph:
            paragraphs.append((paragraph_line, " ".join(paragraph)))
            paragraph.clear()

    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if fence is None and stripped.startswith("```"):
            end_paragraph()
            fence, language, start, body = "```", stripped[3:].strip().lower(), number + 1, []
        elif fence is not None and stripped == fence:
            blocks.append(Block(language, start, body))
            fence = None
        elif fence is not None:
            body.append(line)
        elif not stripped:
            end_paragraph()
        else:
            if stripped.startswith("#"):
                end_paragraph()
                headings.append(stripped.lstrip("#").strip())
            if not paragraph:
                paragraph_line = number
            paragraph.append(stripped)
    assert fence is None, f"a block opened at line {start - 1} is not closed"
    end_paragraph()
    return Page(blocks, paragraphs, headings)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors(headings: list[str]) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in headings:
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


@cache
def make_targets() -> frozenset[str]:
    targets = set()
    for line in (ROOT / "Makefile").read_text().splitlines():
        if line.startswith(("\t", " ", "#")):
            continue
        if match := re.match(r"([^:=#]+):(?!=)", line):
            targets.update(name for name in match.group(1).split() if "$" not in name)
    return frozenset(targets)


def resolves(dotted: str) -> bool:
    """``dotted`` names a module of the installed package, or a name in one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(value, name):
                return False
            value = getattr(value, name)
        return True
    return False


# -- python blocks ------------------------------------------------------------------------


def python_errors(text: str) -> list[str]:
    errors = []
    for block in read(text).blocks:
        if block.language != "python":
            continue
        where = f"line {block.line}"
        try:
            tree = ast.parse("\n".join(block.lines), filename=where)
        except SyntaxError as error:
            errors.append(f"{where}: the block does not compile: {error}")
            continue
        modules = {"ivm": "ivm"}  # the pages' blocks use ivm as imported
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if not resolves(alias.name):
                        errors.append(f"{where}: import {alias.name}: no such module")
                    modules[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom):
                if node.level or node.module is None:
                    errors.append(f"{where}: a relative import")
                    continue
                for alias in node.names:
                    if not resolves(f"{node.module}.{alias.name}"):
                        errors.append(f"{where}: from {node.module} import {alias.name}: not found")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store):
                chain, value = [node.attr], node.value
                while isinstance(value, ast.Attribute):
                    chain.insert(0, value.attr)
                    value = value.value
                if isinstance(value, ast.Name) and value.id in modules:
                    dotted = ".".join([modules[value.id], *chain])
                    if not resolves(dotted):
                        errors.append(f"{where}: {dotted}: not found")
    return errors


# -- shell lines ------------------------------------------------------------------------------


def shell_lines(text: str):
    """``(line, command)`` for each command line of the shell blocks, and each ``$ `` line of
    the other blocks; heredocs left out, continued lines joined."""
    for block in read(text).blocks:
        shell = block.language in SHELL
        heredoc, pending, pending_line = None, "", 0
        for offset, line in enumerate(block.lines):
            if heredoc is not None:
                if line.strip() == heredoc:
                    heredoc = None
                continue
            if not shell:
                if line.startswith("$ "):
                    yield block.line + offset, line[2:]
                continue
            if not pending:
                pending_line = block.line + offset
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            command, pending = pending + line, ""
            if match := re.search(r"<<-?\s*['\"]?(\w+)['\"]?", command):
                heredoc = match.group(1)
            yield pending_line, command


def commands(line: str) -> list[list[str]]:
    """The commands of a shell line, each its words: comments, redirections and leading
    variable assignments left out."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    result, words, skip = [], [], False
    for word in lexer:
        if word in OPERATORS:
            result.append(words)
            words = []
        elif skip:
            skip = False
        elif REDIRECT.match(word):
            skip = True
        elif not words and re.match(r"^\w+=", word):
            continue
        else:
            words.append(word)
    result.append(words)
    return [words for words in result if words]


def ivm_error(words: list[str]) -> str | None:
    """Why ivm's parser refuses ``words`` (the arguments after ``ivm``), or None."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            args = parser().parse_args(words)
    except SystemExit:
        return stderr.getvalue().strip().splitlines()[-1]
    if not callable(getattr(args, "run", None)):
        return "no command to run"
    return None


def shell_errors(text: str) -> list[str]:
    errors = []
    for line, command in shell_lines(text):
        try:
            parts = commands(command)
        except ValueError as error:
            errors.append(f"line {line}: {command!r}: {error}")
            continue
        for words in parts:
            if words[0] in IVM and (why := ivm_error(words[1:])) is not None:
                errors.append(f"line {line}: {command.strip()!r}: {why}")
    return errors


# -- make targets -----------------------------------------------------------------------------


def make_commands(text: str):
    """``(line, words)`` of every make command: in the shell blocks and quoted in the text."""
    for line, command in shell_lines(text):
        for words in commands(command):
            if words[0] == "make":
                yield line, words
    for line, paragraph in read(text).paragraphs:
        for span in CODE_SPAN.finditer(paragraph):
            words = [w for w in span.group(2).split() if not re.match(r"^\w+=", w)]
            if words and words[0] == "make":
                yield line, words


def make_errors(text: str) -> list[str]:
    errors = []
    for line, words in make_commands(text):
        for target in words[1:]:
            if not target.startswith("-") and target not in make_targets():
                errors.append(f"line {line}: make {target}: no such target in the Makefile")
    return errors


# -- the text's quoted commands, names and paths ---------------------------------------------


@cache
def options() -> dict[str | None, set[str]]:
    """The option strings of ivm's parser (under None) and of each of its subcommands."""
    main = parser()
    found: dict[str | None, set[str]] = {None: set()}
    for action in main._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = {s for a in sub._actions for s in a.option_strings}
        else:
            found[None].update(action.option_strings)
    return found


def quoted_ivm_error(words: list[str]) -> str | None:
    """Why ``ivm`` + ``words``, quoted in the text, names no subcommand or an option that
    is not one of its own (the text may leave out a command's arguments)."""
    known = options()
    rest = list(words)
    while rest and rest[0].startswith("-"):
        option = rest.pop(0).split("=")[0]
        if option not in known[None]:
            return f"no option {option} of ivm"
        if option in ("--home", "--remote") and rest:
            rest.pop(0)
    if not rest:
        return None
    command, *arguments = rest
    if command in ("…", "..."):  # a placeholder for any command
        return None
    if command not in known:
        return f"no command {command!r}"
    for word in arguments:
        option = word.split("=")[0]
        if option.startswith("-") and option != "-" and option not in known[command]:
            return f"no option {option} of ivm {command}"
    return None


def text_errors(text: str, directory: Path) -> list[str]:
    errors = []
    for line, paragraph in read(text).paragraphs:
        for span in CODE_SPAN.finditer(paragraph):
            quoted = span.group(2)
            words = quoted.split()
            if words and words[0] in IVM and (why := quoted_ivm_error(words[1:])):
                errors.append(f"line {line}: `{quoted}`: {why}")
            if (dotted := DOTTED.match(quoted)) and not resolves(dotted.group(0)):
                errors.append(f"line {line}: `{quoted}`: {dotted.group(0)} not found")
            if REPO_PATH.match(quoted) and not (ROOT / quoted).exists():
                errors.append(f"line {line}: `{quoted}`: no such file")
    return errors


# -- links ------------------------------------------------------------------------------------


def link_errors(text: str, directory: Path) -> list[str]:
    errors = []
    page = read(text)
    for line, paragraph in page.paragraphs:
        for link in LINK.finditer(paragraph):
            target = link.group(2)
            if re.match(r"^[a-z][a-z+.-]*:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            file = (directory / path).resolve() if path else None
            if file is not None and not file.exists():
                errors.append(f"line {line}: {target}: no such file")
                continue
            if anchor and (file is None or file.suffix == ".md"):
                headings = page.headings if file is None else read(file.read_text()).headings
                if anchor not in anchors(headings):
                    errors.append(f"line {line}: {target}: no heading #{anchor}")
    return errors


# -- the tests --------------------------------------------------------------------------------


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_python_blocks_compile_and_their_names_resolve(page):
    errors = python_errors(page.read_text())
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_ivm_command_lines_parse(page):
    errors = shell_errors(page.read_text())
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_make_targets_exist(page):
    errors = make_errors(page.read_text())
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_quoted_commands_names_and_paths_exist(page):
    errors = text_errors(page.read_text(), page.parent)
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_links_point_to_pages_and_headings_that_exist(page):
    errors = link_errors(page.read_text(), page.parent)
    assert not errors, "\n".join(errors)


def test_the_pages_hold_what_is_checked():
    """The checks read something: the pages' blocks, commands and links are found."""
    texts = [page.read_text() for page in PAGES]
    assert (ROOT / "docs" / "README.md") in PAGES
    assert sum(b.language == "python" for t in texts for b in read(t).blocks) >= 3
    ivm_lines = [c for t in texts for _, c in shell_lines(t) if "ivm " in c]
    assert len(ivm_lines) >= 15
    assert sum(1 for t in texts for _ in make_commands(t)) >= 10
    assert sum(len(LINK.findall(p)) for t in texts for _, p in read(t).paragraphs) >= 20


PLANTED = """\
# A page

```python
from ivm import no_such_name
import ivm
ivm.no_such_function()
```

```python
def broken(:
```

```sh
.venv/bin/ivm verfy v             # a misspelt command
ivm compile view.sql --emitt sql  # a misspelt option
ivm status && make no-such-target
```

`ivm sql --fil x.sql`, `make test-quick`, `ivm.no_such_module`, `ivm/no_such_file.py`.

[a page](no_such_page.md), [a heading](#no-such-heading), [fine](#a-page).
"""


def test_the_checks_find_planted_errors(tmp_path):
    assert len(python_errors(PLANTED)) == 3
    assert [e.split(": ")[1] for e in shell_errors(PLANTED)] == [
        "'.venv/bin/ivm verfy v             # a misspelt command'",
        "'ivm compile view.sql --emitt sql  # a misspelt option'",
    ]
    assert len(make_errors(PLANTED)) == 2
    assert len(text_errors(PLANTED, tmp_path)) == 3
    assert len(link_errors(PLANTED, tmp_path)) == 2

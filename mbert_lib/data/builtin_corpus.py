"""The offline default corpus: English prose every Python installation carries.

Two kinds of text ship with the standard library's sources:
  * docstrings of the standard library modules (those in
    `sys.stdlib_module_names`), their classes and functions;
  * `pydoc_data/topics.py`, the language-reference chapters `help()` shows.
Both are read from the source files with `ast` (no module is imported, so
nothing runs: `antigravity` does not open a browser), in a fixed order
(sorted module names, sorted file paths, source order inside a file).
Only prose paragraphs are kept: no line indented more than the others, not
a list or code, at least 8 words, starting with a capital, ending with '.',
'!', '?' or ':', and mostly plain words (identifiers like `os.path.join()`
count against a paragraph).
Paragraphs are deduplicated (first occurrence wins).

One document per source file (module, classes and functions together) and
one per help topic. The text differs between Python versions, so the corpus
is deterministic per installation, and its sha256 is part of every cache key.
"""

from __future__ import annotations

import ast
import functools
import inspect
import os
import re
import sys
import sysconfig
import textwrap
from collections.abc import Iterator
from pathlib import Path

from mbert_lib.data.provenance import SourceFile, sha256_bytes
from mbert_lib.data.text import Document, count_words, format_documents, split_sentences

_SKIPPED_DIRS = frozenset({"test", "tests", "idle_test", "__pycache__", "site-packages"})
_MIN_WORDS = 8
_MIN_PLAIN_WORD_FRACTION = 0.8
_PLAIN_WORD = re.compile(r"^[\"'(]*[A-Za-z]+(?:[-'][A-Za-z]+)*[\"'),.;:!?]*$")
_LIST_OR_CODE_START = re.compile(r"^(>>>|\.\.\.|[*+|=:#-]|\d+[.)]\s)")


def _stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _source_files() -> Iterator[Path]:
    """Python source files of the standard library modules, in a fixed order."""
    root = _stdlib_dir()
    for name in sorted(sys.stdlib_module_names):
        module, package = root / f"{name}.py", root / name
        if module.is_file():
            yield module
        elif (package / "__init__.py").is_file():
            for directory, subdirs, files in os.walk(package):
                subdirs[:] = sorted(d for d in subdirs if d not in _SKIPPED_DIRS)
                for file in sorted(files):
                    if file.endswith(".py"):
                        yield Path(directory) / file


def _docstrings(tree: ast.AST) -> Iterator[str]:
    """Docstrings of a module, its classes and functions, in source order."""
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    if isinstance(tree, kinds):
        doc = ast.get_docstring(tree, clean=True)
        if doc:
            yield doc
    for child in ast.iter_child_nodes(tree):
        yield from _docstrings(child)


def _help_topics(tree: ast.Module) -> Iterator[str]:
    """The values of `topics = {...}` in pydoc_data/topics.py, sorted by topic."""
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and getattr(node.targets[0], "id", None) == "topics"
        ):
            topics = ast.literal_eval(node.value)
            for key in sorted(topics):
                yield inspect.cleandoc(topics[key])


def _is_prose(paragraph: str) -> bool:
    lines = textwrap.dedent(paragraph).split("\n")
    if any(line[:1].isspace() or _LIST_OR_CODE_START.match(line) for line in lines):
        return False
    words = paragraph.split()
    if len(words) < _MIN_WORDS or "::" in paragraph:
        return False
    if not (words[0][0].isupper() or (words[0][0] in "\"'(" and words[0][1:2].isupper())):
        return False
    if paragraph.rstrip("\"')")[-1:] not in (".", "!", "?", ":"):
        return False
    plain = sum(bool(_PLAIN_WORD.match(w)) for w in words)
    return plain >= _MIN_PLAIN_WORD_FRACTION * len(words)


def _prose_paragraphs(text: str) -> Iterator[str]:
    for paragraph in re.split(r"\n[ \t]*\n", text.strip("\n")):
        if _is_prose(paragraph):
            yield " ".join(paragraph.split())


def _texts_per_document() -> Iterator[list[str]]:
    """Raw texts (docstrings or help topics), grouped by the document they form."""
    for path in _source_files():
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError, UnicodeDecodeError):
            continue  # a few test-data files in the stdlib are deliberately not Python 3
        if path.parts[-2:] == ("pydoc_data", "topics.py"):
            yield from ([topic] for topic in _help_topics(tree))
        else:
            yield list(_docstrings(tree))


@functools.lru_cache(maxsize=1)
def _builtin_documents() -> tuple[tuple[str, ...], ...]:
    seen: set[str] = set()
    documents = []
    for texts in _texts_per_document():
        sentences = []
        for text in texts:
            for paragraph in _prose_paragraphs(text):
                if paragraph not in seen:
                    seen.add(paragraph)
                    sentences.extend(split_sentences(paragraph))
        if sentences:
            documents.append(tuple(sentences))
    return tuple(documents)


def builtin_documents() -> list[Document]:
    """The builtin corpus as documents (lists of sentences); see the module docstring."""
    return [list(document) for document in _builtin_documents()]


def load_builtin_corpus() -> str:
    """The builtin corpus as text: one sentence per line, a blank line between documents.

    That is the input format of BERT's `create_pretraining_data.py`, read back
    by `mbert_lib.data.parse_documents`. Takes a few seconds (it parses the
    standard library's sources); deterministic for a given Python installation.
    """
    return format_documents(builtin_documents())


def builtin_source_file(documents: list[Document]) -> SourceFile:
    """Provenance of the builtin corpus (its text's sha256, the Python version)."""

    text = format_documents(documents).encode("utf-8")
    version = ".".join(map(str, sys.version_info[:3]))
    return SourceFile(
        name=f"builtin: Python {version} standard library docstrings + help topics "
        f"({_stdlib_dir()})",
        size_bytes=len(text),
        sha256=sha256_bytes(text),
        documents=len(documents),
        sentences=sum(map(len, documents)),
        words=count_words(documents),
    )

#!/usr/bin/env bash
# Every source rooftop cites must be one a reader can open: a file in this repository or
# a public URL. Fails (exit 1, one line per finding: file:line: what) when a file under
# crates/, docs/, examples/ or README.md
#   - names a "seed" document (seed 00N, the seeds, the seed's ...), which readers of
#     the repository do not have;
#   - points into a working folder outside the repository (/work/shared, ../shared);
#   - cites a .md or .toml path that does not exist in the repository (resolved against
#     the citing file's folder, the repository root, or any tracked path ending in it).
# Public URLs are not followed (no network); names that stand for a file the reader
# writes (`rooftop ceilings -o my-machine.toml`) or a test's temporary file are listed
# in PLACEHOLDERS below.
#
#   scripts/check-citations.sh --self-test       plants one violation of each kind in a
#                                                temporary tree and checks that both
#                                                modes find exactly the expected ones
#   scripts/check-citations.sh                   everything (what CI runs)
#   scripts/check-citations.sh --crate-strings   in crates/, only what a user sees: string
#                                                literals, the CLI's clap doc comments
#                                                (its --help) and data files' values;
#                                                docs/, examples/, README.md in full
#
# CI runs the self-test and the full check (code comments and identifiers in crates/
# included); --crate-strings checks only what users see.
set -euo pipefail
script=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "${CHECK_CITATIONS_ROOT:-$(dirname "$0")/..}"

mode=full
case "${1:-}" in
  "") ;;
  --crate-strings) mode=crate-strings ;;
  --self-test)
    t=$(mktemp -d /tmp/check-citations.XXXXXX)
    trap 'rm -rf "$t"' EXIT
    mkdir -p "$t/docs" "$t/crates/x/src" "$t/examples"
    printf '# A\nSee [b](b.md) and docs/a.md.\n' >"$t/docs/a.md"
    printf 'As seed 001 shows.\nCopied from /work/shared/notes.\n[gone](missing.md)\n' >"$t/docs/b.md"
    printf '[ok](https://example.com/x/README.md) and github.com/o/r/blob/main/y.md\n' >"$t/README.md"
    printf '// seed 002 says so\nfn f() -> &str { "see formats.md section 4" }\n' >"$t/crates/x/src/lib.rs"
    printf 'rooftop ceilings -o my-machine.toml\n' >"$t/examples/run.sh"
    full=$(CHECK_CITATIONS_ROOT="$t" "$script" 2>/dev/null || true)
    strings=$(CHECK_CITATIONS_ROOT="$t" "$script" --crate-strings 2>/dev/null || true)
    want_full=$'crates/x/src/lib.rs:1: cites a seed document (\'seed 002\'); cite docs/reference/ or a public source
crates/x/src/lib.rs:2: cites \'formats.md\', which is not in the repository
docs/b.md:1: cites a seed document (\'seed 001\'); cite docs/reference/ or a public source
docs/b.md:2: points outside the repository (\'/work/shared\')
docs/b.md:3: cites \'missing.md\', which is not in the repository'
    want_strings=$(printf '%s\n' "$want_full" | grep -v "seed 002")
    if [ "$full" != "$want_full" ] || [ "$strings" != "$want_strings" ]; then
      echo "check-citations: self-test FAILED" >&2
      printf 'full mode found:\n%s\nexpected:\n%s\n' "$full" "$want_full" >&2
      printf 'crate-strings mode found:\n%s\nexpected:\n%s\n' "$strings" "$want_strings" >&2
      exit 1
    fi
    echo "check-citations: self-test OK (5 planted citations found, the comment skipped in --crate-strings)"
    exit 0 ;;
  -h | --help) sed -n '2,24p' "$script"; exit 0 ;;
  *) echo "check-citations: unknown argument '$1' (expected --crate-strings, --self-test or nothing)" >&2; exit 2 ;;
esac

command -v python3 >/dev/null 2>&1 || { echo "check-citations: FAILED: needs python3" >&2; exit 1; }

if [ -z "${CHECK_CITATIONS_ROOT:-}" ] && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files --cached --others --exclude-standard crates docs examples README.md)
  tracked=$(git ls-files --cached --others --exclude-standard)
else
  files=$(find crates docs examples README.md -type f -not -path '*/target/*' 2>/dev/null | sort || true)
  tracked=$(find . -type f -not -path './target/*' -not -path './.git/*' | sed 's|^\./||')
fi

MODE="$mode" FILES="$files" TRACKED="$tracked" python3 - <<'PY'
import os, re, sys

mode = os.environ["MODE"]
files = [f for f in os.environ["FILES"].split("\n") if f]
tracked = set(f for f in os.environ["TRACKED"].split("\n") if f)

# Names that stand for a file the user or a test writes, not a source being cited.
PLACEHOLDERS = {
    "my-machine.toml", "my-gpu.toml", "my-device.toml", "mine.toml", "machine.toml",
    "k.toml", "bad.toml", "good.toml", "p.toml", "u.toml", "x.toml", "user.toml",
    "prop.toml", "box.toml", "box-gz.toml", "cut.toml", "cpu.toml", "ceilings.toml",
    "r.md", "diff.md", "report.md", "step.md",
    "mock-cal.toml", "none.toml", "chain.toml", "many.toml", "lots.toml", "empty.toml",
    "dev.toml",
}

SEED = re.compile(
    r"\bseed[\s_#]*0\d\d"
    r"|\bthe seeds\b|\bseeds'"
    r"|\bseed's\b"
    r"|\bseed (?:documents?|examples?|tables?|rules?|heuristics?|values?|claims?|worked"
    r"|figures?|numbers?|prints|gives|says|states)\b",
    re.IGNORECASE,
)
SHARED = re.compile(r"/work/shared|\.\./shared\b")
# Addresses, with a scheme or without one (`github.com/...`, as the catalog writes them).
URL = re.compile(r"\b(?:https?|file)://[^\s)\]>\"'`]+"
                 r"|\b(?:[a-z0-9-]+\.)+(?:com|org|io|net|dev|cn|gov|edu|ai|app)/[^\s)\]>\"'`;,]+")
MDLINK = re.compile(r"\[[^\]]*\]\((?:https?://|www\.)[^)]*\)")
PATH = re.compile(r"[A-Za-z0-9_./~{}$*-]*[A-Za-z0-9_]\.(?:md|toml)\b")

def resolves(tok, citing):
    if any(c in tok for c in "{}$*~") or tok.startswith("/"):
        return True  # a template or an absolute path on the user's machine: not ours
    if os.path.basename(tok) in PLACEHOLDERS:
        return True
    here = os.path.normpath(os.path.join(os.path.dirname(citing), tok))
    root = os.path.normpath(tok)
    if here in tracked or root in tracked or os.path.exists(here) or os.path.exists(root):
        return True
    t = tok.lstrip("./")
    return any(p == t or p.endswith("/" + t) for p in tracked)

def rust_strings(text):
    """Per line of a Rust file, the text inside its string literals (joined by spaces)
    and the text of its `///` doc comments."""
    strings = [[] for _ in range(text.count("\n") + 1)]
    docs = [[] for _ in range(len(strings))]
    i, line, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            if text.startswith("///", i) and not text.startswith("////", i):
                docs[line].append(text[i + 3:j])
            i = j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    line += text[i] == "\n"
                    i += 1
        elif c == '"' or (c in "br" and re.match(r'(?:br|r|b)#*"', text[i:i + 40] or "")
                          and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))):
            m = re.match(r'(b?r)(#*)"', text[i:i + 40])
            if m:  # raw string: ends at the same number of #s
                end = '"' + m.group(2)
                i += len(m.group(0))
                j = text.find(end, i)
                j = n if j < 0 else j
                body, i = text[i:j], j + len(end)
            else:
                i += 2 if c == "b" else 1
                start = i
                while i < n and text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
                body, i = text[start:i], i + 1
            for k, part in enumerate(body.split("\n")):
                strings[line + k].append(part)
            line += body.count("\n")
        elif c == "'":
            m = re.match(r"'(?:\\.[^']*|[^'\\\n])'", text[i:i + 12])
            i += len(m.group(0)) if m else 1
        else:
            i += 1
    return [" ".join(s) for s in strings], [" ".join(d) for d in docs]

def lines_to_check(path, text):
    """(line number, text) pairs of the parts of a file that are checked."""
    lines = text.splitlines()
    if mode != "crate-strings" or not path.startswith("crates/"):
        return list(enumerate(lines, 1))
    if path.endswith(".rs"):
        strings, docs = rust_strings(text)
        help_text = path.startswith("crates/rooftop-cli/src/")
        return [(k + 1, s + (" " + d if help_text else ""))
                for k, (s, d) in enumerate(zip(strings, docs))]
    if path.endswith((".toml", ".sh", ".py", ".yaml", ".yml")):
        return [(k, l) for k, l in enumerate(lines, 1) if not l.strip().startswith("#")]
    return list(enumerate(lines, 1))

findings = []
for path in files:
    if not os.path.isfile(path) or path.endswith(".proptest-regressions"):
        continue
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (UnicodeDecodeError, OSError):
        continue  # binary fixtures
    for n, t in lines_to_check(path, text):
        for m in SEED.finditer(t):
            findings.append(f"{path}:{n}: cites a seed document ({m.group(0)!r}); cite "
                            "docs/reference/ or a public source")
        for m in SHARED.finditer(t):
            findings.append(f"{path}:{n}: points outside the repository ({m.group(0)!r})")
        # A Markdown link to an address may name the file it points at in its text.
        t = MDLINK.sub(" ", t)
        for tok in PATH.findall(URL.sub(" ", t)):
            if not resolves(tok, path):
                findings.append(f"{path}:{n}: cites {tok!r}, which is not in the repository")

for f in findings:
    print(f)
scope = "what users see in crates/; docs/, examples/, README.md" if mode != "full" \
    else "crates/, docs/, examples/, README.md"
if findings:
    print(f"check-citations: FAILED: {len(findings)} citation(s) a reader cannot follow "
          f"({scope})", file=sys.stderr)
    sys.exit(1)
print(f"check-citations: OK: {len(files)} files ({scope}) cite only the repository "
      "and public sources")
PY

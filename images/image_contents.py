"""What images/Dockerfile is made of, read without building it: its stages and what each
copies, installs and runs; the build context that .dockerignore lets in; and which
Debian packages a list of packages brings with it, from this machine's dpkg database
(Debian 12, as the images are). test_images.py checks the images with it. As a program,
`/usr/bin/python3 images/image_contents.py` estimates each image's size from its
package list (docs/images.md)."""

import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCKERFILE = os.path.join(REPO_ROOT, "images", "Dockerfile")
DOCKERIGNORE = os.path.join(REPO_ROOT, ".dockerignore")
# The images' final stages (their --target) and the repositories the chart names them by.
IMAGES = {"operator": "edgetrain/operator", "agent": "edgetrain/agent"}


# -- the Dockerfile ------------------------------------------------------------------------

@dataclass
class Instruction:
    line: int      # where it starts in the Dockerfile
    keyword: str   # upper case: FROM, RUN, COPY, ...
    flags: dict    # --name=value before the arguments (--from, --mount, ...)
    args: str      # the rest, continuation lines joined

    def where(self):
        return f"images/Dockerfile:{self.line}"


@dataclass
class Copy:
    instruction: Instruction
    sources: list
    dest: str
    stage: str = ""  # --from, "" for the build context


@dataclass
class Stage:
    name: str
    base: str
    parent: "Stage | None"  # the stage it is FROM, when it is one
    instructions: list = field(default_factory=list)

    def chain(self):
        """This stage and the stages it is built on, the first one first."""
        return (self.parent.chain() if self.parent else []) + [self]

    def own(self, keyword):
        return [i for i in self.instructions if i.keyword == keyword]

    def inherited(self, keyword):
        return [i for s in self.chain() for i in s.own(keyword)]

    def env(self):
        env = {}
        for i in self.inherited("ENV"):
            env.update(parse_env(i.args))
        return env

    def workdir(self):
        found = self.inherited("WORKDIR")
        return found[-1].args.strip() if found else "/"

    def copies(self):
        out = []
        for i in self.own("COPY"):
            words = json.loads(i.args) if i.args.startswith("[") else i.args.split()
            out.append(Copy(i, words[:-1], words[-1], i.flags.get("from", "")))
        return out

    def commands(self):
        """(instruction, argv) of every simple command its RUNs run, in order, its own
        and those of the stages it is built on."""
        return [(i, argv) for i in self.inherited("RUN") for argv in simple_commands(i.args)]

    def apt_installs(self):
        """(instruction, packages, options) of its own `apt-get install` commands."""
        out = []
        for i in self.own("RUN"):
            for argv in simple_commands(i.args):
                if argv[:1] in (["apt-get"], ["apt"]) and "install" in argv:
                    rest = argv[argv.index("install") + 1:]
                    out.append((i, [w for w in rest if not w.startswith("-")], [w for w in rest if w.startswith("-")]))
        return out

    def packages(self):
        return [p for _, packages, _ in self.apt_installs() for p in packages]

    def built_targets(self):
        """{CMake target: the folder of its build} of every `cmake --build DIR --target T`."""
        out = {}
        for _, argv in self.commands():
            if argv[:2] == ["cmake", "--build"] and "--target" in argv:
                targets = argv[argv.index("--target") + 1:]
                for t in targets[:next((k for k, w in enumerate(targets) if w.startswith("-")), len(targets))]:
                    out[t] = argv[2]
        return out

    def last(self, keyword):
        found = self.inherited(keyword)
        return found[-1] if found else None

    def entrypoint(self):
        i = self.last("ENTRYPOINT")
        return json.loads(i.args) if i else None

    def user(self):
        i = self.last("USER")
        return i.args.strip() if i else None


def parse_env(args):
    """ENV's KEY=VALUE pairs (or the old KEY VALUE form)."""
    words = shlex.split(args)
    if words and "=" not in words[0]:
        return {words[0]: " ".join(words[1:])}
    return dict(w.split("=", 1) for w in words)


def simple_commands(script):
    """A shell command line's simple commands as argv lists, without the leading
    VAR=value assignments; enough of sh for a Dockerfile's RUN lines."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands, argv = [], []
    for word in lexer:
        if word in ("&&", "||", ";", "|", "&", "(", ")"):
            commands.append(argv)
            argv = []
        elif argv or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word):
            argv.append(word)
    commands.append(argv)
    return [c for c in commands if c]


def read_dockerfile(path=DOCKERFILE):
    """Its stages, in order."""
    with open(path) as f:
        lines = f.read().split("\n")
    instructions, text, start = [], "", 0
    for n, line in enumerate(lines, 1):
        if not text and not line.strip():
            continue
        if line.lstrip().startswith("#"):  # comments go, inside continuations too
            continue
        if not text:
            start = n
        if line.rstrip().endswith("\\"):
            text += line.rstrip()[:-1] + " "
            continue
        text += line
        keyword, _, rest = text.strip().partition(" ")
        flags = {}
        rest = rest.strip()
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            name, _, value = flag[2:].partition("=")
            flags[name] = value
            rest = rest.strip()
        instructions.append(Instruction(start, keyword.upper(), flags, rest))
        text = ""
    stages = {}
    for i in instructions:
        if i.keyword == "FROM":
            words = i.args.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else str(len(stages))
            stages[name] = Stage(name, words[0], stages.get(words[0]))
        elif stages:
            list(stages.values())[-1].instructions.append(i)
    return list(stages.values())


# -- the build context ---------------------------------------------------------------------

def _pattern_regex(pattern):
    """A .dockerignore pattern (Go's filepath.Match, with ** for any folders) as a regex."""
    out, k = "", 0
    while k < len(pattern):
        if pattern.startswith("**/", k):
            out, k = out + "(?:.*/)?", k + 3
        elif pattern.startswith("**", k):
            out, k = out + ".*", k + 2
        elif pattern[k] == "*":
            out, k = out + "[^/]*", k + 1
        elif pattern[k] == "?":
            out, k = out + "[^/]", k + 1
        else:
            out, k = out + re.escape(pattern[k]), k + 1
    return re.compile(out)


def read_dockerignore(path=DOCKERIGNORE):
    """[(negated, regex, pattern)] in order: the last that matches a path, or a folder
    above it, decides whether it stays out."""
    rules = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            pattern = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
            rules.append((negated, _pattern_regex(pattern), pattern))
    return rules


def in_context(path, rules):
    """Whether the file at `path` (relative to the repository) is sent to the builder."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]
    inside = True
    for negated, regex, _ in rules:
        if any(regex.fullmatch(p) for p in prefixes):
            inside = negated
    return inside


def repository_files(root=REPO_ROOT):
    """The files of the checkout a developer would build from: those git tracks and
    those it does not ignore (every file below root outside a git checkout)."""
    p = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       capture_output=True, text=True)
    if p.returncode == 0:
        return sorted(f for f in set(p.stdout.split("\0")) if f and os.path.isfile(os.path.join(root, f)))
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".git"]
        out += [os.path.relpath(os.path.join(d, f), root) for f in files]
    return sorted(out)


def context_files(rules, files):
    """Those of `files` (repository_files()) that are sent to the builder."""
    return [f for f in files if in_context(f, rules)]


def copied_files(source, files):
    """The context files a COPY source (a path or a glob, relative to the context) names."""
    source = os.path.normpath(source).lstrip("/")
    if source == ".":
        return list(files)
    return [f for f in files if fnmatch.fnmatchcase(f, source) or f.startswith(source.rstrip("/") + "/")]


# -- Debian packages -----------------------------------------------------------------------

def _names(field_text):
    """A Depends-like field as or-groups of package names (versions, architectures gone)."""
    groups = []
    for group in field_text.split(","):
        names = [re.sub(r"\(.*?\)|\[.*?\]|<.*?>", "", alt).strip().split(":")[0] for alt in group.split("|")]
        names = [n for n in names if n]
        if names:
            groups.append(names)
    return groups


class Packages:
    """This machine's installed packages: what each depends on and provides, and its size."""

    def __init__(self):
        out = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Package}\t${Status}\t${Essential}\t${Installed-Size}\t"
             "${Provides}\t${Pre-Depends}\t${Depends}\n"],
            capture_output=True, text=True, check=True).stdout
        self.depends, self.size, self.essential, self.providers = {}, {}, set(), {}
        for line in out.splitlines():
            name, status, essential, size, provides, pre, depends = line.split("\t")
            if not status.endswith(" installed"):
                continue
            self.depends.setdefault(name, []).extend(_names(pre) + _names(depends))
            self.size[name] = int(size or 0)
            if essential == "yes":
                self.essential.add(name)
            for (virtual, *_) in _names(provides):
                self.providers.setdefault(virtual, set()).add(name)

    def closure(self, roots):
        """The packages apt installs for `roots`, without recommends: each or-group
        resolved by an alternative already chosen (or provided by a chosen one), else by
        its first alternative, a virtual one by the packages providing it here."""
        chosen, todo = set(roots), list(roots)
        while todo:
            for group in self.depends.get(todo.pop(), []):
                if any(a in chosen or self.providers.get(a, set()) & chosen for a in group):
                    continue
                first = group[0]
                picked = {first} if first in self.depends or first not in self.providers else self.providers[first]
                for p in picked - chosen:
                    chosen.add(p)
                    todo.append(p)
        return chosen

    def base(self):
        """What debian:bookworm-slim has at the least: the Essential packages, apt and what
        they depend on (the image has the rest of Priority: required too)."""
        return self.closure(sorted(self.essential | {"apt"}))


def owners(paths):
    """{path: package} for the paths a package installed (one dpkg -S for them all)."""
    if not paths:
        return {}
    p = subprocess.run(["dpkg-query", "-S", *sorted(set(paths))], capture_output=True, text=True)
    found = {}
    for line in p.stdout.splitlines():
        if line.startswith("diversion "):
            continue
        packages, _, path = line.partition(": ")
        found[path] = packages.split(",")[0].strip().split(":")[0]
    return found


def loaded_libraries(binary):
    """[(soname, path or None when the loader finds none)] of what `ldd binary` loads."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    libraries = []
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (not found|(\S+) \(0x[0-9a-f]+\))", line)
        if m:
            libraries.append((m.group(1), m.group(3)))
        elif (m := re.match(r"\s*(/\S+) \(0x[0-9a-f]+\)", line)):  # the loader itself
            libraries.append((os.path.basename(m.group(1)), m.group(1)))
    return libraries


def file_packages(paths):
    """{path: the package that installed it}, looking under both the path given and the
    file it links to, with and without /usr (Debian 12 merged /lib into /usr/lib, but
    its packages still name either)."""
    candidates = {}
    for path in paths:
        real = os.path.realpath(path)
        forms = {path, real}
        forms |= {f[len("/usr"):] for f in forms if f.startswith("/usr/")} | {"/usr" + f for f in forms}
        candidates[path] = [path, real, *sorted(forms)]
    found = owners([f for forms in candidates.values() for f in forms])
    return {path: next((found[f] for f in forms if f in found), None) for path, forms in candidates.items()}


def build_inputs(build_dir, targets):
    """The files outside the repository and the build that building `targets` reads, from
    the build's own records: what ninja links and every header its compiler read (its
    deps log), and the programs it runs (CMake's cache, the build's commands)."""
    ninja = lambda *args: subprocess.run(["ninja", "-C", build_dir, "-t", *args], capture_output=True,
                                         text=True, check=True).stdout.split("\n")
    inputs = [i for i in ninja("inputs", *targets) if i]
    objects = [i for i in inputs if i.endswith(".o")]
    headers = [line.strip() for line in ninja("deps", *objects) if line.startswith("    ")]
    with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
        tools = re.findall(r"^\w+:FILEPATH=(/usr/bin/\S+)$", f.read(), re.M)
    with open(os.path.join(build_dir, "build.ninja")) as f:
        tools += re.findall(r"(?<![\w/])(/usr/bin/[\w+.-]+)", f.read())
    outside = (os.path.realpath(REPO_ROOT) + "/", os.path.realpath(build_dir) + "/")
    files = {p for p in inputs + headers + tools if p.startswith("/")}
    return sorted(p for p in files if not os.path.realpath(p).startswith(outside) and os.path.isfile(p))


# -- sizes ---------------------------------------------------------------------------------

def estimate(stage, stages, packages, build_dir):
    """(MiB of the base image's packages, MiB of the packages the stage adds, MiB of the
    programs it copies from this machine's build, the packages it adds, largest first),
    from installed sizes on this machine."""
    base = packages.base()
    added = packages.closure(stage.packages()) - base
    programs = [os.path.join(build_dir, "bin", os.path.basename(source)) for c in stage.copies() if c.stage
                for source in c.sources if os.path.basename(source) in stages[c.stage].built_targets()]
    mib = lambda names: sum(packages.size.get(p, 0) for p in names) / 1024
    return (mib(base), mib(added), sum(os.path.getsize(p) for p in programs if os.path.exists(p)) / 2**20,
            sorted(added, key=lambda p: -packages.size.get(p, 0)))


def download_sizes(names):
    """{package: bytes of its .deb} from apt's lists (the version apt would install)."""
    out = subprocess.run(["apt-cache", "show", "--no-all-versions", *sorted(names)], capture_output=True,
                         text=True).stdout
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^Package: (\S+)\n(?:.+\n)*?Size: (\d+)$", out, re.M)}


def main():
    build_dir = os.environ.get("EDGETRAIN_BUILD_DIR") or os.path.join(REPO_ROOT, "build")
    packages = Packages()
    stages = {s.name: s for s in read_dockerfile()}
    print("Estimates from this machine's packages (amd64; arm64's sizes differ): installed sizes, and")
    print("the packages' .deb files, compressed (xz) as a registry's layers are (gzip, somewhat larger).")
    for name, repository in IMAGES.items():
        base, added, copied, names = estimate(stages[name], stages, packages, build_dir)
        debs = download_sizes(names)
        largest = ", ".join(f"{p} {packages.size.get(p, 0) / 1024:.0f}" for p in names[:8])
        print(f"{repository}: {base + added + copied:.0f} MiB = base {base:.0f} + {len(names)} packages {added:.0f} "
              f"({sum(debs.values()) / 2**20:.0f} as .debs, {len(debs)} found) + program {copied:.1f}; "
              f"largest (MiB): {largest}")


if __name__ == "__main__":
    sys.exit(main())

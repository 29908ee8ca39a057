"""images/Dockerfile checked without building it (no Docker engine runs here): the build
context holds every file the Dockerfile copies and configures as the build stage
configures it; what a final stage copies from a build stage is made there; each final
stage is Debian 12, non-root, and the image the chart, the operator and the node
emulator's image table expect; and every shared library the built programs load comes
from a package the final stage installs, or one those depend on (ldd against the
package list, through this machine's dpkg database). ctest images, or
`cd images && /usr/bin/python3 -m unittest -v test_images`."""

import fnmatch
import functools
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import yaml

import image_contents as ic

BUILD_DIR = os.environ.get("EDGETRAIN_BUILD_DIR") or os.path.join(ic.REPO_ROOT, "build")
VALUES = os.path.join(ic.REPO_ROOT, "helm", "edgetrain", "values.yaml")
CHART = os.path.join(ic.REPO_ROOT, "helm", "edgetrain", "Chart.yaml")
IMAGE_TABLE = os.path.join(ic.REPO_ROOT, "tests", "kube", "images.yaml")
JOB_OBJECTS = os.path.join(ic.REPO_ROOT, "operator", "controller", "job_objects.cc")
DEPS = os.path.join(ic.REPO_ROOT, "scripts", "deps")


def read(path):
    with open(path) as f:
        return f.read()


def debian_12():
    try:
        return read("/etc/debian_version").startswith("12")
    except OSError:
        return False


STAGES = {s.name: s for s in ic.read_dockerfile()}
FINAL = {name: STAGES.get(name) for name in ic.IMAGES}


class TheBuildContext(unittest.TestCase):
    """What the builder is sent (.dockerignore) and what the stages copy from it."""

    @classmethod
    def setUpClass(cls):
        cls.rules = ic.read_dockerignore()
        cls.repository = ic.repository_files()
        cls.context = ic.context_files(cls.rules, cls.repository)

    def test_every_file_copied_from_the_context_is_there(self):
        copies = [c for s in STAGES.values() for c in s.copies() if not c.stage]
        self.assertTrue(copies, "no COPY from the build context")
        for c in copies:
            for source in c.sources:
                with self.subTest(line=c.instruction.line, source=source):
                    self.assertTrue(ic.copied_files(source, self.repository),
                                    f"{c.instruction.where()}: COPY {source}: no such file in the repository")
                    self.assertTrue(ic.copied_files(source, self.context),
                                    f"{c.instruction.where()}: COPY {source}: .dockerignore keeps it out of "
                                    "the build context")

    def test_every_file_let_in_exists(self):
        for negated, regex, pattern in self.rules:
            if negated:
                self.assertTrue(any(regex.fullmatch(f) or f.startswith(pattern + "/") for f in self.repository),
                                f".dockerignore lets in !{pattern}, which the repository does not have")

    def test_the_context_configures_and_has_the_targets_built(self):
        # What the build stage runs after COPY . . (images/Dockerfile), on exactly the
        # files .dockerignore lets in: a folder the top CMakeLists.txt adds but the
        # context lacks fails here as it would in the image.
        configure = [argv for _, argv in STAGES["build"].commands() if argv[:2] == ["cmake", "-S"]]
        self.assertEqual(len(configure), 1, "the build stage configures once")
        targets = {t for s in STAGES.values() for t in s.built_targets()}
        self.assertEqual(targets, {"edgetrain-operator", "edgetrain-agent"})
        with tempfile.TemporaryDirectory(prefix="image-context-") as root:
            for f in self.context:
                os.makedirs(os.path.dirname(os.path.join(root, f)), exist_ok=True)
                shutil.copy(os.path.join(ic.REPO_ROOT, f), os.path.join(root, f))
            p = subprocess.run(configure[0], cwd=root, capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, f"{' '.join(configure[0])} in the build context (the files "
                             f".dockerignore lets in) fails:\n{p.stderr[-3000:]}\n{p.stdout[-1500:]}")
            ninja = read(os.path.join(root, configure[0][configure[0].index("-B") + 1], "build.ninja"))
            for t in sorted(targets):
                self.assertRegex(ninja, rf"\nbuild {re.escape(t)}: phony ", f"no CMake target {t}")

    def test_what_a_final_stage_copies_from_a_build_stage_is_made_there(self):
        # A program: <WORKDIR>/<build folder>/bin/<target> of a target the stage builds
        # (CMAKE_RUNTIME_OUTPUT_DIRECTORY); a data set: a folder scripts/deps fills below
        # the stage's EDGETRAIN_DATA_DIR.
        deps = read(DEPS)
        copies = [c for name in ic.IMAGES for c in FINAL[name].copies() if c.stage]
        self.assertTrue(copies)
        for c in copies:
            stage = STAGES.get(c.stage)
            self.assertIsNotNone(stage, f"{c.instruction.where()}: no stage {c.stage}")
            made = {os.path.join(stage.workdir(), folder, "bin", t) for t, folder in stage.built_targets().items()}
            data_dir = stage.env().get("EDGETRAIN_DATA_DIR", "")
            runs_deps = any(argv[0].endswith("scripts/deps") for _, argv in stage.commands())
            for source in c.sources:
                with self.subTest(line=c.instruction.line, source=source):
                    if source in made:
                        continue
                    relative = os.path.relpath(source, data_dir) if data_dir else ".."
                    self.assertFalse(relative.startswith(".."), f"{c.instruction.where()}: {source} is not "
                                     f"built in stage {c.stage}, which builds {sorted(made)}")
                    self.assertTrue(runs_deps, f"{c.instruction.where()}: stage {c.stage} never runs scripts/deps")
                    self.assertRegex(deps, rf'"\$data_dir/{re.escape(relative)}[/"]',
                                     f"{c.instruction.where()}: scripts/deps writes nothing to {source}")


class TheFinalStages(unittest.TestCase):
    """Each image as the chart, the operator and the node emulator expect it."""

    def test_debian_12_without_recommends_non_root_and_its_program_first(self):
        for name, stage in FINAL.items():
            with self.subTest(image=name):
                self.assertIsNotNone(stage, f"images/Dockerfile has no stage {name}")
                self.assertRegex(stage.base, r"^debian:(bookworm|12)(-slim)?$")
                self.assertTrue(stage.packages(), "it installs its runtime libraries")
                for i, _, options in stage.apt_installs():
                    self.assertIn("--no-install-recommends", options, i.where())
                self.assertRegex(stage.user() or "", r"^[1-9][0-9]*:[1-9][0-9]*$", "a numeric user and group, not root")
                program = stage.entrypoint()
                self.assertEqual(len(program or []), 1, "the program alone: pods give args only")
                self.assertIn(program[0], [c.dest for c in stage.copies()], "its entry point is a program it copies")

    def test_users_are_the_charts_and_the_operators_pods(self):
        values = yaml.safe_load(read(VALUES))
        pods = re.findall(r'\{"runAsUser", (\d+)\}', read(JOB_OBJECTS))
        self.assertEqual(len(pods), 1, JOB_OBJECTS)
        self.assertEqual(FINAL["operator"].user(), f"{values['operator']['runAsUser']}:{values['operator']['runAsUser']}",
                         "the operator's USER is the chart's operator.runAsUser")
        self.assertEqual(FINAL["agent"].user(), f"{pods[0]}:{pods[0]}",
                         "the agent's USER is the one operator/controller/job_objects.cc runs its pods as")

    def test_the_chart_names_these_images(self):
        values = yaml.safe_load(read(VALUES))
        self.assertEqual(values["image"]["repository"], ic.IMAGES["operator"])
        self.assertEqual(values["agent"]["image"]["repository"], ic.IMAGES["agent"])

    def test_the_node_emulators_image_table_runs_them_as_built(self):
        # tests/kube/images.yaml stands in for these images in every cluster test: its
        # entry point, environment and files must be the Dockerfile's.
        table = yaml.safe_load(read(IMAGE_TABLE))["images"]
        tag = yaml.safe_load(read(CHART))["appVersion"]
        for name, repository in ic.IMAGES.items():
            stage = FINAL[name]
            with self.subTest(image=name):
                entry = next((e for e in table if fnmatch.fnmatchcase(f"{repository}:{tag}", e["pattern"])), None)
                self.assertIsNotNone(entry, f"no entry of {IMAGE_TABLE} runs {repository}:{tag}")
                self.assertEqual(entry.get("entrypoint"), stage.entrypoint())
                self.assertEqual(entry.get("env", {}), stage.env())
                destinations = [c.dest for c in stage.copies()]
                for path in entry.get("files", {}):
                    self.assertTrue(any(d == path or d.startswith(path + "/") for d in destinations),
                                    f"the image table's {path} is not in the {name} image: it copies {destinations}")


requires_debian_12 = unittest.skipUnless(
    debian_12(), "the package checks read this machine's dpkg database, which must be Debian 12's")


@functools.cache
def installed_packages():
    """This machine's packages and what the base image has of them: read from dpkg once
    for every class that checks against them."""
    packages = ic.Packages()
    return packages, packages.base()


class PackageCheck(unittest.TestCase):
    """Files this machine's programs use, each owned by a package that a stage installs,
    brings with it (Depends, Pre-Depends) or has from its base image."""

    @classmethod
    def setUpClass(cls):
        cls.packages, cls.base = installed_packages()

    def check_owners(self, paths, roots, who, what, fix):
        """Fails naming, package by package, the paths `who` uses (`what`: "loads",
        "reads") that neither `roots`, what they bring, nor the base image has; `fix` says
        where a missing package goes. Returns the packages the paths came from."""
        owner = ic.file_packages(paths)
        installed = self.packages.closure(roots) | self.base
        missing = {}
        for path in paths:
            if owner[path] not in installed:
                missing.setdefault(owner[path], []).append(path)
        listed = lambda found: ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        problems = [f"{who} {what} {listed(found)}, which no Debian package installed" if package is None
                    else f"{who} {what} {listed(found)} from package {package}, which {fix[0]} neither installs "
                         f"nor gets through a dependency: add {package} to {fix[1]}"
                    for package, found in sorted(missing.items(), key=lambda m: m[0] or "")]
        if problems:
            self.fail("\n" + "\n".join(problems))
        return set(owner.values())

    def built(self, program):
        binary = os.path.join(BUILD_DIR, "bin", program)
        if not os.access(binary, os.X_OK):
            self.skipTest(f"{binary} is not built (make build, or EDGETRAIN_BUILD_DIR naming a build)")
        return binary


@requires_debian_12
class TheRuntimeLibraries(PackageCheck):
    """ldd of each built program against the packages its final stage installs."""

    def check(self, name):
        stage = FINAL[name]
        program = os.path.basename(stage.entrypoint()[0])
        t0 = time.monotonic()
        libraries = ic.loaded_libraries(self.built(program))
        self.assertEqual([soname for soname, path in libraries if not path], [], f"{program} loads libraries "
                         "that ldd does not find here")
        roots = stage.packages()
        used = self.check_owners(sorted(path for _, path in libraries), roots, program, "loads",
                                 (f"the {name} stage", f"its apt-get install ({stage.apt_installs()[0][0].where()})"))
        print(f"\n{program}: {len(libraries)} libraries from {len(used)} packages ({len(used & self.base)} of them "
              f"the base image's), all in the {name} stage's {len(roots)} packages and the "
              f"{len(self.packages.closure(roots) - self.base)} they bring ({time.monotonic() - t0:.2f} s)")

    def test_the_operators_libraries(self):
        self.check("operator")

    def test_the_agents_libraries(self):
        self.check("agent")


@requires_debian_12
class TheBuildStage(PackageCheck):
    """What building the two programs read on this machine (headers, libraries linked,
    the compiler and tools) against what the build stage installs: scripts/deps with the
    Dockerfile's arguments."""

    def test_its_packages_provide_everything_the_build_reads(self):
        t0 = time.monotonic()
        targets = sorted({t for s in STAGES.values() for t in s.built_targets()})
        for t in targets:
            self.built(t)
        deps = [argv for _, argv in STAGES["build"].commands() if argv[0].endswith("scripts/deps")]
        self.assertEqual(len(deps), 1, "the build stage installs its packages with scripts/deps")
        command = " ".join(deps[0])
        roots = subprocess.run([DEPS, *deps[0][1:], "--list"], capture_output=True, text=True,
                               check=True).stdout.split()
        files = ic.build_inputs(BUILD_DIR, targets)
        used = self.check_owners(files, roots, f"building {' and '.join(targets)}", "reads",
                                 (f"`{command}`", "its toolchain or libraries (scripts/deps)"))
        print(f"\nthe build stage: {len(files)} files from {len(used)} packages, all in the {len(roots)} "
              f"`{command}` installs and what they bring ({time.monotonic() - t0:.2f} s)")


if __name__ == "__main__":
    unittest.main()

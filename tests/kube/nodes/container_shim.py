"""The node emulator's container runtime, run once per container start as
`python3 container_shim.py SPEC.json ERROR_FD` (the kubelet writes SPEC.json).

Like a container shim, this process stays outside the container, in the pod's
namespaces: it joins the node's network namespace (as root), makes new mount, PID and
UTS namespaces (and, without root, a user namespace mapping this user to root), and
forks the container's first process, PID 1 of the new PID namespace. That one builds the
container's root file system and execs the container's program; the shim forwards
SIGTERM and friends to it and exits with its status (128+N when signal N ended it).

The root file system is this machine's Debian: /etc, /usr, /var and /opt as overlays
whose writes land in a tmpfs of the pod's own, empty /home, /root, /tmp, /run; then the
pod's volumes and the image's files are bound in, /etc/hosts, /etc/resolv.conf and
/etc/hostname are the pod's, and with readOnlyRootFilesystem everything but the volumes
is read-only. As root the program then runs as runAsUser/runAsGroup.

Nothing outlives its kubelet: the shim gets SIGKILL when the kubelet thread that started
it ends (PR_SET_PDEATHSIG), PID 1 gets SIGKILL when the shim ends, and when PID 1 ends
the kernel kills every other process of its PID namespace (a shim killed before PID 1
held on to it is seen as the end of a pipe only the shim held). A failure before the exec is
written to ERROR_FD, which the kubelet reads as the container's start error."""

import ctypes
import json
import os
import pwd
import signal
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWPID = 0x20000, 0x4000000, 0x20000000
CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG = 1

LAYERED = ("etc", "usr", "var", "opt")
EMPTY = ("boot", "home", "media", "mnt", "root", "srv", "run")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

libc = ctypes.CDLL(None, use_errno=True)


def _check(result, what):
    if result != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def mount(source, target, fstype, flags, data=None):
    _check(libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(),
                      ctypes.c_ulong(flags), data and data.encode()), f"mount {target}")


def die_with_parent():
    _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")


def in_root(root, path):
    """`path` inside the container's root, its symlinks followed as the container would
    see them (an absolute link such as /var/run -> /run stays inside), so that nothing
    made for a mount lands in the host's tree (what runc's securejoin does)."""
    parts = [p for p in path.split("/") if p]
    resolved = []
    for _ in range(255):
        if not parts:
            return os.path.join(root, *resolved) if resolved else root
        part = parts.pop(0)
        if part == "..":
            resolved = resolved[:-1]
            continue
        if part == ".":
            continue
        here = os.path.join(root, *resolved, part)
        if os.path.islink(here):
            target = os.readlink(here)
            if target.startswith("/"):
                resolved = []
            parts = [p for p in target.split("/") if p] + parts
        else:
            resolved.append(part)
    raise OSError(40, f"too many levels of symbolic links in {path}")


def build_root(spec):
    root, layers = spec["rootfs"], spec["layers"]
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below propagates to the host
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    mount("tmpfs", layers, "tmpfs", 0, "mode=0755")
    for entry in sorted(os.listdir("/")):
        host, mine = "/" + entry, os.path.join(root, entry)
        if os.path.islink(host):
            os.symlink(os.readlink(host), mine)  # /bin -> usr/bin, ...
        elif entry in LAYERED:
            os.mkdir(mine)
            upper, work = os.path.join(layers, entry, "upper"), os.path.join(layers, entry, "work")
            os.makedirs(upper)
            os.makedirs(work)
            mount("overlay", mine, "overlay", 0, f"lowerdir={host},upperdir={upper},workdir={work}")
        elif entry in EMPTY:
            os.mkdir(mine, 0o755)
    os.mkdir(os.path.join(root, "tmp"))
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    for entry in ("proc", "sys", "dev"):
        os.mkdir(os.path.join(root, entry))
    try:  # this PID namespace's own /proc where the kernel allows it, else the host's
        mount("proc", os.path.join(root, "proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        mount("/proc", os.path.join(root, "proc"), None, MS_BIND | MS_REC)
    mount("/sys", os.path.join(root, "sys"), None, MS_BIND | MS_REC)
    mount("/dev", os.path.join(root, "dev"), None, MS_BIND | MS_REC)
    for m in spec["mounts"]:
        target = in_root(root, m["target"])
        if os.path.isdir(m["source"]):
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.exists(target):
                open(target, "w").close()
        mount(m["source"], target, None, MS_BIND | MS_REC)
        if m.get("readOnly"):
            mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    workdir = in_root(root, spec.get("workingDir", "/"))
    os.makedirs(workdir, exist_ok=True)
    if spec.get("readOnlyRootFilesystem"):
        for entry in LAYERED:
            if os.path.isdir(os.path.join(root, entry)):
                mount(None, os.path.join(root, entry), None, MS_REMOUNT | MS_RDONLY)
        mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chroot(root)
    os.chdir(spec.get("workingDir") or "/")


def become_user(spec, env):
    uid, gid = spec.get("uid"), spec.get("gid")
    if uid is None:
        return
    os.setgroups(spec.get("supplementalGroups") or [])
    os.setgid(gid if gid is not None else 0)
    os.setuid(uid)


def home_of(uid):
    try:
        return pwd.getpwuid(uid).pw_dir
    except KeyError:
        return "/"


def shim_gone(shim_alive_fd):
    """True once the shim has ended: the pipe's only write end was the shim's, and the
    kernel closes it before it sends the parent-death signal, so a shim that died before
    our prctl shows here as end of file (its signal went to no one; pid 1 of a PID
    namespace cannot ask getppid, which is 0 for it)."""
    os.set_blocking(shim_alive_fd, False)
    try:
        return os.read(shim_alive_fd, 1) == b""
    except BlockingIOError:
        return False


def container_process(spec, error_fd, shim_alive_fd):
    """PID 1 of the pod's PID namespace: build the root, drop to the pod's user, exec."""
    try:
        die_with_parent()
        libc.sethostname(spec["hostname"].encode(), len(spec["hostname"]))
        build_root(spec)
        env = dict(spec["env"])
        env.setdefault("PATH", DEFAULT_PATH)
        become_user(spec, env)
        env.setdefault("HOME", home_of(os.getuid()))
        die_with_parent()  # a change of credentials clears it
        if shim_gone(shim_alive_fd):  # killed before we held on to it: nothing may outlive it
            os._exit(137)
        argv = spec["argv"]
        os.set_inheritable(error_fd, False)  # closes at the exec: the kubelet reads EOF
        os.execvpe(argv[0], argv, env)
    except Exception as e:  # the container did not start: say why, as a runtime does
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        what = spec["argv"][0] if spec.get("argv") else "(no command)"
        os.write(error_fd, f'exec: "{what}": {reason}'.encode())
        os._exit(128)


def enter_namespaces(spec):
    if spec.get("netns"):
        fd = os.open(spec["netns"], os.O_RDONLY)
        _check(libc.setns(fd, CLONE_NEWNET), f"setns {spec['netns']}")
        os.close(fd)
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS
    if spec.get("userNamespace"):
        uid, gid = os.getuid(), os.getgid()
        _check(libc.unshare(flags | CLONE_NEWUSER), "unshare")
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"),
                           ("gid_map", f"0 {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    else:
        _check(libc.unshare(flags), "unshare")


def main():
    spec_path, error_fd = sys.argv[1], int(sys.argv[2])
    die_with_parent()
    with open(spec_path) as f:
        spec = json.load(f)
    if os.getppid() != spec["kubeletPid"]:
        sys.exit(137)  # the kubelet died before we could hold on to it
    try:
        enter_namespaces(spec)
    except OSError as e:
        os.write(error_fd, f"creating the pod's namespaces: {e.strerror}".encode())
        sys.exit(128)
    shim_alive_r, shim_alive_w = os.pipe()  # the write end stays open until we end
    child = os.fork()
    if child == 0:
        os.close(shim_alive_w)
        container_process(spec, error_fd, shim_alive_r)
    os.close(shim_alive_r)
    os.close(error_fd)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
              signal.SIGUSR2):
        signal.signal(s, lambda signo, _frame: os.kill(child, signo))
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status)
             else 128 + os.WTERMSIG(status))


if __name__ == "__main__":
    main()

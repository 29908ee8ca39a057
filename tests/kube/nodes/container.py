"""What the runtime is asked to start for one container of a pod: the program (image
ENTRYPOINT/CMD replaced by command/args, $(VAR)s expanded), its environment (image ENV,
the Kubernetes service variables, env and envFrom with the downward API), its mounts
(the pod's volumes, the image's files, the pod's /etc/hosts, resolv.conf and hostname)
and its user, in the form container_shim.py reads."""

import base64
import os

from .downward import FieldError, expand, field_value, resource_value


class ConfigError(Exception):
    """The container cannot be configured (a missing ConfigMap key): it waits with reason
    CreateContainerConfigError, as on a real node."""


def _config_map_data(client, ns, name):
    cm = client.get("configmaps", ns, name)
    if cm is None:
        return None
    return dict(cm.get("data") or {})


def _secret_data(client, ns, name):
    s = client.get("secrets", ns, name)
    if s is None:
        return None
    return {k: base64.b64decode(v).decode(errors="replace") for k, v in (s.get("data") or {}).items()}


def environment(client, pod, container, image, api_server):
    """The container's environment, in Kubernetes' order: image ENV, then the
    KUBERNETES_SERVICE_* variables, then envFrom, then env (later ones win, and an env
    value may refer to any variable defined before it)."""
    ns = pod["metadata"]["namespace"]
    env = dict(image.env)
    host, port = api_server
    env.update({"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": str(port),
                "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
                "KUBERNETES_PORT": f"tcp://{host}:{port}"})
    env["HOSTNAME"] = (pod.get("spec") or {}).get("hostname") or pod["metadata"]["name"]
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        if "configMapRef" in source:
            ref = source["configMapRef"]
            data = _config_map_data(client, ns, ref["name"])
        else:
            ref = source["secretRef"]
            data = _secret_data(client, ns, ref["name"])
        if data is None:
            if ref.get("optional"):
                continue
            raise ConfigError(f'{"configmap" if "configMapRef" in source else "secret"} '
                              f'"{ref["name"]}" not found')
        env.update({prefix + k: v for k, v in data.items()})
    for var in container.get("env") or []:
        name = var["name"]
        if "valueFrom" not in var:
            env[name] = expand(var.get("value", ""), env)
            continue
        vf = var["valueFrom"]
        try:
            if "fieldRef" in vf:
                env[name] = field_value(pod, vf["fieldRef"]["fieldPath"])
            elif "resourceFieldRef" in vf:
                env[name] = resource_value(container, vf["resourceFieldRef"])
            else:
                ref = vf.get("configMapKeyRef") or vf.get("secretKeyRef")
                kind = "configmap" if "configMapKeyRef" in vf else "secret"
                data = (_config_map_data if kind == "configmap" else _secret_data)(
                    client, ns, ref["name"])
                if data is None or ref["key"] not in data:
                    if ref.get("optional"):
                        continue
                    what = f'{kind} "{ref["name"]}" not found' if data is None else \
                        f'couldn\'t find key {ref["key"]} in {kind} {ns}/{ref["name"]}'
                    raise ConfigError(what)
                env[name] = data[ref["key"]]
        except FieldError as e:
            raise ConfigError(str(e))
    return env


def program(container, image, env):
    """command replaces ENTRYPOINT (and drops CMD); args replace CMD."""
    if container.get("command"):
        argv = list(container["command"]) + list(container.get("args") or [])
    else:
        argv = list(image.entrypoint) + list(container.get("args") or image.cmd)
    argv = [expand(a, env) for a in argv]
    if not argv:
        raise ConfigError("no command specified")
    return argv


def mounts(container, volume_paths, image, pod_files):
    out = [{"source": src, "target": target, "readOnly": True}
           for target, src in image.files.items()]
    for target, src in pod_files.items():
        out.append({"source": src, "target": target, "readOnly": False})
    for vm in container.get("volumeMounts") or []:
        if vm["name"] not in volume_paths:
            raise ConfigError(f'volumeMount "{vm["name"]}": no volume of that name')
        src = volume_paths[vm["name"]]
        if vm.get("subPath"):
            src = os.path.join(src, vm["subPath"])
            if not os.path.exists(src):
                os.makedirs(src, exist_ok=True)  # as the kubelet creates a missing subPath
        out.append({"source": src, "target": vm["mountPath"], "readOnly": bool(vm.get("readOnly"))})
    return out


def security(pod, container):
    """(uid, gid, supplemental groups, read-only root): the container's securityContext
    over the pod's."""
    psc = (pod.get("spec") or {}).get("securityContext") or {}
    csc = container.get("securityContext") or {}
    uid = csc.get("runAsUser", psc.get("runAsUser"))
    gid = csc.get("runAsGroup", psc.get("runAsGroup"))
    groups = list(psc.get("supplementalGroups") or [])
    if psc.get("fsGroup") is not None:
        groups.append(psc["fsGroup"])
    if csc.get("runAsNonRoot", psc.get("runAsNonRoot")) and not uid:
        raise ConfigError("container has runAsNonRoot and image will run as root (pod: "
                          f'"{pod["metadata"]["name"]}", container: {container["name"]})')
    return uid, gid, groups, bool(csc.get("readOnlyRootFilesystem"))


def shim_spec(client, pod, container, image, volume_paths, pod_files, api_server, netns,
              root_mode, folder, kubelet_pid):
    env = environment(client, pod, container, image, api_server)
    uid, gid, groups, read_only = security(pod, container)
    if not root_mode:
        uid = gid = None  # a user namespace maps only this user: runAsUser cannot apply
        groups = []
    return {
        "kubeletPid": kubelet_pid,
        "netns": netns,
        "userNamespace": not root_mode,
        "rootfs": os.path.join(folder, "rootfs"),
        "layers": os.path.join(folder, "layers"),
        "hostname": env["HOSTNAME"],
        "mounts": mounts(container, volume_paths, image, pod_files),
        "readOnlyRootFilesystem": read_only,
        "workingDir": container.get("workingDir") or "/",
        "uid": uid, "gid": gid, "supplementalGroups": groups,
        "env": env,
        "argv": program(container, image, env),
    }

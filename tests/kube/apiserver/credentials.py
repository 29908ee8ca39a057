"""Credentials for the stand-in: a throwaway CA and serving certificate (made with the
openssl command line, EC P-256 so it takes milliseconds), a Bearer token, and the files
clients read them from: a kubeconfig, and optionally a service-account directory laid
out like /var/run/secrets/kubernetes.io/serviceaccount (token, ca.crt, namespace) so
the operator's in-cluster code path can be exercised.

Private keys live in a temporary directory removed at shutdown; none is ever committed.
"""

import base64
import os
import secrets
import ssl
import subprocess

SERVER_SANS = ("IP:127.0.0.1", "IP:::1", "DNS:localhost", "DNS:kubernetes",
               "DNS:kubernetes.default", "DNS:kubernetes.default.svc",
               "DNS:kubernetes.default.svc.cluster.local")


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def make_certificates(workdir, extra_sans=()):
    """Creates ca.crt/ca.key and server.crt/server.key in workdir; returns the paths.
    `extra_sans` (e.g. "IP:10.100.254.1") name further addresses it serves on."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "7",
             "-subj", "/CN=edgetrain-standin-ca",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=workdir)
    _openssl("req", "-new", *ec, "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=kube-apiserver", cwd=workdir)
    with open(os.path.join(workdir, "server.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\n"
                f"subjectAltName={','.join(SERVER_SANS + tuple(extra_sans))}\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.crt", "-days", "7", "-extfile", "server.ext",
             cwd=workdir)
    return {k: os.path.join(workdir, k) for k in ("ca.crt", "server.crt", "server.key")}


def server_context(certs):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(certs["server.crt"], certs["server.key"])
    # Only HTTP/1.1 is spoken: advertising it keeps Go clients from trying HTTP/2.
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def new_token():
    return secrets.token_urlsafe(32)


def write_kubeconfig(path, server_url, ca_pem=None, token=None, namespace="default"):
    lines = ["apiVersion: v1", "kind: Config", "clusters:", "- name: standin", "  cluster:",
             f"    server: {server_url}"]
    if ca_pem:
        lines.append(f"    certificate-authority-data: {base64.b64encode(ca_pem).decode()}")
    lines += ["contexts:", "- name: standin", "  context:", "    cluster: standin",
              "    user: standin", f"    namespace: {namespace}", "current-context: standin",
              "preferences: {}", "users:", "- name: standin"]
    lines += ["  user:", f"    token: {token}"] if token else ["  user: {}"]
    # A path in a folder not made yet (the README's /tmp/edge/kubeconfig in a fresh shell).
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)  # readers never see a half-written file


def write_serviceaccount_dir(path, ca_pem, token, namespace="default"):
    os.makedirs(path, exist_ok=True)
    for name, data in (("token", token.encode()), ("ca.crt", ca_pem or b""),
                       ("namespace", namespace.encode())):
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)

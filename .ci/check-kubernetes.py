#!/usr/bin/env python3
"""What contrib/kubernetes promises an operator, beyond the Kubernetes schemas (.ci/check-kubernetes).

    python3 .ci/check-kubernetes.py [DIR]     (DIR: contrib/kubernetes by default; PIPELINES_DIR:
                                               the pipelines whose drain_timeout counts, pipelines/)
    python3 .ci/check-kubernetes.py --longest-drain   (that drain, in whole seconds)

Every problem is printed as `check-kubernetes: FILE: what is wrong`, and the exit status is 1
if there is any.
"""
import glob
import os
import re
import sys

import yaml

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# delivery.drain_timeout when a pipeline sets none: `SchemaKey("drain_timeout", .duration,
# default: 10, …)` in Sources/PushPipeCore/Runtime/DeliveryPolicy.swift (cross-checked below).
DEFAULT_DRAIN_TIMEOUT = 10.0
DELIVERY_POLICY = os.path.join(REPO, "Sources/PushPipeCore/Runtime/DeliveryPolicy.swift")
# After the drain the store closes and the listeners end; the kubelet must not SIGKILL first.
GRACE_MARGIN = 20.0

problems = []


def problem(where, text):
    problems.append(f"check-kubernetes: {where}: {text}")


def parse_duration(value):
    """Seconds of a pipeline duration: a number (seconds) or `250ms`, `30s`, `5m`, `2h`, `90d`
    (SchemaValidator.parseDuration); `${VAR:-default}` counts as its default."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    m = re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\}", text)
    if m:
        text = m.group(1).strip()
    for suffix, factor in (("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)):
        if text.endswith(suffix):
            try:
                return float(text[: -len(suffix)]) * factor
            except ValueError:
                return None
    try:
        return float(text)
    except ValueError:
        return None


def shown_path(path):
    relative = os.path.relpath(path, REPO)
    return path if relative.startswith("..") else relative


def longest_drain():
    """The largest delivery.drain_timeout of pipelines/*.yaml, the default where none is set."""
    if os.path.exists(DELIVERY_POLICY):
        source = open(DELIVERY_POLICY, encoding="utf-8").read()
        m = re.search(r'SchemaKey\("drain_timeout",\s*\.duration,\s*default:\s*([0-9.]+)', source)
        if m and float(m.group(1)) != DEFAULT_DRAIN_TIMEOUT:
            problem(".ci/check-kubernetes.py", f"DeliveryPolicy.swift's drain_timeout default is now {m.group(1)} s; update DEFAULT_DRAIN_TIMEOUT")
    longest, source = DEFAULT_DRAIN_TIMEOUT, "the default"
    pipelines = os.environ.get("PIPELINES_DIR") or os.path.join(REPO, "pipelines")
    for path in sorted(glob.glob(os.path.join(pipelines, "*.yaml"))):
        if path.endswith("_test.yaml"):
            continue
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f) or {}
        delivery = doc.get("delivery") or {}
        if "drain_timeout" not in delivery:
            continue
        seconds = parse_duration(delivery["drain_timeout"])
        if seconds is None:
            problem(shown_path(path), f"cannot read delivery.drain_timeout {delivery['drain_timeout']!r}")
        elif seconds > longest:
            longest, source = seconds, shown_path(path)
    return longest, source


def run_flags():
    """The flags the README's `pushpipe run` row lists (no build needed)."""
    for line in open(os.path.join(REPO, "README.md"), encoding="utf-8"):
        if line.startswith("| `pushpipe run "):
            usage = re.split(r"(?<!\\)\|", line)[1]  # `\|` inside a cell is not a column
            return set(re.findall(r"--[a-z][a-z-]*", usage))
    return None


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def flag_value(args, flag):
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def secret_ref(container, name):
    """(secret, key) of env `name` when it comes from a secretKeyRef; else a reason."""
    for env in container.get("env") or []:
        if env.get("name") == name:
            if "value" in env:
                return None, f"{name} is a literal value; it must come from a Secret (valueFrom.secretKeyRef)"
            ref = ((env.get("valueFrom") or {}).get("secretKeyRef")) or {}
            if not ref.get("name") or not ref.get("key"):
                return None, f"{name} must come from a Secret (valueFrom.secretKeyRef with name and key)"
            if ref.get("optional"):
                return None, f"{name}'s secretKeyRef must not be optional"
            return (ref["name"], ref["key"]), None
    return None, f"no env {name}: it must come from a Secret (valueFrom.secretKeyRef)"


def port_of(container, port):
    """The containerPort a probe's or Service's port (name or number) is."""
    for p in container.get("ports") or []:
        if port == p.get("name") or port == p.get("containerPort"):
            return p
    return None


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "contrib/kubernetes")
    shown = sys.argv[1] if len(sys.argv) > 1 else "contrib/kubernetes"
    if not os.path.isdir(directory):
        print(f"check-kubernetes: {directory}: no such folder")
        return 1
    objects = []  # (file, object)
    for path in sorted(glob.glob(os.path.join(directory, "*.yaml"))):
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            try:
                docs = [d for d in yaml.safe_load_all(f) if d]
            except yaml.YAMLError as error:
                problem(name, f"not YAML: {error}")
                continue
        objects += [(name, d) for d in docs]

    def of_kind(kind):
        return [(f, o) for f, o in objects if o.get("kind") == kind]

    # kustomization.yaml: its resources exist; the example Secret is not among them.
    kustomizations = of_kind("Kustomization")
    if not kustomizations:
        problem("kustomization.yaml", "missing")
    for f, k in kustomizations:
        resources = k.get("resources") or []
        for resource in resources:
            if not os.path.exists(os.path.join(directory, resource)):
                problem(f, f"resource {resource} does not exist")
        for f2, o in of_kind("Secret"):
            if f2 in resources:
                problem(f, f"{f2} is an example Secret with placeholders: it must not be a resource")
        for f2, o in of_kind("Deployment") + of_kind("Service"):
            if f2 not in resources:
                problem(f, f"{f2} ({o['kind']}) is not among the resources")

    # The example Secret holds placeholders only.
    for f, s in of_kind("Secret"):
        for key, value in (s.get("stringData") or {}).items():
            if "CHANGE-ME" not in str(value):
                problem(f, f"stringData.{key} must be an obvious placeholder (containing CHANGE-ME)")
        if s.get("data"):
            problem(f, "an example Secret uses stringData placeholders, not data")

    deployments = of_kind("Deployment")
    if len(deployments) != 1:
        problem(directory, f"expected one Deployment, found {len(deployments)}")
        return report()
    f, deployment = deployments[0]
    spec = deployment.get("spec") or {}
    pod_meta = (spec.get("template") or {}).get("metadata") or {}
    pod_labels = pod_meta.get("labels") or {}
    pod = (spec.get("template") or {}).get("spec") or {}
    replicas = spec.get("replicas", 1)
    if not isinstance(replicas, int) or replicas < 2:
        problem(f, f"replicas is {replicas}: at least 2 daemons share the PostgreSQL store")
    if not matches((spec.get("selector") or {}).get("matchLabels") or {}, pod_labels):
        problem(f, "spec.selector.matchLabels does not match the pod template's labels")
    containers = [c for c in pod.get("containers") or [] if c.get("name") == "pushpipe"]
    if not containers:
        problem(f, "no container named pushpipe")
        return report()
    c = containers[0]
    args = [str(a) for a in (c.get("command") or []) + (c.get("args") or [])]
    if not args or args[0] not in ("run", "pushpipe"):
        problem(f, f"the container must run `pushpipe run` (the image's ENTRYPOINT is pushpipe), not {args[:2]}")
    flags = run_flags()
    if flags is None:
        problem("README.md", "no `pushpipe run` row in the command table")
    else:
        for arg in args:
            flag = arg.split("=", 1)[0]
            if flag.startswith("--") and flag not in flags:
                problem(f, f"args pass {flag}, which `pushpipe run` does not take (README.md's command table)")

    # The store and the admin token come from a Secret, never from the manifest.
    store, why = secret_ref(c, "PUSHPIPE_STORE")
    if why:
        problem(f, why)
    if flag_value(args, "--store"):
        problem(f, "--store in args would put the database password in the manifest: use PUSHPIPE_STORE from a Secret")
    token, why = secret_ref(c, "PUSHPIPE_ADMIN_TOKEN")
    if why:
        problem(f, why + " (the admin listener will not listen beyond loopback without a token)")
    if flag_value(args, "--admin-token"):
        problem(f, "--admin-token in args shows the token in the process list: use PUSHPIPE_ADMIN_TOKEN from a Secret")

    # Ports: the listeners' ports are the container ports named http and admin.
    for flag, name in (("--listen", "http"), ("--admin-listen", "admin")):
        listen = flag_value(args, flag)
        port = port_of(c, name)
        if port is None:
            problem(f, f"no container port named {name}")
            continue
        if not listen or ":" not in listen:
            problem(f, f"{flag} HOST:PORT must be given: the default is loopback, which nothing outside the pod reaches")
            continue
        host, _, number = listen.rpartition(":")
        if host.strip("[]") in ("127.0.0.1", "localhost", "::1"):
            problem(f, f"{flag} {listen} is loopback: probes and Services cannot reach it")
        if str(port.get("containerPort")) != number:
            problem(f, f"container port {name} is {port.get('containerPort')} but {flag} listens on {number}")
    admin_port = port_of(c, "admin")

    # Probes on the admin listener: /healthz and /readyz are open without the token.
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = ((c.get(probe) or {}).get("httpGet")) or {}
        if get.get("path") != path:
            problem(f, f"{probe} must be httpGet {path} (found {get.get('path') or 'none'})")
        if admin_port is None or port_of(c, get.get("port")) is not admin_port:
            problem(f, f"{probe} must probe the admin port (found {get.get('port')})")

    # Grace period above the longest drain, the preStop pause and a margin.
    drain, drain_source = longest_drain()
    pre_stop = 0.0
    command = ((((c.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get("command")) or []
    if len(command) == 2 and command[0] in ("sleep", "/bin/sleep"):
        pre_stop = float(command[1])
    sleep = (((c.get("lifecycle") or {}).get("preStop") or {}).get("sleep") or {}).get("seconds")
    if sleep:
        pre_stop = float(sleep)
    grace = pod.get("terminationGracePeriodSeconds", 30)
    needed = pre_stop + drain + GRACE_MARGIN
    if not isinstance(grace, (int, float)) or grace < needed:
        problem(
            f,
            f"terminationGracePeriodSeconds is {grace}: it must be at least {needed:g} "
            f"(preStop {pre_stop:g} s + longest drain_timeout {drain:g} s from {drain_source} + {GRACE_MARGIN:g} s margin), "
            "or the kubelet kills daemons mid-drain",
        )

    # Hardening.
    pod_sc, sc = pod.get("securityContext") or {}, c.get("securityContext") or {}
    if not (sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is True):
        problem(f, "runAsNonRoot must be true (the image runs as uid 10001)")
    if sc.get("runAsUser", pod_sc.get("runAsUser")) == 0:
        problem(f, "runAsUser must not be 0")
    if sc.get("readOnlyRootFilesystem") is not True:
        problem(f, "readOnlyRootFilesystem must be true")
    if sc.get("allowPrivilegeEscalation") is not False:
        problem(f, "allowPrivilegeEscalation must be false")
    if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
        problem(f, "capabilities must drop ALL")
    resources = c.get("resources") or {}
    for part in ("requests", "limits"):
        if not (resources.get(part) or {}).get("memory"):
            problem(f, f"resources.{part}.memory must be set")

    # Pipelines come from a ConfigMap mounted where --pipelines points.
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    mounts = {m.get("mountPath"): m for m in c.get("volumeMounts") or []}
    pipelines = flag_value(args, "--pipelines")
    mount = mounts.get(pipelines) if pipelines else None
    if not mount or "configMap" not in volumes.get(mount.get("name"), {}):
        problem(f, f"--pipelines ({pipelines}) must be a mounted ConfigMap")
    plugins = flag_value(args, "--plugins")
    if plugins and plugins not in mounts:
        problem(f, f"--plugins ({plugins}) is not mounted")

    # Services: one for the app port, one for the admin port, selecting the pods.
    admin_services = []
    for name in ("http", "admin"):
        found = []
        for f2, s in of_kind("Service"):
            if not matches((s.get("spec") or {}).get("selector") or {}, pod_labels):
                continue
            for p in (s.get("spec") or {}).get("ports") or []:
                target = p.get("targetPort", p.get("port"))
                if p.get("name") == name and port_of(c, target) is port_of(c, name) is not None:
                    found.append(s)
        if not found:
            problem("service.yaml", f"no Service selecting the pods has a port named {name} to the container's {name} port")
        if name == "admin":
            admin_services = found

    # The ServiceMonitor scrapes /metrics on the admin Service, with the admin token.
    monitors = of_kind("ServiceMonitor")
    if not monitors:
        problem(directory, "no ServiceMonitor")
    for f2, m in monitors:
        mspec = m.get("spec") or {}
        selector = (mspec.get("selector") or {}).get("matchLabels") or {}
        selected = [s for s in admin_services if matches(selector, (s.get("metadata") or {}).get("labels") or {})]
        if not selected:
            problem(f2, f"its selector {selector} selects no Service with the admin port")
        endpoints = [e for e in mspec.get("endpoints") or [] if e.get("port") == "admin"]
        if not endpoints:
            problem(f2, "no endpoint scrapes the port named admin")
        for e in endpoints:
            if e.get("path", "/metrics") != "/metrics":
                problem(f2, f"endpoint path must be /metrics (found {e.get('path')})")
            secret = e.get("bearerTokenSecret") or ((e.get("authorization") or {}).get("credentials")) or {}
            if token and (secret.get("name"), secret.get("key")) != token:
                problem(
                    f2,
                    f"the scrape must send the admin token: bearerTokenSecret {{name: {token[0]}, key: {token[1]}}} "
                    "(/metrics answers 401 without it)",
                )

    # A PodDisruptionBudget, if any, selects the pods and lets a drain evict one.
    for f2, b in of_kind("PodDisruptionBudget"):
        bspec = b.get("spec") or {}
        if not matches((bspec.get("selector") or {}).get("matchLabels") or {}, pod_labels):
            problem(f2, "its selector does not select the pods")
        minimum = bspec.get("minAvailable")
        if isinstance(minimum, int) and isinstance(replicas, int) and minimum >= replicas:
            problem(f2, f"minAvailable {minimum} with {replicas} replicas blocks every node drain")

    if not problems:
        print(
            f"check-kubernetes: {shown}: {replicas} replicas, grace {grace} s "
            f"(needs {needed:g}: drain {drain:g} s from {drain_source}), probes, secrets, Services and ServiceMonitor as promised"
        )
    return report()


def report():
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    # `--longest-drain`: only the seconds every stop must outlast, for .ci/check-systemd.
    if sys.argv[1:] == ["--longest-drain"]:
        drain, _ = longest_drain()
        sys.exit(report() or print(int(-(-drain // 1))))
    sys.exit(main())

"""The Python half of scripts/check-deploy: Kubernetes manifests, Prometheus
and Grafana YAML/JSON, the Dockerfile, and their consistency with each other
and with crates/telemetry/src/metrics.rs (and metrics/).

Run by scripts/check-deploy from the repository root as
`HAVE_YAML=0|1 python3 scripts/check_deploy.py TMPDIR`. Prints one line per
check in the shell script's format, writes files for the later shell checks
(the ConfigMap's crawlgate.toml, the dashboard queries as rules) into TMPDIR,
and ends by writing "PASSED FAILED SKIPPED" counts to TMPDIR/py-counts.
"""
import json, os, re, subprocess, sys

tmp = sys.argv[1]
have_yaml = os.environ.get("HAVE_YAML") == "1"
counts = {"passed": 0, "failed": 0, "skipped": 0}

def ok(name, detail=""):
    print(f"{name}: ok" + (f" ({detail})" if detail else "")); counts["passed"] += 1
def fail(name, reason, details=()):
    print(f"{name}: FAILED: {reason}"); counts["failed"] += 1
    for d in list(details)[:40]:
        print(f"    {d}")
def skip(name, reason):
    print(f"{name}: skipped: {reason}"); counts["skipped"] += 1

# ---- metric names registered by crawlgate-telemetry ----------------------
METRICS_RS = "crates/telemetry/src/metrics.rs (and metrics/)"
METRICS_FILES = ["crates/telemetry/src/metrics.rs"] + sorted(
    os.path.join("crates/telemetry/src/metrics", f)
    for f in (os.listdir("crates/telemetry/src/metrics") if os.path.isdir("crates/telemetry/src/metrics") else [])
    if f.endswith(".rs"))
known = {"up"}
try:
    src = "\n".join(open(f, encoding="utf-8").read() for f in METRICS_FILES)
    for m in re.finditer(r'"(crawlgate_[a-z0-9_]+)"', src):
        n = m.group(1)
        known.add(n)
        if "HistogramOpts::new(" in src[max(0, m.start() - 120):m.start()]:
            known.update({n + "_bucket", n + "_sum", n + "_count"})
except OSError as e:
    fail("metric names", f"cannot read {METRICS_RS}: {e}")

KEYWORDS = {"and", "or", "unless", "offset", "bool", "by", "without", "on", "ignoring",
            "group_left", "group_right", "inf", "nan", "atan2", "start", "end"}

def metric_refs(expr):
    s = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    s = re.sub(r'\{[^}]*\}', ' ', s)
    s = re.sub(r'\[[^\]]*\]', ' ', s)
    s = re.sub(r'\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)', ' ', s)
    s = re.sub(r'\$\{?[A-Za-z_][A-Za-z0-9_]*\}?', ' ', s)
    for m in re.finditer(r'(?<![\w.:])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?', s):
        name = m.group(1)
        if m.group(2) or name.lower() in KEYWORDS:
            continue
        yield name

def unknown_metrics(expr):
    return sorted({n for n in metric_refs(expr) if n not in known})

# ---- (c) Kubernetes manifests and Prometheus YAML --------------------------
EXPECTED = {
    "configmap.yaml": ("v1", "ConfigMap"),
    "deployment.yaml": ("apps/v1", "Deployment"),
    "service.yaml": ("v1", "Service"),
    "pdb.yaml": ("policy/v1", "PodDisruptionBudget"),
    "hpa.yaml": ("autoscaling/v2", "HorizontalPodAutoscaler"),
    "servicemonitor.yaml": ("monitoring.coreos.com/v1", "ServiceMonitor"),
    "networkpolicy.yaml": ("networking.k8s.io/v1", "NetworkPolicy"),
    "kustomization.yaml": ("kustomize.config.k8s.io/v1beta1", "Kustomization"),
}
K8S = "deploy/kubernetes"
docs = {}
if not have_yaml:
    fail("yaml", "PyYAML is not available and could not be installed (pip install pyyaml, or apt-get install python3-yaml)")
else:
    import yaml
    errors, nfiles = [], 0
    for base in (K8S, "deploy/prometheus"):
        for root, _, files in os.walk(base):
            for f in sorted(files):
                if not f.endswith((".yaml", ".yml")):
                    continue
                path = os.path.join(root, f)
                nfiles += 1
                try:
                    with open(path, encoding="utf-8") as fh:
                        loaded = [d for d in yaml.safe_load_all(fh) if d is not None]
                    docs[path] = loaded
                except yaml.YAMLError as e:
                    errors.append(f"{path}: {e}".replace("\n", " "))
    if errors:
        fail("yaml parse", f"{len(errors)} file(s) do not parse", errors)
    else:
        ok("yaml parse", f"{nfiles} files under {K8S} and deploy/prometheus")

    # kind / apiVersion of each manifest, and the kustomization lists them all.
    problems, by_kind = [], {}
    for f, (api, kind) in EXPECTED.items():
        path = os.path.join(K8S, f)
        if not os.path.exists(path):
            problems.append(f"{path}: missing"); continue
        ds = docs.get(path)
        if ds is None:
            continue  # parse error already reported
        if len(ds) != 1 or not isinstance(ds[0], dict):
            problems.append(f"{path}: expected exactly one object, found {len(ds)}"); continue
        d = ds[0]
        if d.get("kind") != kind or d.get("apiVersion") != api:
            problems.append(f"{path}: expected {api} {kind}, found {d.get('apiVersion')} {d.get('kind')}")
        by_kind[kind] = d
    extra = sorted(f for f in os.listdir(K8S) if f.endswith((".yaml", ".yml")) and f not in EXPECTED) if os.path.isdir(K8S) else []
    kust = by_kind.get("Kustomization", {})
    resources = kust.get("resources") or []
    for r in resources:
        if not os.path.exists(os.path.join(K8S, r)):
            problems.append(f"kustomization.yaml: resource {r} does not exist")
    for f in sorted(set(EXPECTED) - {"kustomization.yaml"}):
        if os.path.exists(os.path.join(K8S, f)) and f not in resources:
            problems.append(f"kustomization.yaml: {f} is not listed in resources")
    for f in extra:
        if f not in resources:
            problems.append(f"{K8S}/{f}: not listed in kustomization.yaml")
    if problems:
        fail("kubernetes kinds", "manifest kinds/apiVersions or kustomization resources are wrong", problems)
    else:
        ok("kubernetes kinds", ", ".join(k for _, k in EXPECTED.values()))

    # Cross-file consistency: names, selectors, ports, probes, hardening.
    p = []
    dep, svc, pdb = by_kind.get("Deployment"), by_kind.get("Service"), by_kind.get("PodDisruptionBudget")
    hpa, sm, cm = by_kind.get("HorizontalPodAutoscaler"), by_kind.get("ServiceMonitor"), by_kind.get("ConfigMap")
    def subset(sel, labels):
        return bool(sel) and all(labels.get(k) == v for k, v in sel.items())
    policy_toml = None
    if cm:
        if cm.get("metadata", {}).get("name") != "crawlgate-policy":
            p.append("configmap.yaml: ConfigMap must be named crawlgate-policy")
        policy_toml = (cm.get("data") or {}).get("crawlgate.toml")
        if not policy_toml:
            p.append("configmap.yaml: data.crawlgate.toml is missing")
        else:
            with open(os.path.join(tmp, "crawlgate.toml"), "w", encoding="utf-8") as fh:
                fh.write(policy_toml)
    if dep:
        spec = dep.get("spec", {})
        tpl = spec.get("template", {})
        pod_labels = tpl.get("metadata", {}).get("labels", {})
        pod = tpl.get("spec", {})
        if not subset(spec.get("selector", {}).get("matchLabels"), pod_labels):
            p.append("deployment.yaml: selector does not match the pod template labels")
        ru = spec.get("strategy", {}).get("rollingUpdate", {})
        if spec.get("strategy", {}).get("type") != "RollingUpdate" or ru.get("maxUnavailable") != 0:
            p.append("deployment.yaml: strategy must be RollingUpdate with maxUnavailable: 0")
        if not pod.get("topologySpreadConstraints"):
            p.append("deployment.yaml: no topologySpreadConstraints")
        psc = pod.get("securityContext", {})
        if psc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            p.append("deployment.yaml: pod seccompProfile must be RuntimeDefault")
        containers = pod.get("containers") or []
        c = next((c for c in containers if c.get("name") == "crawlgate"), containers[0] if containers else {})
        ports = {pt.get("name"): pt.get("containerPort") for pt in c.get("ports", [])}
        for n in ("http", "admin"):
            if n not in ports:
                p.append(f"deployment.yaml: container port `{n}` is missing")
        for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
            hg = c.get(probe, {}).get("httpGet", {})
            if hg.get("path") != path or hg.get("port") not in ("admin", ports.get("admin")):
                p.append(f"deployment.yaml: {probe} must be httpGet {path} on the admin port")
        csc = c.get("securityContext", {})
        if not (psc.get("runAsNonRoot") or csc.get("runAsNonRoot")):
            p.append("deployment.yaml: runAsNonRoot is not set")
        if csc.get("readOnlyRootFilesystem") is not True:
            p.append("deployment.yaml: readOnlyRootFilesystem must be true")
        if csc.get("allowPrivilegeEscalation") is not False:
            p.append("deployment.yaml: allowPrivilegeEscalation must be false")
        if "ALL" not in (csc.get("capabilities", {}).get("drop") or []):
            p.append("deployment.yaml: capabilities must drop ALL")
        if not c.get("resources", {}).get("requests", {}).get("cpu"):
            p.append("deployment.yaml: a CPU request is needed (the HPA scales on it)")
        vols = {v.get("name"): v for v in pod.get("volumes", [])}
        pol = [m for m in c.get("volumeMounts", []) if m.get("mountPath") == "/etc/crawlgate"]
        if not pol:
            p.append("deployment.yaml: nothing is mounted at /etc/crawlgate")
        for m in pol:
            if "subPath" in m or "subPathExpr" in m:
                p.append("deployment.yaml: the policy mount uses subPath (ConfigMap edits would never reach the pod)")
            if vols.get(m.get("name"), {}).get("configMap", {}).get("name") != "crawlgate-policy":
                p.append("deployment.yaml: /etc/crawlgate is not the crawlgate-policy ConfigMap")
        if svc:
            if not subset(svc.get("spec", {}).get("selector"), pod_labels):
                p.append("service.yaml: selector does not select the Deployment's pods")
            sports = {sp.get("name"): sp for sp in svc.get("spec", {}).get("ports", [])}
            for sp in sports.values():
                if sp.get("targetPort") not in ports and sp.get("targetPort") not in ports.values():
                    p.append(f"service.yaml: targetPort {sp.get('targetPort')} is not a container port")
            if sports.get("http", {}).get("port") != 80:
                p.append("service.yaml: port `http` must be 80")
            if "admin" not in sports:
                p.append("service.yaml: port `admin` is missing")
            if sm:
                if not subset(sm.get("spec", {}).get("selector", {}).get("matchLabels"), svc.get("metadata", {}).get("labels", {})):
                    p.append("servicemonitor.yaml: selector does not match the Service's labels")
                for ep in sm.get("spec", {}).get("endpoints", []):
                    if ep.get("port") not in sports:
                        p.append(f"servicemonitor.yaml: endpoint port {ep.get('port')} is not a Service port")
                    if ep.get("path", "/metrics") != "/metrics":
                        p.append("servicemonitor.yaml: path must be /metrics")
        if pdb and not subset(pdb.get("spec", {}).get("selector", {}).get("matchLabels"), pod_labels):
            p.append("pdb.yaml: selector does not select the Deployment's pods")
        if hpa:
            ref = hpa.get("spec", {}).get("scaleTargetRef", {})
            if ref.get("kind") != "Deployment" or ref.get("name") != dep.get("metadata", {}).get("name"):
                p.append("hpa.yaml: scaleTargetRef is not the Deployment")
            lo = hpa.get("spec", {}).get("minReplicas", 1)
            ma = (pdb or {}).get("spec", {}).get("minAvailable")
            if isinstance(ma, int) and lo <= ma:
                p.append(f"hpa.yaml: minReplicas {lo} must exceed the PDB's minAvailable {ma}, or drains block")
        # The embedded policy must listen where the pod spec expects it.
        if policy_toml:
            try:
                import tomllib
            except ImportError:
                tomllib = None
            if tomllib:
                try:
                    pol_doc = tomllib.loads(policy_toml)
                except tomllib.TOMLDecodeError as e:
                    p.append(f"configmap.yaml: crawlgate.toml is not valid TOML: {e}")
                    pol_doc = None
                if pol_doc is not None:
                    server = pol_doc.get("server", {})
                    lports = {int(a.rsplit(":", 1)[1]) for a in server.get("listen", []) if ":" in a}
                    admin = server.get("admin", "")
                    if ports.get("http") not in lports:
                        p.append(f"configmap.yaml: server.listen {server.get('listen')} does not include containerPort http {ports.get('http')}")
                    if not admin or int(admin.rsplit(":", 1)[1]) != ports.get("admin"):
                        p.append(f"configmap.yaml: server.admin `{admin}` is not on containerPort admin {ports.get('admin')} (probes and metrics need it)")
                    elif admin.rsplit(":", 1)[0] in ("127.0.0.1", "localhost", "[::1]"):
                        p.append("configmap.yaml: server.admin listens on loopback only; kubelet probes and Prometheus cannot reach it")
                    if not pol_doc.get("upstream", {}).get("servers"):
                        p.append("configmap.yaml: upstream.servers is empty")
                    # The admin secret: the file the policy names is a key of
                    # the Secret mounted at its directory, and Prometheus
                    # sends that key.
                    mounts = {m.get("mountPath"): m for m in c.get("volumeMounts", [])}
                    # The Secret is generated (kustomization.yaml
                    # secretGenerator) from files kept out of git, never
                    # written in a manifest with a token everyone knows.
                    gens = [g for g in (kust.get("secretGenerator") or []) if isinstance(g, dict)]
                    gen = gens[0] if len(gens) == 1 else {}
                    secret_name = gen.get("name")
                    if not gen:
                        p.append("kustomization.yaml: the admin Secret must come from one secretGenerator")
                    elif gen.get("literals") or gen.get("envs"):
                        p.append("kustomization.yaml: the admin Secret's secretGenerator must read files only (no literals or envs)")
                    elif not (gen.get("options") or {}).get("disableNameSuffixHash"):
                        p.append("kustomization.yaml: the admin Secret needs disableNameSuffixHash (servicemonitor.yaml names it)")
                    gen_files = [f.partition("=") if "=" in f else (os.path.basename(f), "=", f) for f in gen.get("files") or []]
                    secret_keys = {k for k, _, _ in gen_files}
                    for _, _, src in gen_files:
                        ignored = subprocess.run(["git", "check-ignore", "-q", os.path.join(K8S, src)]).returncode == 0
                        tracked = subprocess.run(["git", "ls-files", "--error-unmatch", os.path.join(K8S, src)],
                                                 capture_output=True).returncode == 0
                        if not ignored or tracked:
                            p.append(f"{K8S}/{src}: the admin token file must be git-ignored and untracked")
                    for path, ds in docs.items():
                        for d in ds:
                            if isinstance(d, dict) and d.get("kind") == "Secret" and (d.get("data") or d.get("stringData")):
                                p.append(f"{path}: a Secret with its data in the repository (generate it from a git-ignored file)")
                    auth = server.get("admin_auth_file")
                    if not auth:
                        p.append("configmap.yaml: server.admin_auth_file is not set (the admin listener is open to the cluster)")
                    else:
                        adir, _, akey = auth.rpartition("/")
                        vol = vols.get((mounts.get(adir) or {}).get("name"), {})
                        if vol.get("secret", {}).get("secretName") != secret_name:
                            p.append(f"deployment.yaml: admin_auth_file {auth}: {adir} is not the Secret {secret_name} (kustomization.yaml secretGenerator)")
                        if akey not in secret_keys:
                            p.append(f"kustomization.yaml: the secretGenerator {secret_name} has no key `{akey}` (admin_auth_file {auth})")
                        for ep in (sm or {}).get("spec", {}).get("endpoints", []):
                            cred = (ep.get("authorization") or {}).get("credentials") or {}
                            if (cred.get("name"), cred.get("key")) != (secret_name, akey):
                                p.append(f"servicemonitor.yaml: endpoint {ep.get('port')} must send authorization from Secret {secret_name} key {akey}")
                    # state_dir on a writable emptyDir (the root file system is read-only).
                    sd = pol_doc.get("verification", {}).get("state_dir")
                    if not sd:
                        p.append("configmap.yaml: [verification] state_dir is not set")
                    elif "emptyDir" not in vols.get((mounts.get(sd) or {}).get("name"), {}):
                        p.append(f"deployment.yaml: state_dir {sd} is not an emptyDir mount")
                    # The NetworkPolicy: pods selected; the admin port only
                    # from the monitoring namespace.
                    np = by_kind.get("NetworkPolicy") or {}
                    if not subset(np.get("spec", {}).get("podSelector", {}).get("matchLabels"), pod_labels):
                        p.append("networkpolicy.yaml: podSelector does not select the Deployment's pods")
                    for rule in np.get("spec", {}).get("ingress", []):
                        rports = {pt.get("port") for pt in rule.get("ports", [])}
                        if rports & {"admin", ports.get("admin")}:
                            froms = rule.get("from") or []
                            if not froms or any(
                                (f.get("namespaceSelector") or {}).get("matchLabels", {}).get("kubernetes.io/metadata.name") != "monitoring"
                                for f in froms
                            ):
                                p.append("networkpolicy.yaml: the admin port must be admitted from the monitoring namespace only")
                        if not rports:
                            p.append("networkpolicy.yaml: an ingress rule without ports admits the admin port too")
                    # Shutdown budget: preStop sleep + grace_period + up to 5 s.
                    gp = server.get("grace_period", "5s")
                    m = re.fullmatch(r"(\d+)(ms|s|m|h)", gp)
                    secs = int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)] if m else 5
                    pre = c.get("lifecycle", {}).get("preStop", {})
                    cmd = pre.get("exec", {}).get("command") or []
                    sleep = pre.get("sleep", {}).get("seconds") or (int(cmd[-1]) if len(cmd) == 2 and cmd[0].endswith("sleep") and cmd[1].isdigit() else 0)
                    tgp = pod.get("terminationGracePeriodSeconds", 30)
                    if tgp <= sleep + secs + 5:
                        p.append(f"deployment.yaml: terminationGracePeriodSeconds {tgp} must exceed preStop {sleep}s + grace_period {gp} + 5s")
    if p:
        fail("kubernetes consistency", f"{len(p)} problem(s)", p)
    elif dep and svc and cm:
        ok("kubernetes consistency", "selectors, ports, probes, policy mount, admin secret, state_dir, network policy, hardening, shutdown budget")

    # Alert rules: structure, and every metric they use exists.
    rules_path = "deploy/prometheus/alerts.yml"
    rd = (docs.get(rules_path) or [None])[0]
    p, n = [], 0
    alert_metrics = set()
    if rules_path not in docs and os.path.exists(rules_path):
        skip("alert rules", f"{rules_path} does not parse")
        rd = False
    elif not isinstance(rd, dict) or not rd.get("groups"):
        p.append(f"{rules_path}: no `groups:`")
    else:
        for g in rd["groups"]:
            for r in g.get("rules", []):
                n += 1
                a = r.get("alert") or r.get("record") or "?"
                if "alert" in r:
                    if "for" not in r: p.append(f"{a}: no `for`")
                    if not (r.get("labels") or {}).get("severity"): p.append(f"{a}: no severity label")
                    ann = r.get("annotations") or {}
                    if not ann.get("summary") or not ann.get("description"): p.append(f"{a}: summary/description annotations missing")
                alert_metrics.update(metric_refs(str(r.get("expr", ""))))
                bad = unknown_metrics(str(r.get("expr", "")))
                if bad: p.append(f"{a}: unknown metric(s) {', '.join(bad)} (not registered in {METRICS_RS})")
        # The metric names the alerts use, for the scrape of a real binary
        # in scripts/check-deploy (`up` comes from Prometheus itself).
        with open(os.path.join(tmp, "alert-metrics"), "w", encoding="utf-8") as fh:
            fh.write("".join(f"{m}\n" for m in sorted(alert_metrics - {"up"})))
        names = {r.get("alert") for g in rd["groups"] for r in g.get("rules", [])}
        for want in ("CrawlgateReloadFailing", "CrawlgateNoHealthyUpstream", "CrawlgateBlocksSpike",
                     "CrawlgateViolationsSpike", "CrawlgateUpstream5xxHigh", "CrawlgateDown",
                     "CrawlgateVerificationListRefreshFailing", "CrawlgateVerificationListStale",
                     "CrawlgateOriginRobotsFetchFailing", "CrawlgateSpoofedClaimsSpike",
                     "CrawlgateConnectionsRefused", "CrawlgateTlsCertificateExpiring",
                     "CrawlgateLedgerFailing", "CrawlgatePaymentFailures", "CrawlgateSharedStoreDown",
                     "CrawlgateRateLimitedHigh", "CrawlgateUntrustedForwarder", "CrawlgateMarkdownFailing"):
            if want not in names: p.append(f"alert {want} is missing")
    if rd is False:
        pass
    elif p:
        fail("alert rules", f"{len(p)} problem(s)", p)
    else:
        ok("alert rules", f"{n} rules: for, severity, annotations; metrics exist in metrics.rs")

# ---- (d) Grafana dashboard -----------------------------------------------
dash_path = "deploy/grafana/crawlgate.json"
p, exprs = [], []
try:
    dash = json.load(open(dash_path, encoding="utf-8"))
except (OSError, ValueError) as e:
    dash = None
    p.append(f"{dash_path}: {e}")
if isinstance(dash, dict):
    panels = dash.get("panels") or []
    if not panels:
        p.append("no panels")
    flat = []
    for pa in panels:
        flat.append(pa)
        flat.extend(pa.get("panels") or [])  # collapsed rows
    ids = [pa.get("id") for pa in flat]
    if len(ids) != len(set(ids)):
        p.append("panel ids are not unique")
    if not any(v.get("name") == "DS_PROMETHEUS" for v in dash.get("templating", {}).get("list", [])) \
            and not any(i.get("name") == "DS_PROMETHEUS" for i in dash.get("__inputs", [])):
        p.append("no DS_PROMETHEUS datasource variable or input")
    for pa in flat:
        if pa.get("type") == "row":
            continue
        title = pa.get("title", "?")
        tg = pa.get("targets") or []
        if not tg:
            p.append(f"panel `{title}`: no targets")
        for t in tg:
            e = t.get("expr")
            if not e:
                p.append(f"panel `{title}`: target {t.get('refId')} has no expr"); continue
            exprs.append((title, e))
        ds = json.dumps(pa.get("datasource"))
        if "${DS_PROMETHEUS}" not in ds:
            p.append(f"panel `{title}`: datasource is not ${{DS_PROMETHEUS}}")
    for an in dash.get("annotations", {}).get("list", []):
        if an.get("expr"):
            exprs.append((f"annotation {an.get('name')}", an["expr"]))
    for title, e in exprs:
        bad = unknown_metrics(e)
        if bad:
            p.append(f"`{title}`: unknown metric(s) {', '.join(bad)} (not in {METRICS_RS})")
if p:
    fail("grafana dashboard", f"{len(p)} problem(s)", p)
else:
    ok("grafana dashboard", f"{len([x for x in flat if x.get('type') != 'row'])} panels, {len(exprs)} queries; metrics exist in metrics.rs")
# For promtool: each query as a recording rule, Grafana variables filled in.
with open(os.path.join(tmp, "dashboard-rules.yml"), "w", encoding="utf-8") as fh:
    fh.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, (_, e) in enumerate(exprs):
        e = (e.replace("$__rate_interval", "5m").replace("$__range", "6h").replace("$__interval", "1m")
              .replace("$job", ".*").replace("$instance", ".*"))
        fh.write(f"      - record: dashboard:query{i}\n        expr: {json.dumps(e)}\n")

# ---- (e) Dockerfile ------------------------------------------------------
df_path = "deploy/docker/Dockerfile"
p, notes = [], []
try:
    lines = open(df_path, encoding="utf-8").read().splitlines()
except OSError as e:
    lines = None
    p.append(f"{df_path}: {e}")
if lines is not None:
    # Join continuation lines, drop comments.
    instrs, cur = [], ""
    for ln in lines:
        s = ln.strip()
        if not cur and (not s or s.startswith("#")):
            continue
        if s.startswith("#"):
            continue
        cur = (cur + " " + s) if cur else s
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip(); continue
        instrs.append(cur); cur = ""
    if cur: instrs.append(cur)
    stages, final = [], []
    for ins in instrs:
        op, _, arg = ins.partition(" ")
        op = op.upper()
        if op == "FROM":
            stages.append(arg); final = []
        final.append((op, arg.strip()))
    if not any(re.search(r"\s+AS\s+builder\s*$", s, re.I) for s in stages):
        p.append("no `FROM ... AS builder` stage")
    if len(stages) < 2:
        p.append("not a multi-stage build")
    users = [a for op, a in final if op == "USER"]
    if not users:
        p.append("the final stage has no USER (it would run as root)")
    elif re.fullmatch(r"(root|0)(:.*)?", users[-1]):
        p.append(f"the final stage runs as root (USER {users[-1]})")
    if not any(op == "HEALTHCHECK" and not a.upper().startswith("NONE") for op, a in final):
        p.append("no HEALTHCHECK in the final stage")
    if not any(i.upper().startswith("ARG CRAWLGATE_COMMIT") for i in instrs) or not any(
        i.upper().startswith("ENV CRAWLGATE_COMMIT=") for i in instrs
    ):
        p.append("no `ARG CRAWLGATE_COMMIT` passed on as ENV: crawlgate_build_info would say commit=unknown")
    if not any(op == "VOLUME" and "/var/lib/crawlgate" in a for op, a in final):
        p.append("no VOLUME /var/lib/crawlgate in the final stage ([verification] state_dir)")
    # COPY sources from the build context (the repository root) must exist.
    for op, a in ((o, a) for o, a in ((i.partition(" ")[0].upper(), i.partition(" ")[2]) for i in instrs)):
        if op not in ("COPY", "ADD") or "--from=" in a:
            continue
        parts = [x for x in a.split() if not x.startswith("--")]
        for src in parts[:-1]:
            if not any(ch in src for ch in "*?[") and not os.path.exists(src):
                notes.append(f"COPY source {src} does not exist yet (docker build would fail)")
    # cargo loads the whole workspace: every member must be copied in.
    copied = []
    for ins in instrs:
        op, _, a = ins.partition(" ")
        if op.upper() == "COPY" and "--from=" not in a:
            copied += [x.rstrip("/") for x in a.split()[:-1] if not x.startswith("--")]
    try:
        import tomllib
        members = tomllib.load(open("Cargo.toml", "rb")).get("workspace", {}).get("members", [])
    except (ImportError, OSError, ValueError):
        members = []
    for m in members:
        m = m.rstrip("/")
        if not any(m == c or m.startswith(c + "/") or c == "." for c in copied):
            p.append(f"workspace member {m} (Cargo.toml) is not COPY'd into the builder: cargo cannot load the workspace")
if p:
    fail("dockerfile", f"{len(p)} problem(s)", p)
else:
    ok("dockerfile", "FROM ... AS builder, non-root USER " + (users[-1] if users else "?") + ", HEALTHCHECK, commit build arg, state volume"
       + ("; WARNING: " + "; ".join(notes) if notes else ""))

with open(os.path.join(tmp, "py-counts"), "w") as fh:
    fh.write(f"{counts['passed']} {counts['failed']} {counts['skipped']}\n")

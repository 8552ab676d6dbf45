"""Checks a built charging overlay (scripts/check-deploy): the `kubectl
kustomize` output of deploy/kubernetes-postgres or deploy/kubernetes-sqlite
on stdin, the variant as argv[1]. Prints the problems, one a line, and
exits 1 when there are any. argv[2]: the image of the base's Deployment,
which the workload must run too."""
import os
import sys
import tomllib

import yaml

variant = sys.argv[1]
objs = [d for d in yaml.safe_load_all(sys.stdin) if d]
by = {}
for d in objs:
    by.setdefault(d["kind"], []).append(d)
p = []
cms = [c for c in by.get("ConfigMap", []) if c["metadata"]["name"] == "crawlgate-policy"]
pol = tomllib.loads(cms[0]["data"]["crawlgate.toml"]) if len(cms) == 1 else {}
pay = pol.get("payment", {})
charge = [g for g in pol.get("group", []) if g.get("enforce") == "charge"]
if not charge:
    p.append("the policy has no group with enforce = \"charge\"")
workload = by.get("Deployment" if variant == "postgres" else "StatefulSet", [])
if len(workload) != 1:
    p.append(f"expected one {'Deployment' if variant == 'postgres' else 'StatefulSet'}, found {len(workload)}")
    print("\n".join(p))
    sys.exit(1)
w = workload[0]
pod = w["spec"]["template"]["spec"]
c = pod["containers"][0]
mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
vols = {v["name"]: v for v in pod.get("volumes", [])}
state_dir = pol.get("verification", {}).get("state_dir", "")
ledger = pay.get("ledger", "")
if variant == "postgres":
    if not ledger.startswith("postgres://"):
        p.append(f"payment.ledger `{ledger}` is not a postgres:// URL")
    if "@" in ledger and ":" in ledger.split("//", 1)[1].split("@", 1)[0]:
        p.append("payment.ledger holds a password: it belongs in the Secret (ledger_password_file)")
    pw = pay.get("ledger_password_file", "")
    pdir, _, pkey = pw.rpartition("/")
    secret = (vols.get(mounts.get(pdir, ""), {}).get("secret") or {}).get("secretName", "")
    secrets = {s["metadata"]["name"]: s for s in by.get("Secret", [])}
    if not pw:
        p.append("payment.ledger_password_file is not set")
    elif not secret.startswith("crawlgate-ledger") or secret not in secrets:
        p.append(f"ledger_password_file {pw}: {pdir} is not the generated Secret crawlgate-ledger")
    elif pkey not in (secrets[secret].get("data") or {}):
        p.append(f"the Secret {secret} has no key `{pkey}` (ledger_password_file {pw})")
    hpa = by.get("HorizontalPodAutoscaler", [])
    if not hpa or hpa[0]["spec"]["scaleTargetRef"]["kind"] != "Deployment":
        p.append("the autoscaled Deployment of the base is gone")
else:
    for kind in ("Deployment", "HorizontalPodAutoscaler", "PodDisruptionBudget"):
        if by.get(kind):
            p.append(f"a {kind} is left from the base (one StatefulSet pod owns the ledger)")
    if w["spec"].get("replicas") != 1:
        p.append("the StatefulSet must have replicas: 1 (one ledger file)")
    claims = {t["metadata"]["name"] for t in w["spec"].get("volumeClaimTemplates", [])}
    name = mounts.get(state_dir)
    if not state_dir or name not in claims or name in vols:
        p.append(f"state_dir `{state_dir}` is not mounted from a volumeClaimTemplate")
    ldir = os.path.dirname(ledger) if ledger else state_dir
    if ldir != state_dir:
        p.append(f"payment.ledger `{ledger}` is not in state_dir {state_dir} (the claim)")
    if pod.get("securityContext", {}).get("fsGroup") is None:
        p.append("no pod securityContext.fsGroup: the claim may not be writable by the non-root user")
    svcs = {s["metadata"]["name"] for s in by.get("Service", [])}
    if w["spec"].get("serviceName") not in svcs:
        p.append(f"serviceName `{w['spec'].get('serviceName')}` is not a Service")
    svc_sel = by["Service"][0]["spec"]["selector"] if by.get("Service") else {}
    labels = w["spec"]["template"]["metadata"]["labels"]
    if not svc_sel or any(labels.get(k) != v for k, v in svc_sel.items()):
        p.append("the Service does not select the StatefulSet's pod")
for m, name in mounts.items():
    if name not in vols and name not in {t["metadata"]["name"] for t in w["spec"].get("volumeClaimTemplates", [])}:
        p.append(f"mount {m}: no volume `{name}`")
if len(sys.argv) > 2 and c.get("image") != sys.argv[2]:
    p.append(f"image `{c.get('image')}` is not the base's `{sys.argv[2]}` (set images: in both kustomization.yaml files)")
sc = c.get("securityContext", {})
if not sc.get("readOnlyRootFilesystem") or sc.get("allowPrivilegeEscalation") is not False:
    p.append("the container lost its hardening (readOnlyRootFilesystem, allowPrivilegeEscalation)")
print("\n".join(p))
sys.exit(1 if p else 0)

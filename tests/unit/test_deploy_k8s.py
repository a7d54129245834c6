"""deploy/k8s/ would come up on a cluster: schema-valid objects that agree with each other and the code.

There is no cluster here. Every object is checked against the Kubernetes JSON schemas shipped by
``kubernetes-validate`` (strict: an unknown field fails) and the vendored Prometheus Operator CRD
schemas (tests/schemas/), then by rules a cluster would enforce only at 3 a.m.: the image's numeric
user, claims that exist with the right access modes, Secrets and keys that the example defines,
settings each role needs to start, the key ring as a directory, who may reach the recognizer.
``kubectl kustomize`` renders the kustomization too when kubectl is installed.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import jsonschema
import kubernetes_validate
import pytest
import yaml

from verbatim.cli import API_GRACEFUL_SHUTDOWN_S
from verbatim.config import Settings
from verbatim.db.roles import APP_ROLE
from verbatim.reliability.settings import ReliabilitySettings

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
CRD_SCHEMAS = ROOT / "tests" / "schemas" / "crds"
KUBE_VERSION = "1.30"  # the oldest Kubernetes the manifests promise to run on
WORKLOADS = {"Deployment", "StatefulSet", "Job"}
# The role (first container argument) → the name Settings.refuse_default_secrets knows it by.
LONG_RUNNING = {"api": "api", "worker": "worker", "sweeper": "sweeper", "asr-server": "asr-server"}
Doc = dict[str, Any]


def kustomization() -> Doc:
    return yaml.safe_load((K8S / "kustomization.yaml").read_text())


@functools.cache
def load(path: Path) -> list[Doc]:
    """The YAML documents of ``path``, parsed once per test session: callers must not change them."""
    return [d for d in yaml.load_all(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if d]


def objects() -> list[Doc]:
    """Every object the kustomization applies, as written (before kustomize sets namespace and image)."""
    return [d for name in kustomization()["resources"] for d in load(K8S / name)]


def example_secrets() -> dict[str, dict[str, str]]:
    return {d["metadata"]["name"]: d["stringData"] for d in load(K8S / "secrets.example.yaml")}


def config_maps() -> dict[str, dict[str, str]]:
    return {d["metadata"]["name"]: d["data"] for d in objects() if d["kind"] == "ConfigMap"}


def workloads() -> list[Doc]:
    return [d for d in objects() if d["kind"] in WORKLOADS]


def pod_spec(w: Doc) -> Doc:
    return w["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def containers() -> list[tuple[Doc, Doc]]:
    return [(w, c) for w in workloads() for c in pod_spec(w)["containers"]]


def component(d: Doc) -> str:
    return d["metadata"]["labels"]["app.kubernetes.io/component"]  # type: ignore[no-any-return]


def pod_labels(w: Doc) -> dict[str, str]:
    return w["spec"]["template"]["metadata"]["labels"]  # type: ignore[no-any-return]


def effective_env(c: Doc) -> dict[str, Any]:
    """The container's environment as the kubelet builds it: envFrom in order, then env (which wins).

    Secret values come from secrets.example.yaml; a downward-API value stays a ``fieldRef`` dict.
    """
    env: dict[str, Any] = {}
    secrets, maps = example_secrets(), config_maps()
    for source in c.get("envFrom", []):
        if "configMapRef" in source:
            env.update(maps[source["configMapRef"]["name"]])
        else:
            env.update(secrets[source["secretRef"]["name"]])
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
        elif "secretKeyRef" in e["valueFrom"]:
            ref = e["valueFrom"]["secretKeyRef"]
            env[e["name"]] = secrets[ref["name"]][ref["key"]]
        else:
            env[e["name"]] = e["valueFrom"]["fieldRef"]
    return env


def settings_of(env: dict[str, Any]) -> Settings:
    """The settings a process with this environment reads (downward-API values as a pod would see them)."""
    stand_in = {"status.podIP": "10.1.2.3", "metadata.name": "capture-0"}
    values = {k.removeprefix("VERBATIM_").lower(): (stand_in[v["fieldPath"]] if isinstance(v, dict) else v)
              for k, v in env.items() if k.startswith("VERBATIM_")}
    fields = set(Settings.model_fields)
    assert set(values) <= fields, f"not settings: {set(values) - fields}"
    return Settings(**values)


# --- the validator ------------------------------------------------------------------------------


def _strict(schema: Any, under_metadata: bool = False) -> Any:
    """A CRD schema in which an object lists every property it allows (kubectl's strict validation)."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: (_strict(v, k == "metadata") if k == "properties" else _strict(v)) for k, v in schema.items()
           if k != "properties"}
    if "properties" in schema:
        out["properties"] = {k: (v if k == "metadata" else _strict(v)) for k, v in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    return out


def crd_validator(kind: str) -> jsonschema.Draft7Validator:
    schema = json.loads((CRD_SCHEMAS / f"{kind.lower()}-monitoring-v1.json").read_text())
    return jsonschema.Draft7Validator(_strict(schema))


def validate(doc: Doc) -> None:
    """Raise when ``doc`` does not match its kind's schema (Kubernetes' or a vendored CRD's)."""
    if doc["apiVersion"].startswith("monitoring.coreos.com/"):
        assert doc["apiVersion"] == "monitoring.coreos.com/v1", doc["apiVersion"]
        crd_validator(doc["kind"]).validate(doc)
    else:
        kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)


def test_every_object_passes_its_schema() -> None:
    docs = objects() + load(K8S / "secrets.example.yaml")
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "StatefulSet", "Job", "Service", "PersistentVolumeClaim", "Secret", "ConfigMap",
            "Ingress", "NetworkPolicy", "PodDisruptionBudget", "ServiceMonitor", "PrometheusRule"} <= kinds
    for d in docs:
        try:
            validate(d)
        except (kubernetes_validate.ValidationError, jsonschema.ValidationError) as exc:
            pytest.fail(f"{d['kind']} {d['metadata']['name']}: {exc}")


@pytest.mark.parametrize("kind, path, value", [
    ("Deployment", ("spec", "replicas"), "two"),
    ("StatefulSet", ("spec", "template", "spec", "securityContext", "runAsNonroot"), True),  # a typo
    ("PersistentVolumeClaim", ("spec", "accessModes"), "ReadWriteMany"),
    ("ServiceMonitor", ("spec", "endpoints", 0, "bearerTokenSecrett"), {"name": "x", "key": "y"}),
    ("PrometheusRule", ("spec", "groups", 0, "rules", 0, "for"), "five minutes"),
])
def test_the_validator_refuses_a_broken_object(kind: str, path: tuple[Any, ...], value: Any) -> None:
    doc = copy.deepcopy(next(d for d in objects() if d["kind"] == kind))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises((kubernetes_validate.ValidationError, jsonschema.ValidationError)):
        validate(doc)


# --- the kustomization and the image -----------------------------------------------------------


def test_the_kustomization_applies_every_file_and_names_the_image_registry() -> None:
    k = kustomization()
    listed = set(k["resources"])
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml", "secrets.example.yaml"}
    assert listed == on_disk, f"not applied: {on_disk - listed}; missing: {listed - on_disk}"
    assert "secrets.example.yaml" not in listed  # placeholders must never reach a cluster
    assert k["namespace"] == "verbatim"
    (image,) = k["images"]
    assert image["name"] == "verbatim" and "/" in image["newName"] and image["newTag"]
    for w, c in containers():
        assert c["image"] == "verbatim", f"{w['metadata']['name']}: the kustomization sets registry and tag"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (its built-in kustomize) not installed")
def test_kubectl_kustomize_renders_objects_that_pass_their_schemas() -> None:
    result = subprocess.run(["kubectl", "kustomize", str(K8S)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    rendered = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert {(d["kind"], d["metadata"]["name"]) for d in rendered} == \
        {(d["kind"], d["metadata"]["name"]) for d in objects()}
    image = kustomization()["images"][0]
    for d in rendered:
        validate(d)
        if d["kind"] != "Namespace":
            assert d["metadata"]["namespace"] == "verbatim", d["metadata"]["name"]
        if d["kind"] in WORKLOADS:
            for c in pod_spec(d)["containers"]:
                assert c["image"] == f"{image['newName']}:{image['newTag']}"


# --- who the pods run as -----------------------------------------------------------------------


def dockerfile_user() -> tuple[int, int]:
    text = (ROOT / "Dockerfile").read_text()
    (user,) = re.findall(r"^USER (\S+)$", text, re.M)
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and gid.isdigit(), "runAsNonRoot can only check a numeric USER (uid:gid)"
    assert re.search(rf"groupadd [^\n]*--gid {gid}\b", text) and re.search(rf"useradd [^\n]*--uid {uid}\b", text)
    return int(uid), int(gid)


def test_every_pod_runs_as_the_images_numeric_user_under_the_restricted_profile() -> None:
    uid, gid = dockerfile_user()
    assert uid != 0
    for w in workloads():
        pod = pod_spec(w)
        sc = pod["securityContext"]
        name = w["metadata"]["name"]
        assert (sc["runAsNonRoot"], sc["runAsUser"], sc["runAsGroup"]) == (True, uid, gid), name
        if any("persistentVolumeClaim" in v for v in pod.get("volumes", [])):
            assert sc["fsGroup"] == gid, f"{name}: its volumes must be writable by the image's group"
        assert sc["seccompProfile"]["type"] == "RuntimeDefault", name
        assert pod["automountServiceAccountToken"] is False, name
        for c in pod["containers"]:
            csc = c["securityContext"]
            assert csc["allowPrivilegeEscalation"] is False and csc["capabilities"]["drop"] == ["ALL"], name
            assert "runAsUser" not in csc or csc["runAsUser"] == uid, name
            if csc.get("readOnlyRootFilesystem"):
                assert "/tmp" in {m["mountPath"] for m in c["volumeMounts"]}, f"{name}: nowhere to write /tmp"
    ns = next(d for d in objects() if d["kind"] == "Namespace")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


# --- volumes -----------------------------------------------------------------------------------


def test_every_claim_is_defined_and_a_claim_shared_by_several_pods_is_read_write_many() -> None:
    claims = {d["metadata"]["name"]: d for d in objects() if d["kind"] == "PersistentVolumeClaim"}
    mounters: dict[str, int] = {}
    for w in workloads():
        replicas = w["spec"].get("replicas", 1)
        for v in pod_spec(w).get("volumes", []):
            if "persistentVolumeClaim" in v:
                name = v["persistentVolumeClaim"]["claimName"]
                assert name in claims, f"{w['metadata']['name']} uses claim {name}, which nothing defines"
                mounters[name] = mounters.get(name, 0) + replicas
    assert set(mounters) == set(claims), f"claims nobody mounts: {set(claims) - set(mounters)}"
    assert mounters["verbatim-audio"] >= 6  # API ×2, capture workers ×2, sweepers ×2
    for name, count in mounters.items():
        modes = claims[name]["spec"]["accessModes"]
        if count > 1:
            assert modes == ["ReadWriteMany"], f"{name} is mounted by {count} pods on any node"
            # The default class is block storage on most clusters: a shared claim names its class.
            assert claims[name]["spec"].get("storageClassName"), name
        else:
            assert modes == ["ReadWriteOnce"], name
    recognizer = next(w for w in workloads() if component(w) == "recognizer")
    assert recognizer["spec"]["strategy"]["type"] == "Recreate"  # its ReadWriteOnce volume: one pod at a time


def test_the_key_ring_is_a_secret_mounted_as_a_directory_so_rotations_reach_running_pods() -> None:
    ring_key = next(iter(example_secrets()["verbatim-keys"]))
    for w, c in containers():
        for m in c.get("volumeMounts", []):
            assert "subPath" not in m and "subPathExpr" not in m, f"{c['name']}: a subPath mount never updates"
        key_file = effective_env(c).get("VERBATIM_KEY_FILE")
        if c["args"][0] in ("migrate", "analysis-worker"):
            continue  # neither opens sealed data
        assert key_file, f"{c['name']} has no key ring"
        path = Path(key_file)
        assert path.name == ring_key
        mount = next(m for m in c["volumeMounts"] if m["mountPath"] == str(path.parent))
        assert mount["readOnly"] is True
        volume = next(v for v in pod_spec(w)["volumes"] if v["name"] == mount["name"])
        assert volume["secret"]["secretName"] == "verbatim-keys" and "items" not in volume["secret"]
        # Owned by root, group fsGroup: group-readable, nothing more.
        assert volume["secret"]["defaultMode"] == 0o440


# --- Secrets, ConfigMaps and the settings each role needs ---------------------------------------


def referenced_secrets() -> set[tuple[str, str | None]]:
    """(Secret, key) pairs the objects read; key None: the whole Secret (envFrom, volume, TLS)."""
    refs: set[tuple[str, str | None]] = set()
    for w in workloads():
        for c in pod_spec(w)["containers"]:
            refs |= {(s["secretRef"]["name"], None) for s in c.get("envFrom", []) if "secretRef" in s}
            refs |= {(e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
                     for e in c.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})}
        refs |= {(v["secret"]["secretName"], None) for v in pod_spec(w).get("volumes", []) if "secret" in v}
    for d in objects():
        if d["kind"] == "Ingress":
            refs |= {(t["secretName"], None) for t in d["spec"]["tls"]}
        if d["kind"] == "ServiceMonitor":
            for e in d["spec"]["endpoints"]:
                if "authorization" in e:
                    cred = e["authorization"]["credentials"]
                    refs.add((cred["name"], cred["key"]))
    return refs


def test_every_secret_and_key_the_manifests_read_is_in_the_example() -> None:
    secrets = example_secrets()
    refs = referenced_secrets()
    assert {name for name, _ in refs} == set(secrets), "the example holds exactly the Secrets in use"
    for name, key in refs:
        assert key is None or key in secrets[name], f"{name} has no key {key}"
    for name, data in secrets.items():
        for key, value in data.items():
            if key.startswith("VERBATIM_"):
                assert key.removeprefix("VERBATIM_").lower() in Settings.model_fields, f"{name}: {key}"
            assert "CHANGE-ME" in value, f"{name}.{key}: an example holds placeholders only"
    maps = config_maps()
    for _, c in containers():
        for s in c.get("envFrom", []):
            assert "secretRef" in s or s["configMapRef"]["name"] in maps


def test_each_role_has_every_setting_it_needs_to_start_in_production() -> None:
    seen = set()
    for _w, c in containers():
        role = c["args"][0]
        seen.add(role)
        s = settings_of(effective_env(c))
        assert s.mode == "production", c["name"]
        if role in LONG_RUNNING:
            s.refuse_default_secrets(LONG_RUNNING[role])  # raises ConfigError naming what is missing
        if role != "asr-server":
            assert s.database_url, c["name"]
        if role not in ("asr-server", "migrate"):
            assert s.redis_url, c["name"]
    assert seen == {"api", "worker", "sweeper", "analysis-worker", "asr-server", "migrate"}


def test_migrations_run_as_the_administrator_and_the_services_as_the_runtime_role() -> None:
    (job,) = [w for w in workloads() if w["kind"] == "Job"]
    (migrate,) = pod_spec(job)["containers"]
    assert migrate["args"] == ["migrate"] and pod_spec(job)["restartPolicy"] in ("OnFailure", "Never")
    admin = settings_of(effective_env(migrate))
    assert admin.database_url and urlparse(admin.database_url).username != APP_ROLE
    assert admin.db_app_password
    for _w, c in containers():
        if c["args"][0] in ("migrate", "asr-server"):
            continue
        url = settings_of(effective_env(c)).database_url
        assert url and urlparse(url).username == APP_ROLE, c["name"]
        # The password migrate sets on the runtime role is the one the services log in with.
        assert urlparse(url).password == admin.db_app_password
    readers = {(name, w["metadata"]["name"]) for w in workloads() for name, _ in referenced_secrets_of(w)}
    assert {w for name, w in readers if name == "verbatim-migrate"} == {"verbatim-migrate"}


def referenced_secrets_of(w: Doc) -> set[tuple[str, str | None]]:
    refs: set[tuple[str, str | None]] = set()
    for c in pod_spec(w)["containers"]:
        refs |= {(s["secretRef"]["name"], None) for s in c.get("envFrom", []) if "secretRef" in s}
        refs |= {(e["valueFrom"]["secretKeyRef"]["name"], None) for e in c.get("env", [])
                 if "secretKeyRef" in e.get("valueFrom", {})}
    return refs


def test_service_urls_in_the_settings_name_services_that_exist() -> None:
    services = {d["metadata"]["name"]: d for d in objects() if d["kind"] == "Service"}
    for _, c in containers():
        s = settings_of(effective_env(c))
        for url in (s.recognizer_url, s.callback_base_url):
            if not url:
                continue
            parsed = urlparse(url)
            assert parsed.hostname in services, f"{c['name']}: {url} names no Service"
            assert parsed.port in {p["port"] for p in services[parsed.hostname]["spec"]["ports"]}, url


# --- the network -------------------------------------------------------------------------------


def policies() -> list[Doc]:
    return [d for d in objects() if d["kind"] == "NetworkPolicy"]


def selects(selector: Doc, labels: dict[str, str]) -> bool:
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for e in selector.get("matchExpressions", []):
        if e["operator"] == "In" and labels.get(e["key"]) not in e["values"]:
            return False
    return True


def allowed_peers(target: dict[str, str], port: int) -> list[Doc]:
    """The peers any policy lets reach pods labelled ``target`` on ``port``."""
    peers = []
    for p in policies():
        if not selects(p["spec"]["podSelector"], target):
            continue
        for rule in p["spec"].get("ingress", []):
            if any(rp["port"] == port for rp in rule.get("ports", [])):
                peers += rule["from"]
    return peers


def test_ingress_is_denied_by_default_and_every_service_port_is_allowed_from_someone() -> None:
    deny = [p for p in policies() if p["spec"]["podSelector"] == {} and "ingress" not in p["spec"]]
    assert deny and deny[0]["spec"]["policyTypes"] == ["Ingress"]
    for svc in (d for d in objects() if d["kind"] == "Service"):
        backing = [w for w in workloads() if selects({"matchLabels": svc["spec"]["selector"]}, pod_labels(w))]
        assert backing, f"Service {svc['metadata']['name']} selects no pods"
        for w in backing:
            named = {p["name"]: p["containerPort"] for c in pod_spec(w)["containers"] for p in c.get("ports", [])}
            for port in svc["spec"]["ports"]:
                target = named[port["targetPort"]]
                assert allowed_peers(pod_labels(w), target), f"nothing may reach {svc['metadata']['name']}:{target}"


def test_the_recognizer_is_reached_only_by_workers_and_sweepers_and_reaches_only_the_api_and_dns() -> None:
    rec = next(w for w in workloads() if component(w) == "recognizer")
    (container,) = pod_spec(rec)["containers"]
    assert effective_env(container)["VERBATIM_ASR_HOST"] == {"fieldPath": "status.podIP"}  # not 0.0.0.0
    port = settings_of(effective_env(container)).asr_port
    peers = allowed_peers(pod_labels(rec), port)
    may_reach = {component(w) for w in workloads() if any(
        "podSelector" in peer and "namespaceSelector" not in peer and selects(peer["podSelector"], pod_labels(w))
        for peer in peers)}
    assert may_reach == {"capture-worker", "sweeper"}
    assert all("namespaceSelector" not in peer and "ipBlock" not in peer for peer in peers)
    (policy,) = [p for p in policies() if selects(p["spec"]["podSelector"], pod_labels(rec))
                 and "Egress" in p["spec"]["policyTypes"]]
    egress = policy["spec"]["egress"]
    api = next(w for w in workloads() if component(w) == "api")
    for rule in egress:
        (peer,) = rule["to"]
        ports = {(p["protocol"], p["port"]) for p in rule["ports"]}
        if "namespaceSelector" in peer:
            assert peer["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
            assert ports == {("UDP", 53), ("TCP", 53)}
        else:
            assert selects(peer["podSelector"], pod_labels(api)) and ports == {("TCP", 8000)}
    assert len(egress) == 2


@pytest.mark.parametrize("store, port, users", [
    ("postgresql", 5432, {"api", "capture-worker", "sweeper", "analysis-worker", "migrate"}),
    ("redis", 6379, {"api", "capture-worker", "sweeper", "analysis-worker"}),
])
def test_postgresql_and_redis_take_connections_only_from_verbatims_processes(store: str, port: int,
                                                                              users: set[str]) -> None:
    peers = allowed_peers({"app.kubernetes.io/name": store}, port)
    assert peers and all(set(peer) == {"podSelector"} for peer in peers)
    reach = {component(w) for w in workloads() if any(selects(p["podSelector"], pod_labels(w)) for p in peers)}
    assert reach == users  # the recognizer, holding patient audio, has no business with either


# --- probes, grace periods, monitoring, ingress --------------------------------------------------


def test_probes_name_real_ports_and_grace_periods_cover_each_roles_shutdown() -> None:
    for w, c in containers():
        named = {p["name"] for p in c.get("ports", [])}
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            if probe in c:
                assert c[probe]["httpGet"]["port"] in named, (c["name"], probe)
        role = c["args"][0]
        grace = pod_spec(w).get("terminationGracePeriodSeconds", 30)
        s = settings_of(effective_env(c))
        if role in ("api", "worker", "sweeper", "asr-server"):
            assert "livenessProbe" in c, c["name"]
        if role == "api":
            assert "readinessProbe" in c and c["readinessProbe"]["httpGet"]["path"] == "/readyz"
            pre_stop = int(c["lifecycle"]["preStop"]["exec"]["command"][-1])
            assert pre_stop + API_GRACEFUL_SHUTDOWN_S < grace
        if role == "worker":
            assert s.teardown_budget_s + s.teardown_attempt_timeout_s < s.shutdown_window_s - s.drain_s
            assert grace >= s.shutdown_window_s
        if role == "analysis-worker":
            assert grace > ReliabilitySettings.model_fields["shutdown_drain_s"].default


def test_service_monitors_scrape_every_metrics_port_and_the_api_with_its_token() -> None:
    monitors = [d for d in objects() if d["kind"] == "ServiceMonitor"]
    for svc in (d for d in objects() if d["kind"] == "Service"):
        labels = svc["metadata"]["labels"]
        ports = {p["name"] for p in svc["spec"]["ports"]}
        endpoints = [e for m in monitors if selects(m["spec"]["selector"], labels) for e in m["spec"]["endpoints"]]
        scraped = {e["port"] for e in endpoints}
        if "metrics" in ports:
            assert "metrics" in scraped, svc["metadata"]["name"]
        if component(svc) == "api":
            (endpoint,) = endpoints
            assert endpoint["path"] == "/metrics" and endpoint["authorization"]["credentials"] == \
                {"name": "verbatim-env", "key": "VERBATIM_METRICS_TOKEN"}
        if component(svc) == "recognizer":
            assert not scraped
    for _, c in containers():
        port = settings_of(effective_env(c)).metrics_port
        if port:
            assert {"name": "metrics", "containerPort": port} in c["ports"], c["name"]


def test_the_alert_rules_and_dashboard_objects_are_made_from_their_sources() -> None:
    from scripts import k8s_monitoring

    for name, render in k8s_monitoring.OUTPUTS.items():
        assert (K8S / name).read_text() == render(), f"run python scripts/k8s_monitoring.py ({name} is stale)"
    rule = next(d for d in objects() if d["kind"] == "PrometheusRule")
    alerts = yaml.safe_load((ROOT / "deploy" / "prometheus" / "alerts.yml").read_text())
    assert rule["spec"]["groups"] == alerts["groups"]
    board = config_maps()["verbatim-grafana-dashboard"]
    assert json.loads(board["verbatim-capacity.json"]) == \
        json.loads((ROOT / "deploy" / "grafana" / "verbatim-capacity.json").read_text())


def test_the_ingress_serves_the_public_url_over_tls_to_the_api() -> None:
    (ing,) = [d for d in objects() if d["kind"] == "Ingress"]
    public = urlparse(config_maps()["verbatim-config"]["VERBATIM_PUBLIC_URL"])
    assert public.scheme == "https"
    hosts = {r["host"] for r in ing["spec"]["rules"]}
    assert hosts == {public.hostname} and hosts <= {h for t in ing["spec"]["tls"] for h in t["hosts"]}
    services = {d["metadata"]["name"]: d for d in objects() if d["kind"] == "Service"}
    for rule in ing["spec"]["rules"]:
        for path in rule["http"]["paths"]:
            backend = path["backend"]["service"]
            assert component(services[backend["name"]]) == "api"
            assert backend["port"]["name"] in {p["name"] for p in services[backend["name"]]["spec"]["ports"]}
    size = ing["metadata"]["annotations"]["nginx.ingress.kubernetes.io/proxy-body-size"]
    assert int(size.removesuffix("g")) * 2**30 >= Settings.model_fields["max_upload_bytes"].default

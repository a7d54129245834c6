"""deploy/: the Kubernetes manifests, Prometheus alert rules and Grafana dashboard agree with the code.

Schema checks in Python (kubeconform does not install here); ``promtool check rules`` too when the
Debian ``prometheus`` package is installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import verbatim.telemetry.ops as ops
from verbatim.config import Settings
from verbatim.telemetry import metrics

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
ROLES = {"api", "worker", "sweeper", "analysis-worker", "asr-server"}
WORKLOADS = {"Deployment", "StatefulSet"}


def manifests() -> list[dict[str, Any]]:
    docs = []
    for name in yaml.safe_load((DEPLOY / "k8s" / "kustomization.yaml").read_text())["resources"]:
        docs += [d for d in yaml.safe_load_all((DEPLOY / "k8s" / name).read_text()) if d]
    return docs


def by_component(kind: str, component: str) -> dict[str, Any]:
    found = [d for d in manifests() if d["kind"] == kind
             and d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == component]
    assert len(found) == 1, (kind, component, len(found))
    return found[0]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def known_metrics() -> set[str]:
    """Every sample name the code exports: prometheus-client families (+ _total/_bucket…) and the ops gauges."""
    names: set[str] = set()
    for value in vars(metrics).values():
        describe = getattr(value, "describe", None)
        if describe is None or not hasattr(value, "_name"):
            continue
        for family in describe():
            names.add(family.name)
            names.update(f"{family.name}{suffix}" for suffix in ("_total", "_bucket", "_count", "_sum", "_created"))
    names.update(re.findall(r'GaugeMetricFamily\(\s*"(\w+)"', Path(ops.__file__).read_text()))
    return names


def metric_names(expr: str) -> set[str]:
    tokens = set(re.findall(r"[a-zA-Z_][a-zA-Z0-9_]*", re.sub(r'"[^"]*"', "", expr)))
    return {t for t in tokens if t.startswith("verbatim_") or t.endswith(("_total", "_bucket", "_seconds"))}


def test_every_manifest_is_well_formed() -> None:
    docs = manifests()
    assert {d["kind"] for d in docs} >= {"Deployment", "StatefulSet", "Service", "PodDisruptionBudget"}
    fields = set(Settings.model_fields)
    roles_seen = set()
    for d in docs:
        assert d["apiVersion"] and d["metadata"]["name"], d
        if d["kind"] not in WORKLOADS:
            continue
        assert d["apiVersion"] == "apps/v1"
        spec = d["spec"]
        template_labels = spec["template"]["metadata"]["labels"]
        assert spec["selector"]["matchLabels"].items() <= template_labels.items(), d["metadata"]["name"]
        for c in spec["template"]["spec"]["containers"]:
            assert c["image"] and c["args"][0] in ROLES, c
            roles_seen.add(c["args"][0])
            for name in env_of(c):
                if name.startswith("VERBATIM_"):
                    assert name.removeprefix("VERBATIM_").lower() in fields, f"{name} is not a setting"
            assert c["resources"]["requests"], c["name"]
    assert roles_seen == ROLES
    for pdb in (d for d in docs if d["kind"] == "PodDisruptionBudget"):
        selected = [w for w in docs if w["kind"] in WORKLOADS and pdb["spec"]["selector"]["matchLabels"].items()
                    <= w["spec"]["template"]["metadata"]["labels"].items()]
        assert selected, f"PodDisruptionBudget {pdb['metadata']['name']} selects no workload"


def test_capture_workers_have_stable_names_and_drain_inside_their_grace_period() -> None:
    sts = by_component("StatefulSet", "capture-worker")
    pod = sts["spec"]["template"]["spec"]
    worker = pod["containers"][0]
    assert worker["args"] == ["worker", "--name", "$(POD_NAME)"]  # the ordinal: capture-0, capture-1…
    env = env_of(worker)
    assert env["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    s = Settings(mode="development", **{k.removeprefix("VERBATIM_").lower(): v for k, v in env.items()
                                        if k.startswith("VERBATIM_") and isinstance(v, str)})
    # The drain inequality (config.py checks it too), and the grace period is the shutdown window.
    assert s.teardown_budget_s + s.teardown_attempt_timeout_s < s.shutdown_window_s - s.drain_s
    assert pod["terminationGracePeriodSeconds"] >= s.shutdown_window_s
    assert sts["spec"]["updateStrategy"]["type"] == "RollingUpdate"  # one pod at a time (StatefulSet order)
    pdb = by_component_pdb("capture")
    assert pdb["spec"]["maxUnavailable"] == 1


def by_component_pdb(name: str) -> dict[str, Any]:
    return next(d for d in manifests() if d["kind"] == "PodDisruptionBudget" and d["metadata"]["name"] == name)


def test_alert_rules_parse_and_name_real_metrics() -> None:
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
    known = known_metrics()
    alerts = [r for g in rules["groups"] for r in g["rules"]]
    assert {a["alert"] for a in alerts} >= {"VerbatimSessionQueuedTooLong", "VerbatimSweepsNotRunning",
                                            "VerbatimSessionBlocked", "VerbatimBackendUnavailable",
                                            "VerbatimDeadLettersGrowing", "VerbatimRecoveriesSlow"}
    for a in alerts:
        assert a["expr"] and a["labels"]["severity"] in ("page", "ticket") and a["annotations"]["summary"], a
        unknown = metric_names(a["expr"]) - known
        assert not unknown, f"{a['alert']} uses metrics nothing exports: {unknown}"


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian package prometheus) not installed")
def test_promtool_accepts_the_alert_rules() -> None:
    result = subprocess.run(["promtool", "check", "rules", str(DEPLOY / "prometheus" / "alerts.yml")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_dashboard_parses_and_graphs_real_metrics() -> None:
    dash = json.loads((DEPLOY / "grafana" / "verbatim-capacity.json").read_text())
    known = known_metrics()
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)) and dash["uid"]
    graphed: set[str] = set()
    for p in dash["panels"]:
        assert p["targets"], p["title"]
        for t in p["targets"]:
            names = metric_names(t["expr"])
            assert names and not names - known, (p["title"], names - known)
            graphed |= names
    # What the issue asks ops to see: sessions by status, oldest queued/parked, queue depths, runs, recoveries.
    assert {"verbatim_sessions", "verbatim_oldest_queued_seconds", "verbatim_oldest_parked_seconds",
            "verbatim_queue_depth", "runs_ended_total", "recoveries_total",
            "recovery_latency_seconds_bucket"} <= graphed

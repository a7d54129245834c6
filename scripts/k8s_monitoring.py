"""Write deploy/k8s/prometheus-rules.yaml and grafana-dashboard.yaml from deploy/prometheus/alerts.yml
and deploy/grafana/verbatim-capacity.json, the sources of truth.

kustomize reads no file outside its folder and cannot put a YAML file into a custom resource's
spec, so the two Kubernetes objects are made here; tests/unit/test_deploy_k8s.py fails when they
are stale. Run ``python scripts/k8s_monitoring.py`` after changing either source.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
HEADER = "# Made by scripts/k8s_monitoring.py from {source}: edit that file, then run the script.\n"
LABELS = {"app.kubernetes.io/name": "verbatim"}


def prometheus_rule() -> str:
    """The PrometheusRule object (monitoring.coreos.com/v1) holding alerts.yml's groups."""
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
    doc = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
           "metadata": {"name": "verbatim", "labels": LABELS}, "spec": {"groups": rules["groups"]}}
    return HEADER.format(source="deploy/prometheus/alerts.yml") + yaml.safe_dump(doc, sort_keys=False, width=120)


def dashboard_configmap() -> str:
    """A ConfigMap with the dashboard, labelled for the Grafana sidecar (kube-prometheus-stack's default)."""
    text = (DEPLOY / "grafana" / "verbatim-capacity.json").read_text()
    json.loads(text)  # refuse to ship a dashboard that does not parse
    doc = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "verbatim-grafana-dashboard", "labels": {**LABELS, "grafana_dashboard": "1"}},
           "data": {"verbatim-capacity.json": text}}
    return HEADER.format(source="deploy/grafana/verbatim-capacity.json") + yaml.safe_dump(
        doc, sort_keys=False, width=120)


OUTPUTS = {"prometheus-rules.yaml": prometheus_rule, "grafana-dashboard.yaml": dashboard_configmap}


def main() -> None:
    for name, render in OUTPUTS.items():
        (DEPLOY / "k8s" / name).write_text(render())
        print(f"wrote deploy/k8s/{name}")


if __name__ == "__main__":
    main()

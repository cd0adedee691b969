#!/usr/bin/env python3
"""Static checks of the monitoring packaging (no build, no Prometheus; ctest deploy_monitoring):

- every alert of deploy/prometheus/rules.yml links its own section of docs/runbooks.md, and
  every section there is an alert's;
- every alert has a `promtool test rules` case in tests/metrics/rules_test.yml whose input
  carries `namespace` and whose expected alert keeps it (kube-prometheus-stack's namespaced
  AlertmanagerConfig routes on it);
- the dashboard names DCGM metrics a real dcgm-exporter serves: its default counters, or the
  lines of deploy/dcgm-exporter/gpubench-counters.csv, the pre-DCGM-3.3 name only beside the
  current one; no legend depends on dcgm-exporter's host label (renamed Hostname -> hostname);
  its node variable replaced the pod-address one;
- LICENSE is the Apache-2.0 text, and both final image stages label it and their provenance.

    monitoring_test.py SOURCE_DIR
"""
import json
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "metrics"))
import dcgm_exporter  # noqa: E402

RUNBOOKS = "https://github.com/gpubench/gpubench/blob/main/docs/runbooks.md#"
failures = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def github_anchor(heading):
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    rules = yaml.safe_load(open(os.path.join(src, "deploy/prometheus/rules.yml")))
    alerts = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
    check(len(alerts) >= 7, f"{len(alerts)} alerts in rules.yml")

    # Runbooks: one section per alert, linked by anchor.
    with open(os.path.join(src, "docs/runbooks.md")) as f:
        sections = {github_anchor(h): h.strip()
                    for h in re.findall(r"^## (.+)$", f.read(), re.M)}
    for a in alerts:
        url = a.get("annotations", {}).get("runbook_url", "")
        anchor = url[len(RUNBOOKS):] if url.startswith(RUNBOOKS) else None
        check(anchor == a["alert"].lower() and anchor in sections,
              f"{a['alert']}: runbook_url {url!r} is its section of docs/runbooks.md")
    names = {a["alert"] for a in alerts}
    check(set(sections.values()) <= names,
          f"every docs/runbooks.md section is an alert's (extra: {sorted(set(sections.values()) - names)})")

    # Every alert keeps `namespace`, as a promtool test of it shows.
    tests = yaml.safe_load(open(os.path.join(src, "tests/metrics/rules_test.yml")))["tests"]
    kept = set()
    for t in tests:
        with_ns = all('namespace="' in s["series"] for s in t.get("input_series", []))
        for case in t.get("alert_rule_test", []):
            if with_ns and any("namespace" in e.get("exp_labels", {})
                               for e in case.get("exp_alerts", [])):
                kept.add(case["alertname"])
    check(names <= kept, f"every alert has a rules_test.yml case that keeps namespace "
                         f"(missing: {sorted(names - kept)})")

    # DCGM names a real install serves.
    dashboard = json.load(open(os.path.join(src, "deploy/grafana/gpubench-dashboard.json")))
    served = set(dcgm_exporter.STOCK_DEFAULT_FIELDS) | set(dcgm_exporter.extra_fields(src))
    check(dcgm_exporter.CLOCK_EVENTS in dcgm_exporter.extra_fields(src),
          "deploy/dcgm-exporter/gpubench-counters.csv adds the clock-event field")
    targets = [(p["title"], t) for p in dashboard["panels"] for t in p.get("targets", [])]
    for title, t in targets:
        used = set(re.findall(r"\bDCGM_FI_\w+", t["expr"]))
        legacy_ok = (dcgm_exporter.CLOCK_EVENTS_LEGACY not in used
                     or dcgm_exporter.CLOCK_EVENTS in used)
        if used:
            check(used <= served | {dcgm_exporter.CLOCK_EVENTS_LEGACY} and legacy_ok,
                  f"panel '{title}': DCGM metrics {sorted(used)} are served by dcgm-exporter "
                  f"(defaults or gpubench-counters.csv; the pre-3.3 name only beside the new)")
            host = {"Hostname", "hostname"} & set(dcgm_exporter.legend_labels(t.get("legendFormat")))
            check(not host, f"panel '{title}': legend uses no dcgm-exporter host label {sorted(host)}")
    variables = [v["name"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    text = json.dumps(dashboard)
    check("node" in variables and "$instance" not in text,
          f"the dashboard filters by node, not by pod address (variables {variables})")

    # Licence and image metadata.
    path = os.path.join(src, "LICENSE")
    license_text = open(path).read() if os.path.exists(path) else ""
    debian = "/usr/share/common-licenses/Apache-2.0"
    if os.path.exists(debian):
        check(license_text == open(debian).read(), f"LICENSE is the Apache-2.0 text ({debian})")
    else:
        check("Apache License" in license_text and "Version 2.0, January 2004" in license_text
              and "END OF TERMS AND CONDITIONS" in license_text, "LICENSE is the Apache-2.0 text")
    with open(os.path.join(src, "Dockerfile")) as f:
        stages = re.split(r"^FROM ", f.read(), flags=re.M)[1:]
    for stage in stages:
        name = stage.split()[2] if " AS " in stage.splitlines()[0] else stage.split()[0]
        if name not in ("client", "server"):
            continue
        labels = set(re.findall(r"org\.opencontainers\.image\.(\w+)=", stage))
        check(labels >= {"source", "revision", "version", "licenses"}
              and 'licenses="Apache-2.0"' in stage and "COPY LICENSE" in stage,
              f"Dockerfile stage {name}: OCI labels {sorted(labels)} and the LICENSE")
    print(f"{'FAILED' if failures else 'OK'}: {len(failures)} failed checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""What a stock dcgm-exporter serves, for the tests that stand one in beside gpubench.

Written from NVIDIA/dcgm-exporter's sources (read, not copied): the metric names are the fields
etc/default-counters.csv enables (release 4.5.3-4.8.2, unchanged on main since), one series per
GPU with the labels of internal/pkg/rendermetrics/render_metrics.go, in its order. Main renamed
the host label `Hostname` to `hostname` after that release (NVIDIA/dcgm-exporter#655); clusters run both for a while.
The clock-event bitmask is not a default counter: a site adds it to its counters CSV, under its
DCGM 3.3+ name DCGM_FI_DEV_CLOCKS_EVENT_REASONS (deploy/dcgm-exporter/gpubench-counters.csv) or,
in CSVs written before DCGM 3.3, DCGM_FI_DEV_CLOCK_THROTTLE_REASONS (the same field id).
"""
import os
import re

# The fields default-counters.csv enables (commented-out lines left out), with their types.
# DCGM_FI_DRIVER_VERSION, also enabled, is a "label" field: it becomes a label of every series.
STOCK_DEFAULT_FIELDS = {
    "DCGM_FI_DEV_SM_CLOCK": "gauge", "DCGM_FI_DEV_MEM_CLOCK": "gauge",
    "DCGM_FI_DEV_MEMORY_TEMP": "gauge", "DCGM_FI_DEV_GPU_TEMP": "gauge",
    "DCGM_FI_DEV_POWER_USAGE": "gauge", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "counter",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "counter", "DCGM_FI_DEV_GPU_UTIL": "gauge",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "gauge", "DCGM_FI_DEV_ENC_UTIL": "gauge",
    "DCGM_FI_DEV_DEC_UTIL": "gauge", "DCGM_FI_DEV_XID_ERRORS": "gauge",
    "DCGM_FI_DEV_FB_FREE": "gauge", "DCGM_FI_DEV_FB_USED": "gauge",
    "DCGM_FI_DEV_FB_RESERVED": "gauge", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "counter",
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS": "gauge",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "counter",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": "counter", "DCGM_FI_DEV_ROW_REMAP_FAILURE": "gauge",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gauge", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "gauge",
    "DCGM_FI_PROF_DRAM_ACTIVE": "gauge", "DCGM_FI_PROF_PCIE_TX_BYTES": "gauge",
    "DCGM_FI_PROF_PCIE_RX_BYTES": "gauge",
}
CLOCK_EVENTS = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
CLOCK_EVENTS_LEGACY = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"

# The exporter as clusters run it. "current": the host label as on main (hostname) and the
# counters line gpubench documents; "legacy": Hostname and a pre-DCGM-3.3 counters CSV; "stock":
# hostname and default counters only (no clock events at all).
STYLES = ("current", "legacy", "stock")


def extra_fields(src):
    """{field: type} of deploy/dcgm-exporter/gpubench-counters.csv (the lines to add)."""
    fields = {}
    with open(os.path.join(src, "deploy/dcgm-exporter/gpubench-counters.csv")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, kind = [c.strip() for c in line.split(",")[:2]]
                fields[name] = kind
    return fields


def fields_for(style, src):
    fields = dict(STOCK_DEFAULT_FIELDS)
    if style == "current":
        fields.update(extra_fields(src))
    elif style == "legacy":
        fields.update({(CLOCK_EVENTS_LEGACY if k == CLOCK_EVENTS else k): v
                       for k, v in extra_fields(src).items()})
    return fields


# Values the dashboard's panels can show; the clock-event bitmask says "power cap" (4).
VALUES = {"DCGM_FI_DEV_SM_CLOCK": 1980, "DCGM_FI_DEV_POWER_USAGE": 512.5,
          "DCGM_FI_DEV_GPU_TEMP": 61, CLOCK_EVENTS: 4, CLOCK_EVENTS_LEGACY: 4}


def exposition(scrape, style, src):
    """dcgm-exporter's text for the GPUs of a gpubench scrape's gpubench_device_info."""
    host_label = "Hostname" if style == "legacy" else "hostname"
    infos = [l for l in scrape.splitlines() if l.startswith("gpubench_device_info{")]
    lines = []
    for name, kind in sorted(fields_for(style, src).items()):
        lines += [f"# HELP {name} {name}.", f"# TYPE {name} {kind}"]
        for info in infos:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', info))
            dcgm = {"gpu": labels.get("gpu", ""), "UUID": labels.get("UUID", ""),
                    "pci_bus_id": labels.get("pci_bus_id", ""),
                    "device": "nvidia" + labels.get("gpu", ""),
                    "modelName": labels.get("modelName", ""),
                    host_label: labels.get("Hostname", ""),
                    "DCGM_FI_DRIVER_VERSION": labels.get("kernel_driver", "")}
            body = ",".join(f'{k}="{v}"' for k, v in dcgm.items())
            lines.append(f"{name}{{{body}}} {VALUES.get(name, 0)}")
    return "\n".join(lines) + "\n"


def promql_blocks(path):
    """The queries of a Markdown file's ```promql blocks: comment lines dropped, a query's
    continuation lines (indented) joined to it."""
    queries = []
    with open(path) as f:
        text = f.read()
    for block in re.findall(r"```promql\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line.startswith((" ", "\t")) and queries:
                queries[-1] += " " + line.strip()
            else:
                queries.append(line.strip())
    return queries


def legend_labels(legend):
    return re.findall(r"\{\{\s*(\w+)\s*\}\}", legend or "")

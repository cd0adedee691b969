#!/usr/bin/env python3
"""Tables for issue #19's remaining misses from the raw files of bench/run_device_counters19.sh.

  bench/counters19_report.py RESULTS_DIR > RESULTS_DIR/report.md

Reads (missing files leave rows out):
  probe_{exact,pad}_rI.csv        l2_probe timing (variant,elements,mode,median_us,tb_per_s,check)
  ncu_probe_{exact,pad}.csv/.log  ncu on `l2_probe --ncu`: 3 launches per variant, in the order the
                                  probe prints the variants (its log); the 3rd is the steady one
  ncu_srv16_{pad0,pad34M}.*       ncu on the server, 16Mi hot profile launches; .runs = the runs in
                                  order with their rc; the launches from the 3rd on are the hot ones
  ncu_256_{cold,hot}.*            the same at 256Mi; cold: every launch, hot: from the 2nd on
  duty_K_{unpaced,paced}_rI.json, duty_K_cold.json   gpubench run --format=json (step 3)
  alt_K_rI.json, torch_rI.csv     step 4 (torch: kernel,elements,mode,reps,median_s,bytes_per_s)
  power.csv, clock_ref.txt, marks.txt   nvidia-smi log, its clock, each run's window
Throughput is 3 x elements x element bytes / time (as gpubench counts), in TB/s (10^12 B/s);
counters are per launch, bytes in MB (10^6).
"""
import csv
import datetime
import glob
import json
import os
import re
import statistics
import sys

D = sys.argv[1]
ELEMENT_BYTES = {"f32": 4, "f16": 2, "bf16": 2}
GOAL_16MI_HOT = 4.15  # TB/s, issue #19: 16Mi hot f16/bf16
N16 = 16 << 20
ALLOC_NAMES = {"exact": "32 MiB (exact)", "pad": "64 MiB + 64 B"}
PAD_NAMES = {"pad0": "default placement", "pad34M": "34 MiB pad"}
TIME, READ, WRITE, DRAM_PCT, HIT, TEX_HIT, TEX_READ = (
    "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed", "lts__t_sector_hit_rate.pct",
    "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", "lts__t_sectors_srcunit_tex_op_read.sum")
METRICS = (TIME, READ, WRITE, DRAM_PCT, HIT, TEX_HIT, TEX_READ)
SECTOR_BYTES = 32


def path(name):
    return os.path.join(D, name)


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(x, spec=".2f", missing="-"):
    return format(x, spec) if x is not None else missing


def rel(a, b):
    return a / b - 1 if a is not None and b else None


def pct(x):
    return f"{100 * x:+.2f}%" if x is not None else "-"


# ---- gpubench results ----

def run_json(name):
    """The RunResult of a gpubench run (NAME.json), or None (missing, empty or an error)."""
    try:
        with open(path(name + ".json")) as f:
            r = json.load(f)
        return r if float(r["timing"]["medianSeconds"]) > 0 else None
    except (OSError, ValueError, KeyError):
        return None


def moved_bytes(r):
    return 3 * int(r["request"]["elements"]) * ELEMENT_BYTES[r["request"]["dtype"]]


def tbps(r):
    return moved_bytes(r) / float(r["timing"]["medianSeconds"]) / 1e12 if r else None


def peak_tbps(r):
    p = float(r["device"].get("peakBandwidthBytesPerSecond", 0) or 0) if r else 0
    return p / 1e12 if p > 0 else None


def size_name(n):
    for unit, shift in (("Gi", 30), ("Mi", 20), ("Ki", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


# ---- Nsight Compute ----

def unit_scale(unit):
    """Factor to base units (seconds, bytes, sectors, percent) of an ncu unit."""
    times = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3,
             "s": 1.0, "second": 1.0}
    if unit in times:
        return times[unit]
    prefixes = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    if unit[:1] in prefixes and unit[1:] in ("byte", "sector"):
        return prefixes[unit[0]]
    return 1.0


def ncu_launches(name):
    """The launches of NAME.csv (ncu -i --csv --page raw) in order: dicts of kernel name and
    metric values in base units (time in seconds). [] when there is no such file or no data."""
    try:
        rows = list(csv.reader(open(path(name + ".csv"))))
    except OSError:
        return []
    start = next((i for i, r in enumerate(rows) if "Kernel Name" in r and TIME in r), None)
    if start is None or start + 1 >= len(rows):
        return []
    header, units = rows[start], rows[start + 1]
    out = []
    for r in rows[start + 2:]:
        if len(r) != len(header):
            continue
        launch = {"kernel": r[header.index("Kernel Name")]}
        for m in METRICS:
            launch[m] = None
            if m in header:
                c = header.index(m)
                try:
                    launch[m] = float(r[c].replace(",", "")) * unit_scale(units[c])
                except ValueError:
                    pass
        out.append(launch)
    return out


def groups(launches):
    """Consecutive launches of one kernel name: [(name, [launch, ...]), ...]."""
    out = []
    for launch in launches:
        if out and out[-1][0] == launch["kernel"]:
            out[-1][1].append(launch)
        else:
            out.append((launch["kernel"], [launch]))
    return out


def passes(name):
    """The most replay passes ncu reported for a kernel of this step (1 = no replay)."""
    try:
        found = re.findall(r"- (\d+) pass", open(path(name + ".log"), errors="replace").read())
    except OSError:
        return None
    return max(int(p) for p in found) if found else None


def runs(name):
    """The runs of an ncu server step that answered (rc 0), in order."""
    try:
        lines = [l.split() for l in open(path(name + ".runs"))]
    except OSError:
        return []
    return [l[0] for l in lines if len(l) == 2 and l[1] == "0"]


def summary(launches, bytes_moved):
    """Per-launch medians of the counters: {duration_us, tbps, read_mb, write_mb, dram_pct, hit_pct,
    tex_hit_pct, tex_read_mb, launches}."""
    m = {k: med(l[k] for l in launches) for k in METRICS}
    s = {"launches": len(launches)}
    s["duration_us"] = m[TIME] * 1e6 if m[TIME] else None
    s["tbps"] = bytes_moved / m[TIME] / 1e12 if m[TIME] and bytes_moved else None
    s["read_mb"] = m[READ] / 1e6 if m[READ] is not None else None
    s["write_mb"] = m[WRITE] / 1e6 if m[WRITE] is not None else None
    s["dram_pct"], s["hit_pct"] = m[DRAM_PCT], m[HIT]
    s["tex_hit_pct"] = 100 * m[TEX_HIT] / m[TEX_READ] if m[TEX_HIT] is not None and m[TEX_READ] else None
    s["tex_read_mb"] = m[TEX_READ] * SECTOR_BYTES / 1e6 if m[TEX_READ] is not None else None
    return s


COUNTER_HEAD = ("| launches | duration us | TB/s | DRAM read MB | DRAM write MB | DRAM % peak | "
                "L2 hit % | L2 tex read hit % | tex read MB | passes |")
COUNTER_RULE = "|---|---|---|---|---|---|---|---|---|---|"


def counter_cells(s, n_passes):
    return (f"{s['launches']} | {fmt(s['duration_us'])} | {fmt(s['tbps'], '.3f')} | "
            f"{fmt(s['read_mb'], '.1f')} | {fmt(s['write_mb'], '.1f')} | {fmt(s['dram_pct'], '.1f')} | "
            f"{fmt(s['hit_pct'], '.1f')} | {fmt(s['tex_hit_pct'], '.1f')} | {fmt(s['tex_read_mb'], '.1f')} | "
            f"{fmt(n_passes, 'd')} |")


def compare_counters(label_a, a, label_b, b):
    """One sentence: is the time difference between b and a extra DRAM traffic or a lower rate?"""
    if not a or not b or any(x[k] is None for x in (a, b) for k in ("duration_us", "read_mb", "write_mb")):
        return None
    dt = rel(b["duration_us"], a["duration_us"])
    bytes_a, bytes_b = a["read_mb"] + a["write_mb"], b["read_mb"] + b["write_mb"]
    db = rel(bytes_b, bytes_a)
    rate_a, rate_b = bytes_a / a["duration_us"], bytes_b / b["duration_us"]  # MB/us = TB/s
    text = (f"{label_b} vs {label_a}: duration {pct(dt)}, DRAM bytes {pct(db)} (read "
            f"{b['read_mb'] - a['read_mb']:+.1f} MB, write {b['write_mb'] - a['write_mb']:+.1f} MB), "
            f"DRAM rate {rate_a:.3f} -> {rate_b:.3f} TB/s, L2 tex read hit "
            f"{fmt(a['tex_hit_pct'], '.1f')} -> {fmt(b['tex_hit_pct'], '.1f')}%")
    if abs(dt) < 0.003:
        verdict = "the same time within 0.3%"
    elif abs(db) < abs(dt) / 2:
        verdict = ("the time differs with about the same DRAM traffic: the bytes move at a "
                   "different rate (placement acts on DRAM efficiency, not on what L2 keeps)")
    elif db * dt > 0:
        verdict = "the DRAM traffic moves with the time: the difference is bytes (what L2 keeps or writes back)"
    else:
        verdict = "more DRAM traffic but less time: the traffic does not explain it"
    return f"{text}: {verdict}."


# ---- steps ----

def step1a():
    rows = {}  # (alloc, variant) -> {"hot": [TB/s], "cold": [TB/s], "us": [hot us]}
    bad = []
    for f in sorted(glob.glob(path("probe_*_r*.csv"))):
        m = re.match(r"probe_(exact|pad)_r(\d+)\.csv$", os.path.basename(f))
        if not m:
            continue
        for row in csv.DictReader(open(f)):
            if not row.get("tb_per_s"):
                continue
            cell = rows.setdefault((m.group(1), row["variant"]), {"hot": [], "cold": [], "us": []})
            cell[row["mode"]].append(float(row["tb_per_s"]))
            if row["mode"] == "hot":
                cell["us"].append(float(row["median_us"]))
            if row.get("check") != "ok":
                bad.append(f"{os.path.basename(f)} {row['variant']}: check {row.get('check')}")
    print("## 1a. 16Mi hot: l2_probe keep25_768x1, buffer size (placement)\n")
    if not rows:
        print("No probe results.\n")
        return
    print("Each run: the probe's median of 15 batches of 50 hot launches (and of 30 cold launches), "
          "distinct inputs. Runs alternate exact, pad, pad, exact, ...\n")
    print("| variant | buffers | runs | hot us | hot TB/s (median) | hot TB/s min-max | >= 4.15 | "
          "cold TB/s |")
    print("|---|---|---|---|---|---|---|---|")
    for (alloc, variant) in sorted(rows, key=lambda k: (k[1], k[0])):
        c = rows[(alloc, variant)]
        h = med(c["hot"])
        print(f"| {variant} | {ALLOC_NAMES[alloc]} | {len(c['hot'])} | {fmt(med(c['us']))} | {fmt(h, '.3f')} | "
              f"{fmt(min(c['hot']), '.3f')}-{fmt(max(c['hot']), '.3f')} | "
              f"{'yes' if h and h >= GOAL_16MI_HOT else 'no'} | {fmt(med(c['cold']), '.3f')} |")
    print()
    for variant in sorted({v for _, v in rows}):
        e, p = rows.get(("exact", variant)), rows.get(("pad", variant))
        if not e or not p or not e["hot"] or not p["hot"]:
            continue
        gain = rel(med(p["hot"]), med(e["hot"]))
        apart = min(p["hot"]) > max(e["hot"]) or min(e["hot"]) > max(p["hot"])
        print(f"- {variant}: 64 MiB + 64 B buffers run hot {pct(gain)} against exact-size ones; the "
              f"runs' ranges {'do not overlap (a placement effect, not noise)' if apart else 'overlap (within run-to-run spread)'}; "
              f"goal {GOAL_16MI_HOT} TB/s {'reached' if med(p['hot']) >= GOAL_16MI_HOT else 'not reached'} "
              f"with the large buffers, {'reached' if med(e['hot']) >= GOAL_16MI_HOT else 'not reached'} "
              f"with exact-size ones.")
    for b in bad:
        print(f"- check failed: {b}")
    print()


def probe_counters():
    """{(alloc, variant): summary of the 3rd launch} and passes per alloc."""
    out, n_passes = {}, {}
    for alloc in ("exact", "pad"):
        name = f"ncu_probe_{alloc}"
        launches = ncu_launches(name)
        if not launches:
            continue
        try:
            log = open(path(name + ".log"), errors="replace").read()
        except OSError:
            log = ""
        variants = re.findall(r"^(\w+),\d+,ncu,", log, re.M)
        n_passes[alloc] = passes(name)
        gs = groups(launches)
        if len(gs) != len(variants):
            print(f"note: {name}: {len(gs)} kernel groups for {len(variants)} variants; paired in order\n")
        for (kernel, ls), variant in zip(gs, variants):
            dtype = variant.split("_")[0]
            # The 3rd launch: the first two bring the L2 to the state each launch leaves.
            out[(alloc, variant)] = summary(ls[2:3] if len(ls) >= 3 else ls[-1:], 3 * N16 * ELEMENT_BYTES[dtype])
    return out, n_passes


def server_counters(name, first):
    """{kernel: summary of launches[first:]} of an ncu server step, flush launches counted apart."""
    launches = ncu_launches(name)
    if not launches:
        return {}, 0
    flushes = sum("L2ReadFlush" in l["kernel"] for l in launches)
    gs = groups([l for l in launches if "L2ReadFlush" not in l["kernel"]])
    answered = runs(name)
    if len(gs) != len(answered):
        print(f"note: {name}: {len(gs)} kernel groups for {len(answered)} runs that answered "
              f"({answered}); paired in order\n")
    out = {}
    for (kernel, ls), k in zip(gs, answered):
        r = run_json(f"{name}_{k}")
        n = int(r["request"]["elements"]) if r else None
        dtype = r["request"]["dtype"] if r else None
        used = ls[first:] or ls[-1:]
        s = summary(used, 3 * n * ELEMENT_BYTES[dtype] if n else None)
        s["elements"], s["dtype"], s["all"] = n, dtype, len(ls)
        out[k] = s
    return out, flushes


def step1bc():
    print("## 1b/1c. 16Mi hot counters: the probe's steady launch vs the server's hot profile launches\n")
    probe, probe_passes = probe_counters()
    server = {}
    flushes = {}
    for pad in ("pad0", "pad34M"):
        server[pad], flushes[pad] = server_counters(f"ncu_srv16_{pad}", 2)
    if not probe and not any(server.values()):
        print("No ncu results.\n")
        return
    print("ncu --cache-control none --clock-control none. Probe: the 3rd of 3 back-to-back launches "
          "per variant. Server: `gpubench run K --size=16Mi --mode=hot --profile_runs=5 "
          "--verify=false`, the median of launches 3-5. TB/s from gpu__time_duration.\n")
    print("| source | kernel | placement " + COUNTER_HEAD)
    print("|---|---|---" + COUNTER_RULE)
    for (alloc, variant), s in sorted(probe.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(f"| l2_probe | {variant} | {ALLOC_NAMES[alloc]} | {counter_cells(s, probe_passes.get(alloc))}")
    for pad in ("pad0", "pad34M"):
        for k, s in server[pad].items():
            print(f"| server | {k} | {PAD_NAMES[pad]} | {counter_cells(s, passes(f'ncu_srv16_{pad}'))}")
    print()
    for pad in ("pad0", "pad34M"):
        if server[pad]:
            print(f"- Server, {PAD_NAMES[pad]}: {flushes[pad]} L2 flush launch(es) among the hot profile "
                  f"launches ({'profile mode flushed between hot launches' if flushes[pad] else 'hot profile mode does not flush'}).")
    for dtype in ("f16", "bf16"):
        variant = f"{dtype}_keep25_768x1"
        k = f"add_{dtype}_l2keep"
        for sentence in (
                compare_counters(f"probe {ALLOC_NAMES['exact']}", probe.get(("exact", variant)),
                                 f"probe {ALLOC_NAMES['pad']}", probe.get(("pad", variant))),
                compare_counters(f"server {PAD_NAMES['pad0']}", server["pad0"].get(k),
                                 f"server {PAD_NAMES['pad34M']}", server["pad34M"].get(k)),
                compare_counters(f"probe {ALLOC_NAMES['exact']}", probe.get(("exact", variant)),
                                 f"server {PAD_NAMES['pad0']}", server["pad0"].get(k)),
                compare_counters(f"probe {ALLOC_NAMES['pad']}", probe.get(("pad", variant)),
                                 f"server {PAD_NAMES['pad34M']}", server["pad34M"].get(k))):
            if sentence:
                print(f"- {dtype}: {sentence}")
    multi = [n for n, p in list(probe_passes.items()) if p and p > 1]
    if multi:
        print(f"- ncu replayed the probe's kernels ({multi}): with more than one pass the replays "
              "restore memory between passes, which changes the L2 state the counters see.")
    print()


def step2():
    print("## 2. 256Mi cold vs hot: DRAM bytes per launch (ncu, server profile mode)\n")
    cold, _ = server_counters("ncu_256_cold", 0)
    hot, _ = server_counters("ncu_256_hot", 1)
    if not cold and not hot:
        print("No ncu results.\n")
        return
    print("Cold: `--mode=cold --profile_runs=3 --verify=false` under --cache-control all (every "
          "launch). Hot: `--mode=hot` under --cache-control none (launches 2-3: each after the "
          "previous launch, whose dirty output lines are still in L2). Expected: read 2 x N x "
          "element bytes, write N x element bytes.\n")
    print("| kernel | state | expected read MB | expected write MB " + COUNTER_HEAD + " write - expected MB |")
    print("|---|---|---|---" + COUNTER_RULE + "---|")
    for k in sorted(set(cold) | set(hot)):
        for state, table, name in (("cold", cold, "ncu_256_cold"), ("hot", hot, "ncu_256_hot")):
            s = table.get(k)
            if not s:
                continue
            out_mb = s["elements"] * ELEMENT_BYTES[s["dtype"]] / 1e6 if s["elements"] else None
            extra = s["write_mb"] - out_mb if out_mb and s["write_mb"] is not None else None
            print(f"| {k} | {state} | {fmt(2 * out_mb if out_mb else None, '.1f')} | {fmt(out_mb, '.1f')} | "
                  f"{counter_cells(s, passes(name))} {fmt(extra, '+.1f')} |")
    print()
    for k in sorted(set(cold) & set(hot)):
        c, h = cold[k], hot[k]
        if not c["elements"] or any(x[m] is None for x in (c, h) for m in ("duration_us", "read_mb", "write_mb")):
            continue
        out_mb = c["elements"] * ELEMENT_BYTES[c["dtype"]] / 1e6
        dw, dr = h["write_mb"] - c["write_mb"], h["read_mb"] - c["read_mb"]
        dt = h["duration_us"] - c["duration_us"]
        rate = (c["read_mb"] + c["write_mb"]) / c["duration_us"]  # MB per us at the cold launch
        cost = (dw + dr) / rate
        left_dirty = out_mb - c["write_mb"]
        share = f"{100 * cost / dt:.0f}% of the time difference" if dt > 0 else "the hot launch is not slower"
        supported = dw > 0.002 * out_mb and dt > 0
        print(f"- {k}: a cold launch writes {c['write_mb']:.1f} of its {out_mb:.1f} MB output to DRAM "
              f"({left_dirty:.1f} MB left in L2 at its end); a hot launch writes {dw:+.1f} MB and reads "
              f"{dr:+.1f} MB more than a cold one and takes {dt:+.2f} us ({pct(rel(h['duration_us'], c['duration_us']))}); "
              f"at the cold launch's DRAM rate ({rate:.3f} TB/s) the extra bytes cost {cost:+.2f} us, {share}. "
              f"Hypothesis (hot pays for the previous launch's dirty lines): "
              f"{'supported' if supported else 'not supported'}.")
    print()


def power_samples():
    """[(epoch seconds, watts, sm MHz)] from power.csv (nvidia-smi local time, clock_ref.txt)."""
    try:
        ref = open(path("clock_ref.txt")).read().split()
        epoch_ref = float(ref[0])
        local_ref = datetime.datetime.strptime(f"{ref[1]} {ref[2][:15]}", "%Y/%m/%d %H:%M:%S.%f")
    except (OSError, IndexError, ValueError):
        return []
    offset = epoch_ref - local_ref.replace(tzinfo=datetime.timezone.utc).timestamp()
    out = []
    for line in open(path("power.csv"), errors="replace") if os.path.exists(path("power.csv")) else []:
        parts = [p.strip() for p in line.split(",")]
        try:
            t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f")
            out.append((t.replace(tzinfo=datetime.timezone.utc).timestamp() + offset,
                        float(parts[1]), float(parts[2])))
        except (IndexError, ValueError):
            continue
    return out


def marks():
    out = {}
    try:
        for line in open(path("marks.txt")):
            name, t0, t1 = line.split()
            out[name] = (float(t0), float(t1))
    except (OSError, ValueError):
        pass
    return out


def busy_power(samples, windows):
    """p90 watts and the median SM MHz of the samples with >= 80% of the windows' max watts."""
    inside = [s for s in samples if any(t0 <= s[0] <= t1 for t0, t1 in windows)]
    if not inside:
        return None, None
    watts = sorted(s[1] for s in inside)
    busy = [s[2] for s in inside if s[1] >= 0.8 * watts[-1]]
    return watts[min(len(watts) - 1, int(0.9 * len(watts)))], med(busy)


def step3():
    results = {}
    for f in glob.glob(path("duty_*.json")):
        m = re.match(r"duty_(\w+?)_(unpaced|paced|cold)(?:_r(\d+))?\.json$", os.path.basename(f))
        if m:
            results.setdefault((m.group(1), m.group(2)), []).append(run_json(os.path.basename(f)[:-5]))
    n = next((int(r["request"]["elements"]) for rs in results.values() for r in rs if r), 0)
    print(f"## 3. {size_name(n) if n else 'BIG'} hot, paced (--max_duty) vs not, and cold (server at its defaults)\n")
    if not results:
        print("No results.\n")
        return
    samples, windows = power_samples(), marks()
    print("Medians over the rounds (hot runs alternate unpaced/paced A B B A ...). Duty = "
          "MeasurementSummary.duty_cycle; SM clock = the blocking kernel's reading over the samples "
          "(min-max); power = nvidia-smi inside the runs' windows (p90 W; SM MHz median of the "
          "samples within 80% of the max power).\n")
    print("| kernel | config | runs | TB/s (median) | min-max | % of peak | duty | SM clock MHz | power W | SM MHz (power log) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    best = {}
    for k in sorted({k for k, _ in results}):
        for config in ("unpaced", "paced", "cold"):
            rs = [r for r in results.get((k, config), []) if r]
            if not rs:
                continue
            t = [tbps(r) for r in rs]
            peak = peak_tbps(rs[0])
            duty = med(float(r["measurement"].get("dutyCycle", 0) or 0) for r in rs)
            lo = med(float(r["measurement"].get("minSmClockHz", 0) or 0) / 1e6 for r in rs)
            hi = med(float(r["measurement"].get("maxSmClockHz", 0) or 0) / 1e6 for r in rs)
            names = [n for n in windows if re.match(rf"duty_{k}_{config}(_r\d+)?$", n)]
            watts, mhz = busy_power(samples, [windows[n] for n in names])
            best[(k, config)] = (med(t), min(t), max(t))
            print(f"| {k} | {config} | {len(rs)} | {fmt(med(t), '.3f')} | {min(t):.3f}-{max(t):.3f} | "
                  f"{fmt(100 * med(t) / peak if peak else None, '.2f')} | {fmt(duty, '.2f')} | "
                  f"{fmt(lo, '.0f')}-{fmt(hi, '.0f')} | {fmt(watts, '.0f')} | {fmt(mhz, '.0f')} |")
    print()
    for k in sorted({k for k, _ in best}):
        u, p, c = best.get((k, "unpaced")), best.get((k, "paced")), best.get((k, "cold"))
        if not u or not p:
            continue
        d = rel(p[0], u[0])
        apart = p[1] > u[2] or u[1] > p[2]
        text = (f"- {k}: paced hot {pct(d)} against unpaced "
                f"({'ranges apart' if apart else 'ranges overlap: within run-to-run spread'})")
        if c:
            gap = c[0] - u[0]
            if gap <= 0:
                text += f"; cold ({c[0]:.3f} TB/s) is not above unpaced hot here, no hot-cold gap to explain"
            else:
                closed = (p[0] - u[0]) / gap
                text += (f"; cold {c[0]:.3f} TB/s is {pct(rel(c[0], u[0]))} above unpaced hot, pacing closes "
                         f"{100 * closed:.0f}% of that gap: "
                         + ("the duty cycle (power/clock) explains the hot-cold gap" if closed >= 0.75 else
                            "the duty cycle explains part of it" if closed >= 0.25 else
                            "the duty cycle does not explain it"))
        print(text + ".")
    print()


def torch_rows():
    """{(round, elements, mode): seconds} of torch_rI.csv."""
    out = {}
    for f in glob.glob(path("torch_r*.csv")):
        i = int(re.search(r"_r(\d+)\.csv$", f).group(1))
        for line in open(f):
            parts = line.strip().split(",")
            if len(parts) == 6 and parts[0] == "torch_add_f32":
                out[(i, int(parts[1]), parts[2])] = float(parts[4])
    return out


def step4():
    print("## 4. f32: gpubench vs torch.add (cold, small size) and vs CUB (hot, large size), by round\n")
    rounds = sorted({int(m.group(1)) for f in glob.glob(path("alt_*_r*.json"))
                     for m in [re.search(r"_r(\d+)\.json$", f)] if m})
    if not rounds:
        print("No results.\n")
        return
    torch = torch_rows()
    rs = {(k, i): run_json(f"alt_{k}_r{i}") for k in ("add_f32x4", "add_f32_tuned", "add_f32_bulk",
                                                       "cub_add_f32") for i in rounds}
    any_r = next((r for r in rs.values() if r), None)
    small = int(next((r["request"]["elements"] for (k, _), r in rs.items() if r and k in ("add_f32x4", "add_f32_tuned")), 0))
    big = int(next((r["request"]["elements"] for (k, _), r in rs.items() if r and k in ("add_f32_bulk", "cub_add_f32")), 0))
    print(f"TB/s per round; ratios are this / the reference in throughput (>= 1: as fast or faster). "
          f"Cold at {size_name(small)}, hot at {size_name(big)}. Odd rounds ran the server first, even rounds torch first.\n")
    print("| round | add_f32x4 cold | add_f32_tuned cold | torch cold | x4 / torch | tuned / torch | "
          "add_f32_bulk hot | cub_add_f32 hot | torch hot | bulk / CUB | bulk / torch |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = {"add_f32x4 / torch (cold)": [], "add_f32_tuned / torch (cold)": [],
              "add_f32_bulk / cub_add_f32 (hot)": [], "add_f32_bulk / torch (hot)": []}
    for i in rounds:
        x4, tuned = tbps(rs[("add_f32x4", i)]), tbps(rs[("add_f32_tuned", i)])
        bulk, cub = tbps(rs[("add_f32_bulk", i)]), tbps(rs[("cub_add_f32", i)])
        tc = torch.get((i, small, "cold"))
        th = torch.get((i, big, "hot"))
        tc = 3 * small * 4 / tc / 1e12 if tc else None
        th = 3 * big * 4 / th / 1e12 if th else None
        row = [x4 / tc if x4 and tc else None, tuned / tc if tuned and tc else None,
               bulk / cub if bulk and cub else None, bulk / th if bulk and th else None]
        for key, v in zip(ratios, row):
            if v is not None:
                ratios[key].append(v)
        print(f"| {i} | {fmt(x4, '.3f')} | {fmt(tuned, '.3f')} | {fmt(tc, '.3f')} | {fmt(row[0], '.4f')} | "
              f"{fmt(row[1], '.4f')} | {fmt(bulk, '.3f')} | {fmt(cub, '.3f')} | {fmt(th, '.3f')} | "
              f"{fmt(row[2], '.4f')} | {fmt(row[3], '.4f')} |")
    print()
    for key, v in ratios.items():
        if not v:
            continue
        if min(v) >= 1:
            verdict = "at or above 1 in every round: no miss in this call"
        elif max(v) < 1:
            verdict = "below 1 in every round: a consistent miss, not noise"
        else:
            verdict = "on both sides of 1 across rounds: within round-to-round noise"
        print(f"- {key}: {len(v)} rounds, median {med(v):.4f}, range {min(v):.4f}-{max(v):.4f} "
              f"(spread {100 * (max(v) - min(v)):.2f} points): {verdict}.")
    if not torch:
        print("- no torch.add results in this call")
    print()


def step4b():
    """Issue #15: v1's cold medians against this server's with v1's (memset) flush."""
    names = sorted({f[len("v1_"):-len(".json")] for f in os.listdir(D)
                    if f.startswith("v1_") and f.endswith(".json")})
    if not names:
        print("## 4b. v1 vs this server with v1's flush\n\nNo results (step skipped).\n")
        return
    print("## 4b. Cold medians, v1 vs this server with v1's flush (GPUBENCH_L2_FLUSH=memset)\n")
    print("Both at the server's defaults; v1 = commit d8f0c84 (issue #15's 'today').\n")
    print("| item | v1 median us (samples) | this server, memset flush, us (samples) | difference |")
    print("|---|---|---|---|")
    diffs = []
    for item in names:
        a, b = run_json("v1_" + item), run_json("v2memset_" + item)
        if a is None or b is None:
            print(f"| {item} | {'-' if a is None else 'ok'} | {'-' if b is None else 'ok'} | - |")
            continue
        ma, mb = float(a["timing"]["medianSeconds"]), float(b["timing"]["medianSeconds"])
        sa = a["timing"].get("samples", "?")
        sb = b["timing"].get("samples", "?")
        diffs.append((abs(mb / ma - 1), item))
        print(f"| {item} | {ma * 1e6:.2f} ({sa}) | {mb * 1e6:.2f} ({sb}) | {pct(rel(mb, ma))} |")
    if diffs:
        within = sum(1 for d, _ in diffs if d <= 0.005)
        print(f"\n{within} of {len(diffs)} items within 0.5%; largest {100 * max(diffs)[0]:.2f}% "
              f"({max(diffs)[1]}).\n")


def step4c():
    """16Mi hot through the server: default placement vs the 34 MiB pad (events)."""
    import re
    pat = re.compile(r"^padtime_(.+)_(pad0|pad34M)_r(\d+)\.json$")
    got = {}
    for f in sorted(os.listdir(D)):
        m = pat.match(f)
        if m:
            got.setdefault((m.group(1), m.group(2)), []).append(tbps(run_json(f[:-5])))
    if not got:
        return
    print("## 4c. 16Mi hot through the server: default placement vs a 34 MiB pad (events)\n")
    print("| kernel | placement | runs | TB/s median | min-max | >= 4.15 |")
    print("|---|---|---|---|---|---|")
    for (k, c), v in sorted(got.items()):
        v = [x for x in v if x is not None]
        if not v:
            continue
        print(f"| {k} | {'default' if c == 'pad0' else '34 MiB pad'} | {len(v)} | {med(v):.3f} | "
              f"{min(v):.3f}-{max(v):.3f} | {'yes' if med(v) >= 4.15 else 'no'} |")
    print()


def main():
    for name, title in (("machine.txt", "Machine"), ("steps.txt", "Steps (rc, wall seconds)")):
        if os.path.exists(path(name)):
            print(f"## {title}\n\n```\n{open(path(name)).read().strip()}\n```\n")
    step1a()
    step1bc()
    step2()
    step3()
    step4()
    step4b()
    step4c()


if __name__ == "__main__":
    main()

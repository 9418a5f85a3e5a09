"""Summarises bench/datasets.sh's raw results as bench/reports/datasets.{md,json}.

Fetch: MB/s (10^6 bytes per second of wall time, process start to exit) of each
`grid-trainer data fetch` over the publisher's plain bulk lane ("lane", the default) and from
a publisher serving only over the encrypted libp2p stream ("stream"), and of each curl from
`python3 -m http.server`, all on loopback, their mean and spread, the ratios of the means to
curl's; for the grid fetches also where their time went (from the log's timestamps) and the
CPU both ends used. Memory: `bench_data
train`'s resident memory on each file, against the file's size.

usage: datasets_report.py RAW_DIR OUT_DIR
"""

import json
import statistics
import sys
from datetime import datetime
from pathlib import Path

TARGET_RATIO = 0.8
GRID = ("lane", "stream")
METHODS = GRID + ("curl",)
NAMES = {
    "lane": "grid, bulk lane",
    "stream": "grid, encrypted stream",
    "curl": "curl",
}


def read_meta(raw):
    meta = {}
    for line in (raw / "meta.env").read_text().splitlines():
        key, _, value = line.partition("=")
        meta[key] = value
    return meta


def log_time(line):
    """Seconds since the epoch of a tracing line's RFC 3339 timestamp."""
    stamp = line.split()[0].rstrip("Z")
    return datetime.fromisoformat(stamp + "+00:00").timestamp()


def grid_phases(log, start, end):
    """Setup (process start, key, connection, manifest, checking the empty part file),
    chunk transfer, and finish (rename, exit) seconds of one fetch, from its log."""
    fetching = fetched = None
    for line in log.read_text().splitlines():
        if "fetching dataset" in line:
            fetching = log_time(line)
        elif "fetched and checked" in line:
            fetched = log_time(line)
    if fetching is None or fetched is None:
        return None
    return {"setup_s": fetching - start, "transfer_s": fetched - fetching, "finish_s": end - fetched}


def read_profile(raw, kind, end):
    """The top symbols of perf's report for one end of the profiled fetch of `kind`:
    (share %, symbol)."""
    path = raw / f"profile-{kind}-{end}.txt"
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        words = line.split()
        if len(words) < 3 or not words[0].endswith("%"):
            continue
        symbol = " ".join(w for w in words[2:] if w != "-")
        rows.append((float(words[0].rstrip("%")), f"{words[1]} {symbol}"))
    return rows


def stats(values):
    return {
        "mean": statistics.mean(values),
        "stdev": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
        "runs": values,
    }


def fetch_results(raw, meta):
    size = int(meta["fetch_mib"]) << 20
    lines = (raw / "fetch.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    runs = [dict(zip(header, line.split("\t"))) for line in lines[1:]]
    out = {"bytes": size, "repeats": int(meta["repeats"]), "runs": []}
    for run in runs:
        start, end = float(run["start"]), float(run["end"])
        row = {
            "method": run["method"],
            "label": run["label"],
            "seconds": end - start,
            "mb_s": size / (end - start) / 1e6,
            "client_cpu_s": float(run["client_user_s"]) + float(run["client_sys_s"]),
            "server_cpu_s": float(run["server_cpu_s"]),
        }
        if run["method"] in GRID:
            log = raw / f"fetch-{run['method']}-{run['label']}.log"
            phases = grid_phases(log, start, end)
            if phases:
                row.update(phases)
                row["transfer_mb_s"] = size / phases["transfer_s"] / 1e6
        out["runs"].append(row)
    measured = [r for r in out["runs"] if r["label"] != "warmup"]
    for method in METHODS:
        mine = [r for r in measured if r["method"] == method]
        out[method] = {
            "mb_s": stats([r["mb_s"] for r in mine]),
            "client_cpu_s": statistics.mean(r["client_cpu_s"] for r in mine),
            "server_cpu_s": statistics.mean(r["server_cpu_s"] for r in mine),
        }
        if method in GRID:
            for key in ("setup_s", "transfer_s", "finish_s"):
                out[method][key] = statistics.mean(r.get(key, float("nan")) for r in mine)
            out[method]["transfer_mb_s"] = stats([r["transfer_mb_s"] for r in mine if "transfer_mb_s" in r])
    by_label = {}
    for r in measured:
        by_label.setdefault(r["label"], {})[r["method"]] = r["mb_s"]
    curl = out["curl"]["mb_s"]["mean"]
    for method in GRID:
        out[method]["ratio"] = out[method]["mb_s"]["mean"] / curl
        out[method]["transfer_ratio"] = out[method]["transfer_mb_s"]["mean"] / curl
        out[method]["repetition_ratios"] = [
            v[method] / v["curl"] for v in by_label.values() if method in v and "curl" in v
        ]
    # The headline is what the daemon does by default: the lane.
    out["ratio"] = out["lane"]["ratio"]
    out["target_ratio"] = TARGET_RATIO
    out["met"] = out["ratio"] >= TARGET_RATIO
    return out


def memory_results(raw, meta):
    out = []
    for size in ("small", "big"):
        path = raw / f"memory-{size}.json"
        if not path.exists():
            continue
        run = json.loads(path.read_text())
        time_v = (raw / f"memory-{size}.time").read_text()
        max_rss = next(
            int(line.split(":")[1]) for line in time_v.splitlines() if "Maximum resident" in line
        )
        kib = 1024
        file_bytes = run["file_bytes"]
        opts = run["options"]
        # Windows read in training and evaluation, each context + 1 tokens of 2 bytes (within
        # two 4 KiB pages).
        windows, context = run["samples"] + opts["eval"], opts["context"]
        out.append(
            {
                "size": size,
                "file_bytes": file_bytes,
                "tokens": run["tokens"],
                "train_windows": run["train_windows"],
                "lowest_window": run["lowest_window"],
                "highest_window": run["highest_window"],
                "parameters": run["parameters"],
                "steps": run["steps"],
                "ms_per_step": run["ms_per_step"],
                "mean_train_loss": run["mean_train_loss"],
                "eval_loss": run["eval_loss"],
                "generate_s": float(meta.get(f"gen_{size}_s", "nan")),
                "publish_s": run["phases"]["publish"]["seconds"],
                "load_s": run["phases"]["load"]["seconds"],
                "train_s": run["phases"]["train"]["seconds"],
                "peak_rss_bytes": run["vm_hwm_kib"] * kib,
                "time_max_rss_bytes": max_rss * kib,
                "peak_anon_bytes": run["peak_anon_kib"] * kib,
                "peak_file_bytes": run["peak_file_kib"] * kib,
                "anon_after_load_bytes": run["phases"]["load"]["anon_kib"] * kib,
                "dataset_mapped_after_load_bytes": run["dataset_mapped_after_load_kib"] * kib,
                "dataset_pmd_mapped_after_load_bytes": run["dataset_pmd_mapped_after_load_kib"] * kib,
                "dataset_touched_in_training_bytes": run["dataset_touched_in_training_kib"] * kib,
                "windows_read": windows,
                "window_bytes": windows * (context + 1) * 2,
                "window_pages_bytes": windows * 2 * 4096,
                "peak_rss_to_file": run["vm_hwm_kib"] * kib / file_bytes,
                "peak_anon_to_file": run["peak_anon_kib"] * kib / file_bytes,
                "options": run["options"],
            }
        )
    return out


def mib(b):
    return f"{b / 2**20:,.0f}"


def write_md(meta, fetch, memory, path, raw_dir):
    c = fetch["curl"]
    lines = [
        "# Datasets: fetch throughput and training memory",
        "",
        f"`{meta['command'].strip()}` on {meta['date']}, commit `{meta['commit']}`. Machine: "
        f"{meta['nproc']} cores ({meta['cpu']}), {int(meta['mem_kib']) / 2**20:.1f} GiB of memory, "
        f"Linux {meta['kernel']}, {meta['curl']}, {meta['python']}; load average "
        f"{meta['load_before']} before, {meta['load_after']} after.",
        "",
        "## Fetch: grid-trainer against curl over loopback",
        "",
        f"The same {mib(fetch['bytes'])} MiB file of random `u16` tokens, published twice with "
        "`grid-trainer data publish --format tokens-u16 --listen /ip4/127.0.0.1/tcp/0` (once as "
        "is, once with `--encrypted-only`) and fetched with `grid-trainer data fetch --reference … "
        "--uri /ip4/127.0.0.1/tcp/N/p2p/…` into a fresh store each time, every 1 MiB chunk "
        "checked against the manifest, 8 chunks asked at a time: **lane** is the default, the "
        "chunks over the publisher's plain bulk lane (`trainer/src/daemon/bulk.rs`; the ticket "
        "and manifest over libp2p); **stream** is the publisher that gives no tickets, so the "
        "chunks come over the libp2p stream (noise, yamux). Against `curl -o` of the file from "
        f"`python3 -m http.server` on 127.0.0.1. One warm-up of each, then {fetch['repeats']} "
        "repetitions of the three, each repetition starting one method later; each output is "
        "compared with the source and deleted. MB/s is 10^6 bytes per second of wall time from "
        "process start to exit.",
        "",
        "| repetition | lane MB/s | stream MB/s | curl MB/s | lane / curl | stream / curl |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    measured = [r for r in fetch["runs"] if r["label"] != "warmup"]
    labels = sorted({r["label"] for r in measured}, key=int)
    for label in labels:
        row = {r["method"]: r["mb_s"] for r in measured if r["label"] == label}
        lines.append(
            f"| {label} | {row['lane']:.1f} | {row['stream']:.1f} | {row['curl']:.1f} | "
            f"{row['lane'] / row['curl']:.3f} | {row['stream'] / row['curl']:.3f} |"
        )
    spread = lambda m: f"**{fetch[m]['mb_s']['mean']:.1f} ± {fetch[m]['mb_s']['stdev']:.1f}**"
    lines += [
        f"| **mean ± stdev** | {spread('lane')} | {spread('stream')} | {spread('curl')} | "
        f"**{fetch['lane']['ratio']:.3f}** | **{fetch['stream']['ratio']:.3f}** |",
        "",
        f"**Target ≥ {TARGET_RATIO}x of curl: {'met' if fetch['met'] else 'missed'} "
        f"({fetch['ratio']:.2f}x over the bulk lane, the default; "
        f"{fetch['stream']['ratio']:.2f}x over the encrypted stream).** Ranges: "
        + ", ".join(
            f"{m} {fetch[m]['mb_s']['min']:.1f}–{fetch[m]['mb_s']['max']:.1f}" for m in METHODS
        )
        + " MB/s.",
        "",
        "Where each fetch's time goes (means over the repetitions; phases from the fetcher's "
        "log timestamps, CPU from `/usr/bin/time` for the client and `/proc/PID/stat` for the "
        "server):",
        "",
        "| | lane | stream | curl |",
        "|---|---:|---:|---:|",
        "| wall time, s | "
        + " | ".join(f"{fetch['bytes'] / fetch[m]['mb_s']['mean'] / 1e6:.3f}" for m in METHODS)
        + " |",
        "| of which setup: start, key, connection, manifest, tickets, checking the new part "
        "file, s | " + " | ".join(f"{fetch[m]['setup_s']:.3f}" for m in GRID) + " | |",
        "| of which chunk transfer, s | "
        + " | ".join(f"{fetch[m]['transfer_s']:.3f}" for m in GRID)
        + " | |",
        "| of which finish: rename, exit, s | "
        + " | ".join(f"{fetch[m]['finish_s']:.3f}" for m in GRID)
        + " | |",
        "| chunk transfer alone, MB/s | "
        + " | ".join(
            f"{fetch[m]['transfer_mb_s']['mean']:.1f} ({fetch[m]['transfer_ratio']:.2f}x curl)"
            for m in GRID
        )
        + " | |",
        "| client CPU, s | " + " | ".join(f"{fetch[m]['client_cpu_s']:.2f}" for m in METHODS) + " |",
        "| server CPU, s | " + " | ".join(f"{fetch[m]['server_cpu_s']:.2f}" for m in METHODS) + " |",
        "",
    ]
    for kind in GRID:
        client, server = read_profile(raw_dir, kind, "client"), read_profile(raw_dir, kind, "server")
        if not (client or server):
            continue
        lines += [
            f"Top CPU symbols of one more {kind} fetch (not timed), both ends sampled by "
            "`perf record` (`[k]`: kernel):",
            "",
            "| fetcher (client) | share | publisher (server) | share |",
            "|---|---:|---|---:|",
        ]
        for i in range(max(len(client), len(server))):
            a = client[i] if i < len(client) else (None, "")
            b = server[i] if i < len(server) else (None, "")
            share = lambda row: f"{row[0]:.1f}%" if row[0] is not None else ""
            lines.append(f"| `{a[1]}` | {share(a)} | `{b[1]}` | {share(b)} |")
        lines.append("")
    lines += [
        "## Memory: training on a several-GB dataset",
        "",
        "`bench_data train` publishes the directory into a store (as `grid-trainer data publish "
        "--no-serve`), loads it as the trainer daemon does (`data::load`: every chunk read and "
        "checked against the manifest, then `TokenDataset` reads every token once for the largest "
        "and opens the files for positioned reads of each window drawn), and trains a decoder-only transformer "
        f"(GPT-2 style, {memory[0]['parameters']:,} parameters, vocabulary {memory[0]['options']['vocab']}, "
        f"context {memory[0]['options']['context']}, batch {memory[0]['options']['batch']}) for "
        f"{memory[0]['steps']} AdamW steps on batches drawn by the provider's `batch_indices` from "
        "a round seed, uniform over every training window of the file, then evaluates it on "
        "held-out windows. Each file is random `u16` tokens below the vocabulary. Peak RSS is "
        "VmHWM (`/usr/bin/time -v`'s maximum agrees); the anonymous and file-backed parts are "
        "the largest RssAnon and RssFile sampled every 10 ms.",
        "",
        "| file | peak RSS (VmHWM) | /usr/bin/time max RSS | peak RSS / file | peak anonymous | "
        "anonymous / file | peak file-backed | dataset pages mapped after load | "
        "dataset touched in training | publish s | load s | ms/step |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in memory:
        lines.append(
            f"| {mib(m['file_bytes'])} MiB | {mib(m['peak_rss_bytes'])} MiB | "
            f"{mib(m['time_max_rss_bytes'])} MiB | {m['peak_rss_to_file']:.3f} | "
            f"{mib(m['peak_anon_bytes'])} MiB | {m['peak_anon_to_file']:.4f} | "
            f"{mib(m['peak_file_bytes'])} MiB | {mib(m['dataset_mapped_after_load_bytes'])} MiB | "
            f"{mib(m['dataset_touched_in_training_bytes'])} MiB | {m['publish_s']:.1f} | "
            f"{m['load_s']:.1f} | {m['ms_per_step']:.0f} |"
        )
    lines.append("")
    lines.append(
        "Windows drawn: "
        + "; ".join(
            f"{mib(m['file_bytes'])} MiB file: indices {m['lowest_window']:,} to "
            f"{m['highest_window']:,} of {m['train_windows']:,}"
            for m in memory
        )
        + ". Dataset touched in training: pages of the dataset's files mapped into the process "
        "and referenced after the load (`/proc/self/clear_refs`, then `/proc/self/smaps`), "
        "through training and evaluation (0 when nothing of them is mapped)."
    )
    lines.append("")
    lines += notes(fetch, memory, meta)
    path.write_text("\n".join(lines) + "\n")


def notes(fetch, memory, meta):
    """What the figures mean."""
    lane, stream, c = fetch["lane"], fetch["stream"], fetch["curl"]
    wall = lambda m: fetch["bytes"] / fetch[m]["mb_s"]["mean"] / 1e6
    cpu = lambda m: fetch[m]["client_cpu_s"] + fetch[m]["server_cpu_s"]
    small, big = memory[0], memory[-1]
    out = [
        "## What it means",
        "",
        f"- **Fetch: {fetch['ratio']:.2f}x of curl over the bulk lane "
        f"({'met' if fetch['met'] else 'missed'}), {stream['ratio']:.2f}x over the encrypted "
        f"stream.** Over the lane both ends used {cpu('lane'):.2f} CPU-seconds in "
        f"{wall('lane'):.2f} s (fetcher {lane['client_cpu_s']:.2f}, publisher "
        f"{lane['server_cpu_s']:.2f}), against {cpu('curl'):.2f} for curl and http.server and "
        f"{cpu('stream'):.2f} over the stream. The lane carries the same chunks as the stream, "
        "checked the same way (BLAKE3 against the manifest, on the fetcher's blocking "
        "threads; the publisher re-checks what it reads), but as bare frames on a TCP "
        "connection, so there is no ChaCha20-Poly1305 at either end and no noise, yamux or "
        "SCALE copies: on two shared cores the encrypted stream was CPU-bound on exactly those "
        "(its profile above). The lane carries no secrecy: any provider who asks gets the data "
        "anyway, and integrity comes from the reference, but an observer of the network path "
        "can read it; a buyer who minds publishes with `--encrypted-only`. History of the "
        "stream's figure, each measured with this script: 0.24x at `6a11b48` (hashing on the "
        "event loop), 0.31x at `a5cc293` (BLAKE2b chunk hashes), 0.33x with BLAKE3, 0.39x and "
        "0.46x once `data publish`/`data fetch` kept freed buffers, 0.48x at `6e536da`; runs "
        "on these machines differ by that much.",
        f"- **Memory: RSS does not grow with the file.** Peak RSS is "
        f"{mib(small['peak_rss_bytes'])} MiB on the {mib(small['file_bytes'])} MiB file and "
        f"{mib(big['peak_rss_bytes'])} MiB on the {mib(big['file_bytes'])} MiB one "
        f"({big['peak_rss_to_file']:.3f} of the file; anonymous {mib(big['peak_anon_bytes'])} "
        "MiB, the model and its optimizer). The largest token is found with plain reads, and "
        "each window is read with one positioned read when it is drawn: nothing of the file is "
        f"mapped ({mib(big['dataset_mapped_after_load_bytes'])} MiB after the load). Its "
        f"{big['windows_read']:,} windows span {big['window_bytes'] / 2**20:.1f} MiB. At "
        "`6a11b48` the files were memory-mapped and scanned through the map: peak RSS was "
        "4,328 MiB for the 4,096 MiB file (1.06x), clean page cache the kernel left mapped.",
        f"- **Load time grows with the file:** every open reads and hashes the whole dataset "
        f"(`open_verified`) and reads it once more for the largest token: "
        f"{big['load_s']:.1f} s for {mib(big['file_bytes'])} MiB here, after "
        f"{big['publish_s']:.1f} s to publish it (hashing it once).",
        "",
    ]
    return out


def main():
    raw, out = Path(sys.argv[1]), Path(sys.argv[2])
    meta = read_meta(raw)
    fetch = fetch_results(raw, meta)
    memory = memory_results(raw, meta)
    machine = {k: meta[k] for k in ("cpu", "kernel", "load_before", "load_after")}
    machine |= {k: int(meta[k]) for k in ("nproc", "mem_kib")}
    summary = {
        "date": meta["date"],
        "commit": meta["commit"],
        "command": meta["command"].strip(),
        "machine": machine,
        "fetch": {
            "bytes": fetch["bytes"],
            "repeats": fetch["repeats"],
            "ratio": fetch["ratio"],
            "ratio_means": "lane (the default) MB/s mean over curl's",
            "target_ratio": TARGET_RATIO,
            "met": fetch["met"],
            "curl_mb_s": {k: fetch["curl"]["mb_s"][k] for k in ("mean", "stdev", "min", "max", "runs")},
            "curl_client_cpu_s": fetch["curl"]["client_cpu_s"],
            "http_server_cpu_s": fetch["curl"]["server_cpu_s"],
            **{
                method: {
                    "mb_s": {k: fetch[method]["mb_s"][k] for k in ("mean", "stdev", "min", "max", "runs")},
                    "ratio_to_curl": fetch[method]["ratio"],
                    "repetition_ratios": fetch[method]["repetition_ratios"],
                    "transfer_mb_s": fetch[method]["transfer_mb_s"]["mean"],
                    "setup_s": fetch[method]["setup_s"],
                    "transfer_s": fetch[method]["transfer_s"],
                    "finish_s": fetch[method]["finish_s"],
                    "client_cpu_s": fetch[method]["client_cpu_s"],
                    "server_cpu_s": fetch[method]["server_cpu_s"],
                }
                for method in GRID
            },
            "runs": fetch["runs"],
        },
        "memory": memory,
        "memory_growth_small_to_big": {
            key: memory[-1][key] - memory[0][key]
            for key in ("file_bytes", "peak_rss_bytes", "peak_anon_bytes", "peak_file_bytes")
        },
    }
    (out / "datasets.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_md(meta, fetch, memory, out / "datasets.md", raw)


if __name__ == "__main__":
    main()

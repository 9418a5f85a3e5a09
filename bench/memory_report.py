"""Summarises bench/memory.sh's runs as REPORT (markdown) and REPORT's .json.

Per model size and trainer binary (this tree's, and a baseline when one was given): whether
the run passed (job completed, every round settled, every member agreed and was paid), each
provider's peak resident memory (VmHWM, MiB) and that peak in copies of the model (4 bytes
per parameter), and in copies of what the model added over the smallest size, (peak − peak at
the smallest size) / (4 bytes × (parameters − the smallest's)): the fixed part (runtime,
dataset, evaluation batches, libp2p) dominates small models; with a baseline, the ratio of the
current peak to the baseline's. Where the providers' logs held their allocation ledger's last
line (a ledger.tsv beside the run's JSON), what each thread role held in blocks of 1 MiB or
more when that total peaked, and each role's own highest over the run (highs.tsv; a role's
high need not fall at the total's peak).

usage: memory_report.py REPORT COMMIT WHICH=SIZE=JSON=STATUS...
"""

import json
import os
import statistics
import sys
from pathlib import Path


def read_run(spec):
    which, size, path, status = spec.split("=")
    run = {"which": which, "size": size, "exit": int(status), "peaks_mib": [], "passed": False}
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        run["error"] = f"no report ({e})"
        return run
    job = report["jobs"][0]
    run["parameters"] = job["parameters"]
    run["rounds_with_result"] = job["rounds_with_result"]
    run["failures"] = job["failures"]
    run["passed"] = int(status) == 0 and not job["failures"]
    run["peaks_mib"] = [m["peak_rss_mib"] for m in job["members"] if m["peak_rss_mib"]]
    run["ledger"] = read_ledger(Path(path).parent / "ledger.tsv")
    run["role_highs"] = read_highs(Path(path).parent / "highs.tsv")
    run["disk_mb"] = read_disk(Path(path).parent / "disk.tsv")
    return run


def read_disk(path):
    """Per provider: its data directory's bytes on disk when the job ended, in MB."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    return [round(int(line.split("\t")[1]) / 1e6, 1) for line in lines if "\t" in line]


def parse_roles(text):
    """`role MiB, role MiB, …` as {role: MiB}."""
    by_role = {}
    for part in text.split(", "):
        role, _, mib = part.rpartition(" ")
        if role and mib.isdigit():
            by_role[role] = int(mib)
    return by_role


def read_highs(path):
    """Per provider: each role's own highest live large blocks (MiB)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        provider, _, text = line.partition("\t")
        roles = parse_roles(text)
        if roles:
            out.append({"provider": provider, "roles_mib": roles})
    return out


def read_ledger(path):
    """Per provider: its live large blocks at their peak, total and by role (MiB)."""
    out = []
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        provider, _, text = line.partition("\t")
        total, _, roles = text.partition(" MiB in blocks of 1 MiB or more")
        by_role = parse_roles(roles.lstrip(": "))
        if total.strip().isdigit():
            out.append({"provider": provider, "total_mib": int(total), "roles_mib": by_role})
    return out


def summary(run):
    peaks = run["peaks_mib"]
    if not peaks or "parameters" not in run:
        return None
    model_mib = run["parameters"] * 4 / 2**20
    mean = statistics.mean(peaks)
    return {
        "peak_mib_mean": round(mean),
        "peak_mib_max": max(peaks),
        "copies_mean": round(mean / model_mib, 1),
        "copies_max": round(max(peaks) / model_mib, 1),
    }


def role_table(headline, key, caption, total_head):
    """A markdown table of every run's `key` entries (per provider, MiB by role), with a
    column of their totals when `total_head` names it; no lines when there are none."""
    rows = []
    for entry in headline:
        for which in ("baseline", "current"):
            for e in entry.get(which, {}).get(key, []):
                cells = [entry["size"], which, e["provider"]]
                if total_head:
                    cells.append(f"{e['total_mib']:,}")
                cells.append(", ".join(f"{role} {mib:,}" for role, mib in e["roles_mib"].items()))
                rows.append("| " + " | ".join(cells) + " |")
    if not rows:
        return []
    head = ["GPT", "trainer", "provider"] + ([total_head] if total_head else []) + ["by role"]
    return [caption, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head), *rows, ""]


def disk_table(headline):
    """Each provider's data directory when the job ended, with the ratio to the baseline's."""
    rows = []
    for entry in headline:
        by = {w: entry[w]["disk_mb"] for w in ("baseline", "current") if entry.get(w, {}).get("disk_mb")}
        if not by:
            continue
        cells = [" / ".join(f"{mb:,.1f}" for mb in by[w]) if w in by else "–" for w in ("baseline", "current")]
        ratio = "–"
        if len(by) == 2:
            ratio = f"{statistics.mean(by['current']) / statistics.mean(by['baseline']):.2f}"
            entry["disk_ratio_current_to_baseline"] = float(ratio)
        rows.append(f"| {entry['size']} | {cells[0]} | {cells[1]} | {ratio} |")
    if not rows:
        return []
    return [
        "Disk per provider when the job ended (its data directory: checkpoint, kept states, "
        "evidence, and whatever the challenge window still holds; hard links counted once; MB):",
        "",
        "| GPT | baseline | current | current / baseline |",
        "|---|---|---|---|",
        *rows,
        "",
    ]


def main():
    report, commit, specs = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    runs = [read_run(s) for s in specs]
    sizes = list(dict.fromkeys(r["size"] for r in runs))
    has_baseline = any(r["which"] == "baseline" for r in runs)
    rows, headline = [], []
    smallest = {}
    for size in sizes:
        by = {r["which"]: r for r in runs if r["size"] == size}
        entry = {"size": size}
        for which, run in by.items():
            entry["parameters"] = run.get("parameters", entry.get("parameters"))
            entry[which] = {
                "passed": run["passed"],
                "peaks_mib": run["peaks_mib"],
                **(summary(run) or {}),
                **({"failures": run["failures"]} if run.get("failures") else {}),
                **({"error": run["error"]} if "error" in run else {}),
                **({"ledger": run["ledger"]} if run.get("ledger") else {}),
                **({"role_highs": run["role_highs"]} if run.get("role_highs") else {}),
                **({"disk_mb": run["disk_mb"]} if run.get("disk_mb") else {}),
            }
        for which, run in by.items():
            s = entry[which]
            if "peak_mib_mean" not in s:
                continue
            first = smallest.setdefault(which, (entry["parameters"], s["peak_mib_mean"]))
            added = (entry["parameters"] - first[0]) * 4 / 2**20
            if added > 0:
                s["marginal_copies"] = round((s["peak_mib_mean"] - first[1]) / added, 1)
        cur, base = entry.get("current", {}), entry.get("baseline", {})
        if cur.get("peak_mib_mean") and base.get("peak_mib_mean"):
            entry["ratio_current_to_baseline"] = round(cur["peak_mib_mean"] / base["peak_mib_mean"], 3)
        headline.append(entry)

        def cells(s):
            if not s:
                return ["–", "–", "–", "–"]
            peaks = " / ".join(str(p) for p in s["peaks_mib"]) or "–"
            copies = f"{s['copies_mean']}" if "copies_mean" in s else "–"
            marginal = f"{s['marginal_copies']}" if "marginal_copies" in s else "–"
            return [peaks, copies, marginal, "yes" if s["passed"] else "**no**"]

        params = entry.get("parameters")
        row = [size, f"{params / 1e6:.1f}M" if params else "?", f"{params * 4 / 2**20:.0f}" if params else "?"]
        if has_baseline:
            row += cells(entry.get("baseline"))
        row += cells(entry.get("current"))
        if has_baseline:
            ratio = entry.get("ratio_current_to_baseline")
            row.append(f"{ratio:.2f}" if ratio else "–")
        rows.append("| " + " | ".join(row) + " |")

    head = ["GPT (context,layers,heads,width)", "parameters", "model MiB (f32)"]
    if has_baseline:
        head += ["baseline peak RSS MiB (per provider)", "baseline copies", "baseline copies over the smallest", "baseline passed"]
    head += ["peak RSS MiB (per provider)", "copies of the model", "copies over the smallest", "passed"]
    if has_baseline:
        head.append("current / baseline")
    lines = [
        "# Memory per trainer against model size",
        "",
        f"`bench/memory.sh` at `{commit}`: per size, a `grid-node --dev` and two provider daemons "
        "train a byte-level GPT chain job on the CPU (one thread each, batch 8, "
        f"{os.environ.get('ROUNDS', '2')} rounds of at "
        "most 2 steps: the compute is cut short, everything else in a round runs as in any job). "
        "Peak RSS is each provider's VmHWM read before it stops; copies = peak / (4 bytes × "
        "parameters)."
        + (" The baseline is another `grid-trainer` binary run right before this tree's at each size." if has_baseline else "")
        + (f" This tree's providers' files add `{os.environ['CURRENT_LINE']}` (`CURRENT_LINE`); the baseline's do not."
           if os.environ.get("CURRENT_LINE") else ""),
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *rows,
        "",
    ]
    lines += role_table(
        headline,
        "ledger",
        "Live memory by thread role when it peaked (each provider's allocation ledger, "
        "`trainer/src/alloc_ledger.rs`: blocks of 1 MiB or more, charged to the thread "
        "that allocated them, MiB):",
        "live at the peak",
    )
    lines += role_table(
        headline,
        "role_highs",
        "Each role's own highest live memory over the run (the same ledger, MiB; the roles' "
        "highs fall at different moments, so they do not add up to a peak):",
        None,
    )
    lines += disk_table(headline)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text("\n".join(lines))
    report.with_suffix(".json").write_text(json.dumps({"commit": commit, "sizes": headline}, indent=2) + "\n")
    print(f"wrote {report}")


if __name__ == "__main__":
    main()

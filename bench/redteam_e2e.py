"""The red-team suite's end-to-end outcomes (tests/tests/attackers.rs, one JSON file per
attacker in DIR) as a markdown section on stdout, and into REPORT_JSON's "end_to_end"."""
import json
import pathlib
import sys

ORDER = ["exact copy", "scaled copy", "noised copy", "previous aggregate", "wrong data",
         "inflated claim", "forged residual", "Sybil voter", "griefing challenger"]

directory, report_path = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
found = {}
for path in sorted(directory.glob("*.json")):
    outcome = json.loads(path.read_text())
    found[outcome["attacker"]] = outcome

print("### End to end: real trainer processes on a dev chain")
print()
if not found:
    print("Not run (`E2E=0`).")
    sys.exit(0)
print("Each attacker as a `grid-trainer provide` process (its `[misbehave]` table) next to Bob,")
print("Charlie and Dave on a `grid-node --dev`, the MNIST job with a 20-block challenge window,")
print("run until the chain caught it (`tests/tests/attackers.rs`; the lazy and equivocating")
print("providers' runs are in `tests/tests/network_job.rs`, in CI). In every run shown caught,")
print("the honest providers were paid for every settled round and none was slashed or")
print("convicted (the test fails otherwise; its log is `redteam-e2e.log`).")
print()
print("| attacker | caught | how | offence round convicted | rounds settled meanwhile | seconds |")
print("|---|---|---|---|---|---|")
rows = []
for name in ORDER:
    o = found.get(name)
    if o is None:
        print(f"| {name} | did not run (see `redteam-e2e.log`) | | | | |")
        rows.append({"attacker": name, "ran": False})
        continue
    round_ = "" if o["offence_round"] is None else o["offence_round"]
    print(f"| {name} | {'yes' if o['caught'] else '**no**'} | {o['caught_means']} | {round_} | {o['rounds_settled']} | {o['seconds']} |")
    rows.append(dict(o, ran=True))
report = json.loads(report_path.read_text())
report["end_to_end"] = rows
report_path.write_text(json.dumps(report, indent=2) + "\n")

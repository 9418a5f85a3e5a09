import { describe, expect, it } from "vitest";
import { ALICE, BOB, CHARLIE } from "../test/fixtures";
import { foldChallenges, isIncidentEvent, jobIncidentsOf, mergeEventRows, voteCounts, type OpenChallengeRow } from "./challenges";
import type { ChainEventRow } from "./events";

const DAVE = "5DAAnrj7VHTznn2AWBemMuyBwZWs6FNFjdyVXUeYum3PTXFy";
let index = 0;
const ev = (block: number, pallet: string, name: string, fields: unknown): ChainEventRow => ({ block, index: index++, pallet, name, fields });

const rows: ChainEventRow[] = [
  ev(10, "Jobs", "ChallengeOpened", { id: 4n, job: 1n, round: 2, accused: BOB, challenger: ALICE, committee: [CHARLIE, DAVE], deadline: 30 }),
  ev(10, "Jobs", "ChallengeOpened", { id: 5n, job: 2n, round: 0, accused: DAVE, challenger: ALICE, committee: [CHARLIE], deadline: 30 }),
  ev(12, "Jobs", "Voted", { id: 4n, who: CHARLIE, verdict: { type: "Invalid" } }),
  ev(13, "Jobs", "Voted", { id: 5n, who: CHARLIE, verdict: { type: "Valid" } }),
  ev(31, "Providers", "Slashed", { who: BOB, reason: { type: "Fraud" }, amount: 50n, to_recipients: 10n }),
  ev(31, "Providers", "Slashed", { who: DAVE, reason: { type: "CommitteeAbsence" }, amount: 5n, to_recipients: 5n }),
  ev(31, "Jobs", "ChallengeResolved", { id: 4n, job: 1n, round: 2, accused: BOB, outcome: { type: "FraudProven" }, slashed: 50n, clawed_back: 30n, absent: 1 }),
  ev(40, "Providers", "Slashed", { who: BOB, reason: { type: "Liveness" }, amount: 7n, to_recipients: 0n }),
  ev(41, "Jobs", "EquivocationPunished", { job: 1n, round: 5, provider: CHARLIE, reporter: ALICE, slashed: 20n }),
  ev(41, "Providers", "Slashed", { who: CHARLIE, reason: { type: "Equivocation" }, amount: 20n, to_recipients: 2n }),
  ev(41, "Jobs", "RewardPaid", { job: 1n, round: 5, who: CHARLIE, amount: 1n }),
];

describe("a job's incidents", () => {
  it("keeps its challenges, their votes and the slashes of its events' blocks", () => {
    const incidents = jobIncidentsOf(rows, 1n);
    expect(incidents.map((i) => `${i.block} ${i.kind}`)).toEqual([
      "10 ChallengeOpened",
      "12 Voted",
      "31 Slashed",
      "31 Slashed",
      "31 ChallengeResolved",
      "41 EquivocationPunished",
      "41 Slashed",
    ]);
    // Dave's absence slash counts: he sits on the job's committee.
    expect(incidents[3]).toMatchObject({ kind: "Slashed", who: DAVE, reason: "CommitteeAbsence", amount: 5n });
    expect(incidents[4]).toMatchObject({ outcome: "FraudProven", slashed: 50n, clawedBack: 30n, absent: 1 });
  });

  it("keeps votes on challenges known from state even when their opening was not read", () => {
    const late = rows.filter((r) => r.name === "Voted");
    expect(jobIncidentsOf(late, 1n).length).toBe(0);
    expect(jobIncidentsOf(late, 1n, [4n]).map((i) => i.kind === "Voted" && i.verdict)).toEqual(["Invalid"]);
  });

  it("selects the events to keep from blocks", () => {
    expect(rows.filter(isIncidentEvent).length).toBe(10);
  });

  it("merges a scan and live blocks, each event once, oldest first", () => {
    const a = rows.slice(0, 4);
    const b = rows.slice(2, 6);
    expect(mergeEventRows(b, a)).toEqual(rows.slice(0, 6));
  });
});

describe("foldChallenges", () => {
  const open: OpenChallengeRow = {
    id: 7n,
    job: 1n,
    round: 6,
    accused: CHARLIE,
    challenger: BOB,
    deposit: 100n,
    committee: [{ who: ALICE, verdict: "Valid" }, { who: DAVE }],
    deadline: 90,
  };

  it("shows open challenges from state, decided ones with their outcome, and those decided before the events read", () => {
    const incidents = jobIncidentsOf(rows, 1n);
    const views = foldChallenges(
      [open],
      [
        { id: 1n, job: 1n, round: 0, accused: DAVE },
        { id: 4n, job: 1n, round: 2, accused: BOB },
        { id: 7n, job: 1n, round: 6, accused: CHARLIE },
      ],
      incidents,
    );
    expect(views.map((v) => [v.id, v.state, v.outcome])).toEqual([
      [7n, "open", undefined],
      [4n, "decided", "FraudProven"],
      [1n, "decided", undefined],
    ]);
    expect(views[0]!.committee).toEqual(open.committee);
    expect(views[1]).toMatchObject({ challenger: ALICE, openedAt: 10, resolvedAt: 31, deadline: 30 });
    expect(views[1]!.committee).toEqual([{ who: CHARLIE, verdict: "Invalid" }, { who: DAVE }]);
    expect(voteCounts(views[1]!.committee!)).toEqual({ valid: 0, invalid: 1, notVoted: 1 });
  });

  it("is empty without challenges", () => {
    expect(foldChallenges([], [], [])).toEqual([]);
  });
});

import { describe, expect, it } from "vitest";
import { ALICE, BOB, CHARLIE } from "../test/fixtures";
import {
  accuserOf,
  ballotOf,
  ballotText,
  challengePhase,
  foldChallenges,
  isIncidentEvent,
  jobIncidentsOf,
  mergeEventRows,
  phaseText,
  voteCounts,
  type CommitteeVote,
  type OpenChallengeRow,
} from "./challenges";
import type { ChainEventRow } from "./events";

const DAVE = "5DAAnrj7VHTznn2AWBemMuyBwZWs6FNFjdyVXUeYum3PTXFy";
const EVE = "5HGjWAeFDfFCWPsjFQdVV2Msvz2XtMktvgocEZcCj68kUMaw";
let index = 0;
const ev = (block: number, pallet: string, name: string, fields: unknown): ChainEventRow => ({ block, index: index++, pallet, name, fields });

const rows: ChainEventRow[] = [
  ev(10, "Jobs", "ChallengeOpened", { id: 4n, job: 1n, round: 2, accused: BOB, challenger: ALICE, draw_at: 12, deadline: 30 }),
  ev(10, "Jobs", "ChallengeOpened", { id: 5n, job: 2n, round: 0, accused: DAVE, challenger: ALICE, draw_at: 12, deadline: 30 }),
  ev(12, "Jobs", "CommitteeDrawn", { id: 4n, committee: [CHARLIE, DAVE], reveal_from: 20 }),
  ev(12, "Jobs", "CommitteeDrawn", { id: 5n, committee: [CHARLIE, EVE], reveal_from: 20 }),
  ev(14, "Jobs", "VoteCommitted", { id: 4n, who: CHARLIE }),
  ev(15, "Jobs", "VoteCommitted", { id: 5n, who: CHARLIE }),
  ev(21, "Jobs", "Voted", { id: 4n, who: CHARLIE, verdict: { type: "Invalid" } }),
  ev(22, "Jobs", "Voted", { id: 5n, who: CHARLIE, verdict: { type: "Valid" } }),
  ev(31, "Providers", "Slashed", { who: BOB, reason: { type: "Fraud" }, amount: 50n, to_recipients: 10n }),
  ev(31, "Providers", "Slashed", { who: DAVE, reason: { type: "CommitteeAbsence" }, amount: 5n, to_recipients: 5n }),
  ev(31, "Providers", "Slashed", { who: EVE, reason: { type: "CommitteeAbsence" }, amount: 5n, to_recipients: 5n }),
  ev(31, "Jobs", "ChallengeResolved", { id: 4n, job: 1n, round: 2, accused: BOB, outcome: { type: "FraudProven" }, slashed: 50n, clawed_back: 30n, absent: 1 }),
  ev(40, "Providers", "Slashed", { who: BOB, reason: { type: "Liveness" }, amount: 7n, to_recipients: 0n }),
  ev(41, "Jobs", "EquivocationPunished", { job: 1n, round: 5, provider: CHARLIE, reporter: ALICE, slashed: 20n }),
  ev(41, "Providers", "Slashed", { who: CHARLIE, reason: { type: "Equivocation" }, amount: 20n, to_recipients: 2n }),
  ev(41, "Jobs", "RewardPaid", { job: 1n, round: 5, who: CHARLIE, amount: 1n }),
];

describe("a job's incidents", () => {
  it("keeps its challenges, their draws, commitments, revealed votes and the slashes of its events' blocks", () => {
    const incidents = jobIncidentsOf(rows, 1n);
    expect(incidents.map((i) => `${i.block} ${i.kind}`)).toEqual([
      "10 ChallengeOpened",
      "12 CommitteeDrawn",
      "14 VoteCommitted",
      "21 Voted",
      "31 Slashed",
      "31 Slashed",
      "31 ChallengeResolved",
      "41 EquivocationPunished",
      "41 Slashed",
    ]);
    expect(incidents[0]).toMatchObject({ kind: "ChallengeOpened", id: 4n, drawAt: 12, deadline: 30 });
    expect(incidents[1]).toEqual({ kind: "CommitteeDrawn", block: 12, id: 4n, committee: [CHARLIE, DAVE], revealFrom: 20 });
    expect(incidents[2]).toMatchObject({ kind: "VoteCommitted", id: 4n, who: CHARLIE });
    expect(incidents[3]).toMatchObject({ kind: "Voted", id: 4n, who: CHARLIE, verdict: "Invalid" });
    // Dave's absence slash counts: he was drawn on the job's committee (Eve only on another job's).
    expect(incidents[5]).toMatchObject({ kind: "Slashed", who: DAVE, reason: "CommitteeAbsence", amount: 5n });
    expect(incidents[6]).toMatchObject({ outcome: "FraudProven", slashed: 50n, clawedBack: 30n, absent: 1 });
  });

  it("knows the committee members from the draw (or from the accounts given)", () => {
    const undrawn = rows.filter((r) => r.name !== "CommitteeDrawn");
    const slashed = (incidents: ReturnType<typeof jobIncidentsOf>) => incidents.flatMap((i) => (i.kind === "Slashed" ? [`${i.block} ${i.who}`] : []));
    expect(slashed(jobIncidentsOf(rows, 1n))).toEqual([`31 ${BOB}`, `31 ${DAVE}`, `41 ${CHARLIE}`]);
    expect(slashed(jobIncidentsOf(undrawn, 1n))).toEqual([`31 ${BOB}`, `41 ${CHARLIE}`]);
    expect(slashed(jobIncidentsOf(undrawn, 1n, [], [DAVE]))).toEqual([`31 ${BOB}`, `31 ${DAVE}`, `41 ${CHARLIE}`]);
    // A draw of a challenge known from state counts too, its opening unread.
    const late = rows.filter((r) => r.name !== "ChallengeOpened");
    expect(slashed(jobIncidentsOf(late, 1n, [4n]))).toEqual([`31 ${BOB}`, `31 ${DAVE}`, `41 ${CHARLIE}`]);
  });

  it("keeps draws and votes on challenges known from state even when their opening was not read", () => {
    const late = rows.filter((r) => ["CommitteeDrawn", "VoteCommitted", "Voted"].includes(r.name));
    expect(jobIncidentsOf(late, 1n).length).toBe(0);
    expect(jobIncidentsOf(late, 1n, [4n]).map((i) => i.kind)).toEqual(["CommitteeDrawn", "VoteCommitted", "Voted"]);
    expect(jobIncidentsOf(late, 1n, [4n]).map((i) => i.kind === "Voted" && i.verdict)).toEqual([false, false, "Invalid"]);
  });

  it("selects the events to keep from blocks", () => {
    expect(rows.filter(isIncidentEvent).length).toBe(15);
    expect(isIncidentEvent({ pallet: "Jobs", name: "CommitteeDrawn" })).toBe(true);
    expect(isIncidentEvent({ pallet: "Jobs", name: "VoteCommitted" })).toBe(true);
  });

  it("merges a scan and live blocks, each event once, oldest first", () => {
    const a = rows.slice(0, 4);
    const b = rows.slice(2, 6);
    expect(mergeEventRows(b, a)).toEqual(rows.slice(0, 6));
  });
});

describe("ballots", () => {
  it("reads PAPI's ballots", () => {
    expect(ballotOf({ type: "Pending", value: undefined })).toEqual({ ballot: "Pending" });
    expect(ballotOf({ type: "Committed", value: `0x${"12".repeat(32)}` })).toEqual({ ballot: "Committed" });
    expect(ballotOf({ type: "Revealed", value: { type: "Invalid", value: undefined } })).toEqual({ ballot: "Revealed", verdict: "Invalid" });
  });

  it("counts revealed verdicts, hidden ones and those not sent", () => {
    const committee: CommitteeVote[] = [
      { who: ALICE, ballot: "Revealed", verdict: "Invalid" },
      { who: BOB, ballot: "Revealed", verdict: "Valid" },
      { who: CHARLIE, ballot: "Revealed", verdict: "Invalid" },
      { who: DAVE, ballot: "Committed" },
      { who: EVE, ballot: "Pending" },
    ];
    expect(voteCounts(committee)).toEqual({ invalid: 2, valid: 1, committed: 1, pending: 1 });
    expect(voteCounts([])).toEqual({ invalid: 0, valid: 0, committed: 0, pending: 0 });
    expect(committee.map(ballotText)).toEqual(["Invalid", "Valid", "Invalid", "committed (hidden)", "pending"]);
  });
});

describe("a challenge's phase", () => {
  const undrawn = { drawAt: 12, committee: [], revealFrom: 20, deadline: 30 };
  const drawn = {
    ...undrawn,
    committee: [
      { who: ALICE, ballot: "Committed" as const },
      { who: BOB, ballot: "Pending" as const },
    ],
  };
  const allCommitted = { ...drawn, committee: drawn.committee.map((m) => ({ ...m, ballot: "Committed" as const })) };

  it("awaits its draw, then commits until reveal_from (or every member committed), reveals until the deadline", () => {
    expect(challengePhase(undrawn, 10)).toEqual({ phase: "draw", until: 12 });
    expect(challengePhase(drawn, 15)).toEqual({ phase: "commit", until: 20 });
    expect(challengePhase(allCommitted, 15)).toEqual({ phase: "reveal", until: 30 });
    expect(challengePhase(drawn, 20)).toEqual({ phase: "reveal", until: 30 });
    expect(challengePhase(drawn, 30)).toEqual({ phase: "closed", until: 30 });
    expect(challengePhase(drawn)).toEqual({ phase: "commit", until: 20 });
  });

  it("reads as text, with the blocks left", () => {
    expect(phaseText(undrawn, 10)).toBe("awaiting the committee draw at #12 (2 blocks left)");
    expect(phaseText(undrawn, 13)).toBe("awaiting the committee draw at #12 (due)");
    expect(phaseText(drawn, 15)).toBe("committing until #20 (5 blocks left)");
    expect(phaseText(allCommitted, 15)).toBe("revealing until #30 (15 blocks left)");
    expect(phaseText(drawn, 31)).toBe("voting closed at #30, to be decided");
    expect(phaseText(drawn)).toBe("committing until #20");
  });
});

describe("foldChallenges", () => {
  const open: OpenChallengeRow = {
    id: 7n,
    job: 1n,
    round: 6,
    accused: CHARLIE,
    audit: false,
    challenger: BOB,
    deposit: 100n,
    drawAt: 70,
    committee: [
      { who: ALICE, ballot: "Revealed", verdict: "Valid" },
      { who: DAVE, ballot: "Committed" },
    ],
    revealFrom: 80,
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
    expect(views[0]).toMatchObject({ drawAt: 70, revealFrom: 80, deadline: 90 });
    expect(views[0]!.committee).toEqual(open.committee);
    expect(views[1]).toMatchObject({ challenger: ALICE, openedAt: 10, drawAt: 12, drawnAt: 12, revealFrom: 20, resolvedAt: 31, deadline: 30 });
    expect(views[1]!.committee).toEqual([
      { who: CHARLIE, ballot: "Revealed", verdict: "Invalid" },
      { who: DAVE, ballot: "Pending" },
    ]);
    expect(voteCounts(views[1]!.committee!)).toEqual({ invalid: 1, valid: 0, committed: 0, pending: 1 });
  });

  it("follows a challenge's committee through the events: drawn, committed, revealed", () => {
    const upTo = (block: number) => foldChallenges([], [], jobIncidentsOf(rows.filter((r) => r.block <= block), 1n))[0]!;
    expect(upTo(10).committee).toBeUndefined();
    expect(upTo(12).committee).toEqual([
      { who: CHARLIE, ballot: "Pending" },
      { who: DAVE, ballot: "Pending" },
    ]);
    expect(upTo(14).committee![0]).toEqual({ who: CHARLIE, ballot: "Committed" });
    expect(upTo(21).committee![0]).toEqual({ who: CHARLIE, ballot: "Revealed", verdict: "Invalid" });
  });

  it("is empty without challenges", () => {
    expect(foldChallenges([], [], [])).toEqual([]);
  });
});

describe("audits", () => {
  // The chain audits Bob's update to round 3 of job 1 at block 50: the committee is drawn in the
  // same block, and the verdict comes as for any challenge.
  const audit: ChainEventRow[] = [
    ev(50, "Jobs", "AuditOpened", { id: 9n, job: 1n, round: 3, accused: BOB, deadline: 70 }),
    ev(50, "Jobs", "CommitteeDrawn", { id: 9n, committee: [CHARLIE, DAVE, EVE], reveal_from: 62 }),
    ev(50, "Jobs", "AuditOpened", { id: 10n, job: 2n, round: 3, accused: EVE, deadline: 70 }),
    ev(50, "Jobs", "CommitteeDrawn", { id: 10n, committee: [ALICE], reveal_from: 62 }),
    ev(55, "Jobs", "VoteCommitted", { id: 9n, who: CHARLIE }),
    ev(63, "Jobs", "Voted", { id: 9n, who: CHARLIE, verdict: { type: "Valid" } }),
    ev(66, "Jobs", "ChallengeResolved", { id: 9n, job: 1n, round: 3, accused: BOB, outcome: { type: "Rejected" }, slashed: 0n, clawed_back: 0n, absent: 0 }),
  ];

  it("reads AuditOpened and the draw in its block, and folds the audit like a challenge", () => {
    expect(audit.filter(isIncidentEvent).length).toBe(7);
    const incidents = jobIncidentsOf(audit, 1n);
    expect(incidents.map((i) => `${i.block} ${i.kind}`)).toEqual([
      "50 AuditOpened",
      "50 CommitteeDrawn",
      "55 VoteCommitted",
      "63 Voted",
      "66 ChallengeResolved",
    ]);
    expect(incidents[0]).toEqual({ kind: "AuditOpened", block: 50, id: 9n, round: 3, accused: BOB, deadline: 70 });
    const [view] = foldChallenges([], [{ id: 9n, job: 1n, round: 3, accused: BOB }], incidents);
    expect(view).toMatchObject({ id: 9n, audit: true, state: "decided", outcome: "Rejected", openedAt: 50, drawAt: 50, drawnAt: 50, revealFrom: 62, deadline: 70 });
    expect(view!.challenger).toBeUndefined();
    expect(view!.committee).toEqual([
      { who: CHARLIE, ballot: "Revealed", verdict: "Valid" },
      { who: DAVE, ballot: "Pending" },
      { who: EVE, ballot: "Pending" },
    ]);
  });

  it("reads a challenge's accuser from state: a challenger with its deposit, or the chain's audit", () => {
    expect(accuserOf({ type: "Challenger", value: { who: ALICE, deposit: 10n } })).toEqual({ audit: false, challenger: ALICE, deposit: 10n });
    expect(accuserOf({ type: "Audit", value: undefined })).toEqual({ audit: true });
    expect(accuserOf({ type: "Audit" })).toEqual({ audit: true });
  });

  it("shows an open audit from state, its committee and ballots from state", () => {
    const row: OpenChallengeRow = {
      id: 9n,
      job: 1n,
      round: 3,
      accused: BOB,
      ...accuserOf({ type: "Audit", value: undefined }),
      drawAt: 50,
      committee: [{ who: CHARLIE, ballot: "Committed" }],
      revealFrom: 62,
      deadline: 70,
    };
    const [view] = foldChallenges([row], [{ id: 9n, job: 1n, round: 3, accused: BOB }], jobIncidentsOf(audit.slice(0, 2), 1n));
    expect(view).toMatchObject({ id: 9n, state: "open", audit: true, drawAt: 50, openedAt: 50, committee: row.committee, deadline: 70 });
    expect(view!.challenger).toBeUndefined();
    expect(view!.deposit).toBeUndefined();
    expect(challengePhase(view!, 60)).toEqual({ phase: "reveal", until: 70 });
  });
});

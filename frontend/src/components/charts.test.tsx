import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { ChallengeView, JobIncident } from "../lib/challenges";
import { UNIT } from "../lib/units";
import { ALICE, BOB, CHARLIE, HASH } from "../test/fixtures";
import { ChallengesSection } from "./ChallengesSection";
import { EarningsChart } from "./EarningsChart";
import { domain, LineChart, niceTicks } from "./LineChart";
import { LossSection } from "./LossSection";
import { RoundStrip } from "./RoundStrip";

describe("LineChart", () => {
  it("draws each series with a legend and the same numbers in a table", () => {
    render(
      <LineChart
        title="Loss per round"
        xLabel="round"
        yLabel="loss"
        series={[
          { id: "a", label: "eval loss", source: "trainer", color: "#00f", points: [{ x: 0, y: 4 }, { x: 1, y: 3 }] },
          { id: "b", label: "train loss", color: "#f00", dashed: true, points: [{ x: 1, y: 3.5 }] },
        ]}
      />,
    );
    const chart = screen.getByRole("img", { name: "Loss per round" });
    expect(chart.querySelectorAll("path")).toHaveLength(1);
    expect(chart.querySelectorAll("circle")).toHaveLength(3);
    expect(chart).toHaveAccessibleDescription(/eval loss: 2 points, last 3 at round 1; train loss: 1 points, last 3.5 at round 1/);
    expect(within(screen.getByRole("list", { name: "Legend" })).getAllByRole("listitem").map((l) => l.textContent)).toEqual([
      "eval loss · trainer",
      "train loss",
    ]);
    const rows = within(screen.getByRole("table")).getAllByRole("row");
    expect(rows.map((r) => r.textContent)).toEqual(["roundeval losstrain loss", "04—", "133.5"]);
  });

  it("labels whole-number x values (rounds) with whole-number ticks only", () => {
    render(
      <LineChart title="Two rounds" xLabel="round" yLabel="loss" series={[{ id: "a", label: "eval", color: "#00f", points: [{ x: 0, y: 1 }, { x: 1, y: 0.5 }] }]} />,
    );
    const ticks = [...screen.getByRole("img", { name: "Two rounds" }).querySelectorAll("text")].map((t) => t.textContent);
    expect(ticks).toContain("0");
    expect(ticks).toContain("1");
    expect(ticks).not.toContain("0.2");
  });

  it("picks round ticks and padded domains", () => {
    expect(niceTicks(0, 10, 5)).toEqual([0, 2, 4, 6, 8, 10]);
    expect(niceTicks(2.31, 2.92, 5)).toEqual([2.4, 2.6, 2.8]);
    expect(niceTicks(2.31, 2.92, 10)).toEqual([2.4, 2.5, 2.6, 2.7, 2.8, 2.9]);
    expect(domain([])).toEqual([0, 1]);
    expect(domain([5])).toEqual([4.5, 5.5]);
    expect(domain([2, 4], true)).toEqual([0, 4.2]);
  });
});

describe("LossSection", () => {
  it("has an empty state, and lists trainers that cannot be read with the reason", () => {
    render(<LossSection job={1n} series={[]} trainers={[{ who: BOB, endpoint: "http://b:8090/health", error: "http://b:8090/status: Failed to fetch" }]} polling />);
    const section = screen.getByRole("region", { name: "Loss curve" });
    expect(section).toHaveTextContent("No losses yet");
    expect(screen.queryByRole("img")).toBeNull();
    expect(within(screen.getByRole("list", { name: "Trainers" })).getByRole("listitem")).toHaveTextContent(
      "cannot use its status: http://b:8090/status: Failed to fetch",
    );
  });

  it("draws the series with their sources", () => {
    render(
      <LossSection
        job={1n}
        trainers={[]}
        series={[
          { id: `eval:${BOB}`, label: "eval loss, bob", source: "trainer /status of bob", kind: "eval", points: [{ x: 0, y: 4 }, { x: 1, y: 3 }] },
          { id: "train:chain", label: "train loss, proofs on chain (mean)", source: "submit_proof", kind: "train", points: [{ x: 1, y: 3.2 }] },
        ]}
      />,
    );
    expect(screen.getByRole("img", { name: "Loss per round of job #1" })).toBeInTheDocument();
    expect(screen.getByRole("list", { name: "Legend" })).toHaveTextContent("train loss, proofs on chain (mean) · submit_proof");
  });
});

describe("RoundStrip", () => {
  const round = (r: number, ok: boolean) => ({
    round: r,
    resultModelHash: ok ? HASH : undefined,
    members: 3,
    proofs: ok ? 3 : 1,
    paidParticipants: ok ? 3 : 0,
    paid: ok ? 30n * UNIT : 0n,
    fee: ok ? UNIT : 0n,
    refunded: ok ? 0n : 31n * UNIT,
    settledAt: 20 + r * 10,
  });

  it("shows settled rounds, quorum or not, and the open round with its deadline", () => {
    const { container } = render(
      <RoundStrip
        rounds={[round(0, true), round(1, false)]}
        open={{ index: 2, openedAt: 40, deadline: 48, members: [BOB, CHARLIE, ALICE], attested: 1, joiners: 0 }}
        now={45}
      />,
    );
    expect(screen.getByRole("img")).toHaveAccessibleName(
      "Rounds at a glance: 2 settled, 1 with a quorum, 1 without; Round 2 open since #40, deadline #48 (3 blocks left): 1 of 3 members attested",
    );
    const bars = container.querySelectorAll("g[data-round]");
    expect([...bars].map((b) => b.getAttribute("data-kind"))).toEqual(["ok", "failed", "open"]);
    expect(bars[1]!.querySelector("title")).toHaveTextContent(
      "Round 1: no quorum, 1/3 proofs, paid 0 GRID, fee 0 GRID, refunded 31 GRID, settled in #30",
    );
  });

  it("renders nothing before the first round", () => {
    const { container } = render(<RoundStrip rounds={[]} />);
    expect(container).toBeEmptyDOMElement();
  });
});

describe("ChallengesSection", () => {
  const open: ChallengeView = {
    id: 7n,
    round: 3,
    accused: CHARLIE,
    state: "open",
    challenger: BOB,
    deposit: 10n * UNIT,
    drawAt: 42,
    committee: [
      { who: ALICE, ballot: "Revealed", verdict: "Invalid" },
      { who: BOB, ballot: "Committed" },
      { who: CHARLIE, ballot: "Pending" },
    ],
    revealFrom: 50,
    deadline: 60,
  };
  const undrawn: ChallengeView = { id: 8n, round: 4, accused: BOB, state: "open", challenger: ALICE, drawAt: 57, committee: [], revealFrom: 65, deadline: 75 };
  const decided: ChallengeView = { id: 2n, round: 1, accused: BOB, state: "decided", outcome: "Rejected", slashed: 0n, clawedBack: 0n, resolvedAt: 33 };
  const unknown: ChallengeView = { id: 1n, round: 0, accused: ALICE, state: "decided" };
  const incidents: JobIncident[] = [
    { kind: "ChallengeOpened", block: 40, id: 7n, round: 3, accused: CHARLIE, challenger: BOB, drawAt: 42, deadline: 60 },
    { kind: "CommitteeDrawn", block: 42, id: 7n, committee: [ALICE, BOB, CHARLIE], revealFrom: 50 },
    { kind: "VoteCommitted", block: 44, id: 7n, who: BOB },
    { kind: "Voted", block: 53, id: 7n, who: ALICE, verdict: "Invalid" },
    { kind: "EquivocationPunished", block: 50, round: 2, provider: CHARLIE, reporter: ALICE, slashed: 5n * UNIT },
    { kind: "Slashed", block: 50, who: CHARLIE, reason: "Equivocation", amount: 5n * UNIT, toRecipients: UNIT },
  ];

  it("shows open challenges with their phase and each member's ballot, every challenge, events and the scan's range", () => {
    render(
      <ChallengesSection
        challenges={[undrawn, open, decided, unknown]}
        incidents={incidents}
        now={55}
        scan={{ requested: { from: 10, to: 100 }, covered: { from: 40, to: 100 }, stoppedAt: 39, pruned: true, truncated: false, events: [], reason: "State already discarded" }}
      />,
    );
    const group = screen.getByRole("group", { name: "Challenge #7" });
    expect(group).toHaveTextContent("revealing until #60 (5 blocks left)");
    expect(group).toHaveTextContent("1 invalid, 0 valid, 1 committed (hidden), 1 pending");
    const votes = within(group).getAllByRole("row").slice(1).map((r) => r.textContent);
    expect(votes).toEqual(["5GrwvaEF…oHGKutQYInvalid", "5FHneW46…jJM694tycommitted (hidden)", "5FLSigC9…1hXcS59Ypending"]);
    const waiting = screen.getByRole("group", { name: "Challenge #8" });
    expect(waiting).toHaveTextContent("awaiting the committee draw at #57 (2 blocks left)");
    expect(waiting).toHaveTextContent("Committee not drawn yet");
    expect(within(waiting).queryByRole("table")).toBeNull();
    const all = screen.getByRole("heading", { name: "Every challenge and audit of this job (4)" }).nextElementSibling!;
    const rows = within(all as HTMLElement).getAllByRole("row").slice(1).map((r) => r.textContent);
    expect(rows[0]).toContain("open, awaiting draw");
    expect(rows[1]).toContain("open, revealing");
    expect(rows[1]).toContain("1 / 0 / 1 / 1");
    expect(rows[2]).toContain("rejected (contribution valid)");
    expect(rows[2]).toContain("#33");
    expect(rows[3]).toContain("decided (outcome before the events read)");
    const events = screen.getByRole("list", { name: "Challenge and slash events" });
    const lines = within(events).getAllByRole("listitem").map((li) => li.textContent);
    expect(lines[0]).toBe("#50 Slashed: 5FLSigC9…1hXcS59Y slashed 5 GRID (Equivocation), 1 GRID to recipients");
    expect(lines.slice(2)).toEqual([
      "#53 Voted: challenge #7: 5GrwvaEF…oHGKutQY revealed Invalid",
      "#44 VoteCommitted: challenge #7: 5FHneW46…jJM694ty committed a hidden verdict",
      "#42 CommitteeDrawn: challenge #7: committee of 3 drawn (5GrwvaEF…oHGKutQY, 5FHneW46…jJM694ty, 5FLSigC9…1hXcS59Y), committing until #50",
      "#40 ChallengeOpened: challenge #7 opened on round 3: 5FLSigC9…1hXcS59Y accused by 5FHneW46…jJM694ty, committee drawn at #42, voting until #60",
    ]);
    expect(screen.getByText(/Events from block #40 on; older state is pruned by this node/)).toBeInTheDocument();
  });

  it("shows an audit by the chain: no challenger, no deposit, its committee drawn at once", () => {
    const audit: ChallengeView = {
      id: 9n,
      round: 5,
      accused: CHARLIE,
      state: "open",
      audit: true,
      drawAt: 70,
      committee: [
        { who: ALICE, ballot: "Committed" },
        { who: BOB, ballot: "Pending" },
      ],
      revealFrom: 82,
      deadline: 90,
      openedAt: 70,
    };
    const auditIncidents: JobIncident[] = [
      { kind: "AuditOpened", block: 70, id: 9n, round: 5, accused: CHARLIE, deadline: 90 },
      { kind: "CommitteeDrawn", block: 70, id: 9n, committee: [ALICE, BOB], revealFrom: 82 },
      { kind: "VoteCommitted", block: 72, id: 9n, who: ALICE },
    ];
    render(<ChallengesSection challenges={[audit, open]} incidents={auditIncidents} now={75} />);
    const group = screen.getByRole("group", { name: "Audit #9" });
    expect(group).toHaveTextContent("Audit #9 on round 5: 5FLSigC9…1hXcS59Y accused by audit (chain); committing until #82 (7 blocks left).");
    expect(group).not.toHaveTextContent("deposit");
    expect(within(group).getAllByRole("row").slice(1).map((r) => r.textContent)).toEqual([
      "5GrwvaEF…oHGKutQYcommitted (hidden)",
      "5FHneW46…jJM694typending",
    ]);
    expect(screen.getByRole("group", { name: "Challenge #7" })).toHaveTextContent("accused by 5FHneW46…jJM694ty, deposit 10 GRID");
    const all = screen.getByRole("heading", { name: "Every challenge and audit of this job (2)" }).nextElementSibling as HTMLElement;
    const cells = within(all).getAllByRole("row")[1]!.querySelectorAll("th, td");
    expect([...cells].slice(0, 5).map((c) => c.textContent)).toEqual(["#9", "5", "5FLSigC9…1hXcS59Y", "audit (chain)", "open, committing"]);
    const lines = within(screen.getByRole("list", { name: "Challenge and slash events" })).getAllByRole("listitem").map((li) => li.textContent);
    expect(lines).toEqual([
      "#72 VoteCommitted: audit #9: 5GrwvaEF…oHGKutQY committed a hidden verdict",
      "#70 CommitteeDrawn: audit #9: committee of 2 drawn (5GrwvaEF…oHGKutQY, 5FHneW46…jJM694ty), committing until #82",
      "#70 AuditOpened: audit #9 of round 5: 5FLSigC9…1hXcS59Y's update, judged by a committee drawn now, voting until #90",
    ]);
  });

  it("has empty states and says when challenges cannot be read", () => {
    render(<ChallengesSection challenges={[]} incidents={[]} scanning error="boom" />);
    expect(screen.getByRole("alert")).toHaveTextContent("Could not read the challenges: boom");
    expect(screen.getByText("No open challenge or audit.")).toBeInTheDocument();
    expect(screen.getByText("No contribution of this job was ever challenged or audited.")).toBeInTheDocument();
    expect(screen.getByText("Reading past blocks…")).toBeInTheDocument();
  });
});

describe("EarningsChart", () => {
  it("draws cumulative rewards by settlement block and slashes", () => {
    render(
      <EarningsChart
        rewards={[
          { job: 1n, round: 0, reward: 30n * UNIT, settledAt: 20 },
          { job: 1n, round: 1, reward: 30n * UNIT, settledAt: 30 },
          { job: 2n, round: 0, reward: 15n * UNIT, settledAt: 30 },
        ]}
        slashes={[{ block: 35, reason: "Liveness", amount: 2n * UNIT }]}
      />,
    );
    const section = screen.getByRole("region", { name: "Rewards and slashes over time" });
    expect(section).toHaveTextContent("Rewarded 75 GRID for 3 contributions; slashed 2 GRID in 1 slash.");
    expect(screen.getByRole("img", { name: "Cumulative rewards and slashes by block, in GRID" })).toBeInTheDocument();
    const rows = within(screen.getByRole("table")).getAllByRole("row").map((r) => r.textContent);
    expect(rows).toEqual(["blockrewards, cumulativeslashes, cumulative", "#2030—", "#3075—", "#35—2"]);
  });

  it("has loading, empty and error states", () => {
    const { rerender } = render(<EarningsChart slashes={[]} />);
    expect(screen.getByText("Loading rewards…")).toBeInTheDocument();
    rerender(<EarningsChart rewards={[]} slashes={[]} />);
    expect(screen.getByText("No reward or slash yet.")).toBeInTheDocument();
    rerender(<EarningsChart rewards={[]} slashes={[]} error="no node" />);
    expect(screen.getByRole("alert")).toHaveTextContent("Could not read the rewards: no node");
  });
});

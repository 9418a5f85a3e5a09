import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { DATASETS } from "../lib/spec";
import { UNIT } from "../lib/units";
import { ALICE, BOB, CHARLIE, challengeDetail, completedDetail, HASH, job, RESNET_SPEC, runningDetail, SPEC, TRANSFORMER_SPEC } from "../test/fixtures";
import { JobDetailView } from "./JobDetailView";

const PEER = "12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN";

describe("JobDetailView", () => {
  it("shows a completed job's final model hash and the command to fetch it", () => {
    render(<JobDetailView detail={completedDetail()} rpcUrl="ws://127.0.0.1:9944" />);
    expect(screen.getByRole("heading", { level: 1 })).toHaveTextContent("Job #3 Completed");
    const final = screen.getByRole("region", { name: "Final model" });
    expect(final).toHaveTextContent(HASH);
    expect(within(final).getByLabelText("Fetch command")).toHaveTextContent(
      "grid-trainer job fetch --url ws://127.0.0.1:9944 --job 3 --out model.safetensors",
    );
  });

  it("lists participants with their earnings and the settled rounds", () => {
    render(<JobDetailView detail={completedDetail()} rpcUrl="ws://x" />);
    const participants = screen.getByRole("region", { name: "Participants (2)" });
    expect(within(participants).getAllByText("75 GRID")).toHaveLength(2);
    const rounds = screen.getByRole("region", { name: "Rounds" });
    expect(within(rounds).getAllByRole("listitem")).toHaveLength(5);
    expect(rounds).toHaveTextContent("Round 4");
    expect(rounds).toHaveTextContent("settled in #52");
  });

  it("shows the stake each member's provider record locks for a live job, flags a missing or short lock, and sums them", () => {
    render(<JobDetailView detail={runningDetail()} rpcUrl="ws://x" />);
    const participants = screen.getByRole("region", { name: "Participants (3)" });
    expect(within(participants).getByRole("columnheader", { name: "Stake locked" })).toBeInTheDocument();
    const lockOf = (who: string) => within(participants).getByTitle(who).closest("tr")!.lastElementChild!;
    expect(lockOf(BOB)).toHaveTextContent(/^6,000 GRID$/);
    expect(lockOf(BOB)).not.toHaveClass("warning");
    expect(lockOf(CHARLIE)).toHaveTextContent(/^5,000 GRID \(below 6,000 GRID!\)$/);
    expect(lockOf(CHARLIE)).toHaveClass("warning");
    expect(lockOf(ALICE)).toHaveTextContent(/^— \(no lock!\)$/);
    expect(lockOf(ALICE)).toHaveClass("warning");
    expect(within(participants).getByTestId("lock-warning")).toHaveTextContent("2 participants lack the stake lock");
    expect(within(participants).getByTestId("job-stake-locked")).toHaveTextContent(/^11,000 GRID$/);
  });

  it("leaves an ended job's locks unflagged: one lasting until a block, then lapsed, or already pruned", () => {
    const { rerender } = render(<JobDetailView detail={completedDetail()} rpcUrl="ws://x" now={80} />);
    const participants = screen.getByRole("region", { name: "Participants (2)" });
    const lockOf = (who: string) => within(participants).getByTitle(who).closest("tr")!.lastElementChild!;
    expect(lockOf(BOB)).toHaveTextContent(/^6,000 GRID until #90$/);
    expect(lockOf(CHARLIE)).toHaveTextContent(/^— \(released\)$/);
    expect(within(participants).queryByTestId("lock-warning")).not.toBeInTheDocument();
    expect(participants.querySelector(".warning")).toBeNull();
    expect(within(participants).getByTestId("job-stake-locked")).toHaveTextContent(/^6,000 GRID$/);

    rerender(<JobDetailView detail={completedDetail()} rpcUrl="ws://x" now={90} />);
    expect(lockOf(BOB)).toHaveTextContent(/^6,000 GRID until #90 \(lapsed\)$/);
    expect(within(participants).getByTestId("job-stake-locked")).toHaveTextContent(/^0 GRID$/);
  });

  it("adds rounds and rewards seen in events to those read from state", () => {
    const detail = { job: job(1, { status: "Running", participants: 1 }), participants: [], rounds: [] };
    render(
      <JobDetailView
        detail={detail}
        liveRounds={[{ round: 0, resultModelHash: HASH, paid: 30n * UNIT, fee: 0n, refunded: 0n, settledAt: 40, rewards: [{ who: BOB, amount: 30n * UNIT }] }]}
        rpcUrl="ws://x"
      />,
    );
    const rounds = screen.getByRole("region", { name: "Rounds" });
    expect(rounds).toHaveTextContent("Round 0");
    expect(within(rounds).getByTitle(BOB).parentElement).toHaveTextContent("+30 GRID");
    expect(screen.queryByRole("region", { name: "Final model" })).not.toBeInTheDocument();
  });

  it("says how many members of the open round joined for it, which count towards its quorum once they deliver", () => {
    const detail = runningDetail();
    const round = { index: 1, openedAt: 30, deadline: 40, members: [BOB, CHARLIE, ALICE], attested: 2, joiners: 1 };
    render(<JobDetailView detail={{ ...detail, job: { ...detail.job, round } }} rpcUrl="ws://x" />);
    expect(screen.getByText(/joined for this round/)).toHaveTextContent(
      "2 of 3 members attested (1 joined for this round: they count towards its quorum once they deliver).",
    );
  });

  it("offers the buyer a cancel button", () => {
    const onCancel = vi.fn();
    render(<JobDetailView detail={{ job: job(1), participants: [], rounds: [] }} rpcUrl="ws://x" canCancel onCancel={onCancel} />);
    screen.getByRole("button", { name: "Cancel job" }).click();
    expect(onCancel).toHaveBeenCalled();
    expect(screen.getByText("No provider has joined yet.")).toBeInTheDocument();
  });

  it("says a cancelled running job ends after its open round, and offers no second cancel", () => {
    const running = job(1, { status: "Running", roundsSettled: 2, cancelRequested: true });
    render(<JobDetailView detail={{ job: running, participants: [], rounds: [] }} rpcUrl="ws://x" canCancel onCancel={vi.fn()} />);
    expect(screen.queryByRole("button", { name: "Cancel job" })).not.toBeInTheDocument();
    expect(screen.getByRole("status")).toHaveTextContent("the job ends when round 2 settles");
  });

  it("offers the buyer a challenge of each contribution still in its window, not yet challenged and not its own, with the cost", async () => {
    const onChallenge = vi.fn();
    const cost = { deposit: 100n * UNIT, fee: 10n * UNIT };
    render(<JobDetailView detail={challengeDetail()} rpcUrl="ws://x" now={40} canChallenge onChallenge={onChallenge} challengeCost={cost} />);
    const section = screen.getByRole("region", { name: "Challenge a contribution" });
    const buttons = within(section).getAllByRole("button", { name: /^Challenge round/ });
    expect(buttons.map((b) => b.getAttribute("aria-label"))).toEqual([
      `Challenge round 1 by ${CHARLIE}`,
      `Challenge round 2 by ${BOB}`,
      `Challenge round 2 by ${CHARLIE}`,
    ]);
    // Round 0's window closed at #36: not even listed.
    expect(within(section).queryByTestId(`contribution-0-${BOB}`)).not.toBeInTheDocument();
    expect(within(section).getByTestId(`contribution-1-${BOB}`)).toHaveTextContent("challenged (#7)");
    expect(within(section).getByTestId(`contribution-2-${ALICE}`)).toHaveTextContent("your own");
    expect(within(section).getByTestId(`contribution-2-${CHARLIE}`)).toHaveTextContent("unpaid (claims another member's update)");
    expect(within(section).getByTestId(`contribution-1-${CHARLIE}`)).toHaveTextContent("#46 (6 blocks left)");
    expect(within(section).getByTestId("challenge-cost")).toHaveTextContent(
      "A challenge puts a deposit of 100 GRID on hold until the committee decides, and pays a fee of 10 GRID that is not refunded.",
    );
    expect(within(section).getByTestId("challenge-cost")).toHaveTextContent("challenging valid work costs the deposit as well as the fee");
    await userEvent.click(within(section).getByRole("button", { name: `Challenge round 2 by ${BOB}` }));
    expect(onChallenge).toHaveBeenCalledExactlyOnceWith(2, BOB);
  });

  it("offers no challenge once a round's window closes: a transaction sent at its last block would land after it", () => {
    const { rerender } = render(<JobDetailView detail={challengeDetail()} rpcUrl="ws://x" now={53} canChallenge onChallenge={vi.fn()} />);
    const names = () => screen.queryAllByRole("button", { name: /^Challenge round/ }).map((b) => b.getAttribute("aria-label"));
    expect(names()).toEqual([`Challenge round 2 by ${BOB}`, `Challenge round 2 by ${CHARLIE}`]);
    rerender(<JobDetailView detail={challengeDetail()} rpcUrl="ws://x" now={54} canChallenge onChallenge={vi.fn()} />);
    expect(names()).toEqual([]);
    expect(screen.getByRole("region", { name: "Challenge a contribution" })).toHaveTextContent("No contribution is open to a challenge");
  });

  it("shows no challenge section to anyone but the buyer", () => {
    render(<JobDetailView detail={challengeDetail()} rpcUrl="ws://x" now={40} onChallenge={vi.fn()} />);
    expect(screen.queryByRole("region", { name: "Challenge a contribution" })).not.toBeInTheDocument();
    expect(screen.queryByRole("button", { name: /^Challenge/ })).not.toBeInTheDocument();
  });

  it("follows the buyer's challenge transaction and disables the buttons while it is pending", () => {
    const challengeTx = { state: { phase: "pending" as const, txHash: "0x99" }, round: 1, provider: CHARLIE };
    render(<JobDetailView detail={challengeDetail()} rpcUrl="ws://x" now={40} canChallenge onChallenge={vi.fn()} challengeTx={challengeTx} />);
    const section = screen.getByRole("region", { name: "Challenge a contribution" });
    expect(within(section).getByRole("status")).toHaveTextContent("Challenge of round 1 by 5FLSigC9…1hXcS59Y: Pending");
    for (const b of within(section).getAllByRole("button", { name: /^Challenge round/ })) expect(b).toBeDisabled();
  });

  it("states the job's exchange and what it takes from each round", () => {
    const spec = { ...SPEC, training: { ...SPEC.training, exchange: { grace_ms: 3000, fetch_ms: 20000, fan_in: undefined } } };
    const { unmount } = render(<JobDetailView detail={{ job: job(2, { spec }), participants: [], rounds: [] }} rpcUrl="ws://x" />);
    expect(screen.getByTestId("exchange")).toHaveTextContent(
      "commitments taken for 3000 ms, updates waited for at most 20000 ms: 16000 ms of each round; every member's update aggregated",
    );
    unmount();
    const bounded = { ...SPEC, training: { ...SPEC.training, exchange: { grace_ms: 3000, fetch_ms: 20000, fan_in: 16 } } };
    render(<JobDetailView detail={{ job: job(2, { spec: bounded }), participants: [], rounds: [] }} rpcUrl="ws://x" />);
    expect(screen.getByTestId("exchange")).toHaveTextContent("at most 16 updates aggregated a round");
  });

  it("names a shipped dataset by its name, with its URI and shortened reference", () => {
    render(<JobDetailView detail={completedDetail()} rpcUrl="ws://x" />);
    const dataset = within(screen.getByRole("region", { name: "Spec" })).getByTestId("dataset");
    const hash = DATASETS.shakespeare.hash;
    expect(dataset).toHaveTextContent(`Tiny Shakespeare (byte-level text): grid:shakespeare ${hash.slice(0, 10)}…${hash.slice(-8)}`);
    expect(within(dataset).getByTitle(hash)).toBeInTheDocument();
  });

  it("shows the buyer's own dataset as such: its URI as text and its reference, shortened with the full one as title", () => {
    const ref = "0x" + "ab".repeat(32);
    const holders = "/ip4/127.0.0.1/tcp/40111/p2p/12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN file:///data/corpus.txt";
    const spec = { ...SPEC, dataset: { content_hash: ref, uri: Uint8Array.from(new TextEncoder().encode(holders)) } };
    render(<JobDetailView detail={{ job: job(2, { spec }), participants: [], rounds: [] }} rpcUrl="ws://x" />);
    const dataset = within(screen.getByRole("region", { name: "Spec" })).getByTestId("dataset");
    expect(dataset).toHaveTextContent(`own dataset: ${holders} 0xabababab…abababab`);
    expect(within(dataset).getByTitle(ref)).toHaveTextContent("0xabababab…abababab");
  });

  it("calls a shipped URI under another reference an own dataset", () => {
    const spec = { ...SPEC, dataset: { ...SPEC.dataset, uri: Uint8Array.from(new TextEncoder().encode("grid:mnist")) } };
    render(<JobDetailView detail={{ job: job(2, { spec }), participants: [], rounds: [] }} rpcUrl="ws://x" />);
    expect(screen.getByTestId("dataset")).toHaveTextContent(/^own dataset: grid:mnist 0x/);
  });

  it("shows the job's initial weights, their URI as text and their reference shortened with the full one as title", () => {
    const ref = "0x" + "cd".repeat(32);
    const uri = "/ip4/127.0.0.1/tcp/40111/p2p/12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN";
    const spec = { ...SPEC, initial_weights: { content_hash: ref, uri: Uint8Array.from(new TextEncoder().encode(uri)) } };
    render(<JobDetailView detail={{ job: job(2, { spec }), participants: [], rounds: [] }} rpcUrl="ws://x" />);
    const weights = within(screen.getByRole("region", { name: "Spec" })).getByTestId("initial-weights");
    expect(weights).toHaveTextContent(`${uri} 0xcdcdcdcd…cdcdcdcd`);
    expect(within(weights).getByTitle(ref)).toHaveTextContent("0xcdcdcdcd…cdcdcdcd");
    expect(weights).not.toHaveTextContent("seeded");
  });

  it("shows where the dataset and the initial weights come from: what a shipped one is, holders and the data info command", () => {
    const ref = "0x" + "cd".repeat(32);
    const uri = `/ip4/127.0.0.1/tcp/40111/p2p/${PEER}`;
    const spec = { ...SPEC, initial_weights: { content_hash: ref, uri: Uint8Array.from(new TextEncoder().encode(uri)) } };
    render(<JobDetailView detail={{ job: job(2, { spec }), participants: [], rounds: [] }} rpcUrl="ws://x" />);
    const dataset = within(screen.getByRole("region", { name: "Spec" })).getByTestId("dataset");
    expect(within(dataset).getByTestId("dataset-source")).toHaveTextContent("Shipped with every trainer: Tiny Shakespeare (byte-level text)");
    expect(within(dataset).queryByLabelText("Data info command")).not.toBeInTheDocument();
    const weights = screen.getByTestId("initial-weights");
    const holders = within(weights).getByRole("list", { name: "Holders" });
    expect(within(holders).getByTitle(PEER)).toHaveTextContent("12D3KooW…4kx6nXTN");
    expect(holders).toHaveTextContent("at /ip4/127.0.0.1/tcp/40111");
    expect(within(weights).getByLabelText("Data info command")).toHaveTextContent(`grid-trainer data info --reference ${ref} --uri "${uri}"`);
  });

  it("says why providers cannot fetch a dataset whose URI the trainers refuse", () => {
    const uri = Uint8Array.from(new TextEncoder().encode(`/ip4/127.0.0.1/tcp/1/p2p/${PEER} holder.example:4001`));
    const spec = { ...SPEC, dataset: { content_hash: "0x" + "ab".repeat(32), uri } };
    const { rerender } = render(<JobDetailView detail={{ job: job(2, { spec }), participants: [], rounds: [] }} rpcUrl="ws://x" />);
    expect(within(screen.getByTestId("dataset")).getByTestId("dataset-source")).toHaveTextContent(
      'Providers cannot fetch it: "holder.example:4001" is not a libp2p address (/ip4/…/tcp/…/p2p/<peer id>)',
    );
    const weights = { ...SPEC, initial_weights: { content_hash: DATASETS.mnist.hash, uri: Uint8Array.from(new TextEncoder().encode("grid:mnist")) } };
    rerender(<JobDetailView detail={{ job: job(2, { spec: weights }), participants: [], rounds: [] }} rpcUrl="ws://x" />);
    expect(within(screen.getByTestId("initial-weights")).getByTestId("dataset-source")).toHaveTextContent(
      /^Providers cannot fetch it: grid: names shipped training data, not weights/,
    );
  });

  it("says a job without initial weights starts from the seeded initialisation", () => {
    render(<JobDetailView detail={completedDetail()} rpcUrl="ws://x" />);
    const spec = screen.getByRole("region", { name: "Spec" });
    expect(within(spec).getByText("Initial weights")).toBeInTheDocument();
    expect(within(spec).getByTestId("initial-weights")).toHaveTextContent(/^seeded initialisation$/);
  });

  it("describes the model: a GPT, a transformer with every knob, or a ResNet, with its parameter count", () => {
    const { rerender } = render(<JobDetailView detail={completedDetail()} rpcUrl="ws://x" />);
    const spec = () => screen.getByRole("region", { name: "Spec" });
    const model = () => within(spec()).getByText("Model").nextElementSibling;
    expect(model()).toHaveTextContent(/^GPT 2×64, 4 heads, context 64 \(/);
    rerender(<JobDetailView detail={{ job: job(5, { spec: TRANSFORMER_SPEC }), participants: [], rounds: [] }} rpcUrl="ws://x" />);
    expect(model()).toHaveTextContent(
      /^Transformer 2×64, 4 heads \(2 kv\), MLP 172 SwiGLU, RMSNorm, RoPE, tied embeddings, vocab 256, context 64 \(107\.3k params\)$/,
    );
    rerender(<JobDetailView detail={{ job: job(6, { spec: RESNET_SPEC }), participants: [], rounds: [] }} rpcUrl="ws://x" />);
    expect(model()).toHaveTextContent(/^ResNet 1×28×28 → 10 classes, width 8, 2 stages × 1 block \(5\.1k params\)$/);
  });

  it("says anyone with the stake may join a job with the default admission", () => {
    render(<JobDetailView detail={completedDetail()} rpcUrl="ws://x" />);
    const spec = screen.getByRole("region", { name: "Spec" });
    expect(within(spec).getByTestId("admission")).toHaveTextContent(/^anyone with the stake$/);
    expect(within(spec).queryByRole("list", { name: "Allowlist" })).not.toBeInTheDocument();
  });

  it("shows the buyer's admission rules and the allowlist's accounts", () => {
    const admission = { min_health: 750_000_000, min_age: 14_400, allowlist: [ALICE, BOB] };
    render(<JobDetailView detail={{ job: job(2, { admission }), participants: [], rounds: [] }} rpcUrl="ws://x" />);
    const spec = screen.getByRole("region", { name: "Spec" });
    expect(within(spec).getByText("Who may join")).toBeInTheDocument();
    expect(within(spec).getByTestId("admission")).toHaveTextContent(
      "providers with the stake, a health score of at least 0.750 (75%), registered for at least 14400 blocks (24.0 h), on the allowlist (2 accounts)",
    );
    const list = within(spec).getByRole("list", { name: "Allowlist" });
    expect(within(list).getAllByRole("listitem").map((li) => li.getAttribute("title"))).toEqual([ALICE, BOB]);
  });
});

import { act, render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import type { TxEvent } from "polkadot-api";
import { Subject } from "rxjs";
import { describe, expect, it, vi } from "vitest";
import type { Account } from "../lib/accounts";
import type { ProviderEvent } from "../lib/providers";
import type { ProviderSource } from "../lib/source";
import { UNIT } from "../lib/units";
import { ALICE, BOB, provider } from "../test/fixtures";

import { ProviderPage } from "./ProviderPage";

function fakeSource() {
  const events = new Subject<ProviderEvent>();
  const tx = new Subject<TxEvent>();
  const source: ProviderSource = {
    providers: vi.fn(),
    provider: vi.fn(async (who: string) =>
      who === BOB
        ? provider(BOB, {
            // A member of job 4; job 2 it left, its stake locked until block 150.
            activeJobs: 1,
            jobLocks: [{ job: 4n, amount: 100n * UNIT, disputes: 0 }, { job: 2n, amount: 40n * UNIT, until: 150, disputes: 0 }],
            locked: 140n * UNIT,
            unbonding: [{ amount: 10n * UNIT, unlockAt: 20 }, { amount: 5n * UNIT, unlockAt: 900 }],
            health: { roundsDelivered: 4, roundsMissed: 1, challengesLost: 0, probesOk: 3, probesFailed: 1, lastProbe: { at: 30, ok: true, latencyMs: 12 } },
            score: 600_000_000,
          })
        : undefined,
    ),
    providerJobs: vi.fn(async () => [
      { id: 4n, status: "Running" as const, roundsSettled: 2, rounds: 5, fromRound: 0, missedInRow: 0, roundsPaid: 2, earned: 60n * UNIT },
    ]),
    constants: vi.fn(async () => ({ minStake: 100n * UNIT, unbondingPeriod: 14_400, maxUnbondingChunks: 16 })),
    free: vi.fn(async () => 1_000n * UNIT),
    events: () => events,
    bondMore: vi.fn(() => tx),
    unbond: vi.fn(() => tx),
    withdrawUnbonded: vi.fn(() => tx),
  };
  return { source, events, tx };
}

const bob = { address: BOB, name: "Bob", source: "dev", signer: {} } as Account;
const alice = { address: ALICE, name: "Alice", source: "dev", signer: {} } as Account;

describe("ProviderPage with a fake data source", () => {
  it("shows the record, health, jobs and live rewards and slashes", async () => {
    const { source, events } = fakeSource();
    render(<ProviderPage source={source} who={BOB} at="0xbest" now={100} account={alice} />);
    expect(await screen.findByTestId("provider-stake")).toHaveTextContent("200 GRID");
    const record = screen.getByRole("region", { name: "Record" });
    expect(record).toHaveTextContent("10 GRID unlocks at #20 (unlocked)");
    expect(record).toHaveTextContent("5 GRID unlocks at #900 (in 800 blocks (80 min))");
    const health = screen.getByRole("region", { name: "Health" });
    expect(health).toHaveTextContent("0.600");
    expect(health).toHaveTextContent("3 ok, 1 failed (75.0% up)");
    expect(health).toHaveTextContent("#30: ok, 12 ms");
    const jobs = await screen.findByRole("region", { name: "Jobs (1)" });
    expect(jobs).toHaveTextContent("Earned 60 GRID over 2 paid rounds.");
    expect(within(jobs).getByRole("link", { name: "#4" })).toHaveAttribute("href", "#/jobs/4");
    const locks = screen.getByRole("region", { name: "Stake locked for jobs" });
    const lockRows = within(locks).getAllByRole("row").slice(1);
    expect(lockRows.map((r) => r.textContent)).toEqual([
      "#4100 GRIDwhile a member",
      "#240 GRIDuntil block #150 (in 50 blocks (5 min))",
      "Total locked now140 GRID",
    ]);
    expect(within(locks).getByRole("link", { name: "#2" })).toHaveAttribute("href", "#/jobs/2");
    expect(within(locks).getByTestId("provider-locked")).toHaveTextContent("140 GRID");
    // Alice is not this provider: no stake actions.
    expect(screen.queryByRole("region", { name: "Your stake" })).not.toBeInTheDocument();

    const live = screen.getByRole("region", { name: "Rewards and slashes" });
    expect(live).toHaveTextContent("None seen since this page opened.");
    act(() => {
      events.next({ kind: "RewardPaid", block: 101, job: 4n, round: 2, amount: 30n * UNIT });
      events.next({ kind: "Slashed", block: 102, reason: "Liveness", amount: 2n * UNIT, toRecipients: UNIT });
    });
    const items = within(live).getAllByRole("listitem");
    expect(items[0]).toHaveTextContent("#102: slashed 2 GRID (Liveness), 1 GRID to recipients");
    expect(items[1]).toHaveTextContent("#101: +30 GRID for round 2 of job #4");
  });

  it("lets the provider bond, unbond (validated) and withdraw, following the transaction", async () => {
    const { source, tx } = fakeSource();
    render(<ProviderPage source={source} who={BOB} at="0xbest" now={100} account={bob} />);
    const stake = await screen.findByRole("region", { name: "Your stake" });
    await within(stake).findByText(/minimum 100 GRID/);
    expect(within(stake).getByText(/10 GRID unlocked/)).toBeInTheDocument();

    // In a job, Bob must keep the minimum: unbonding 150 of 200 is refused before signing.
    await userEvent.type(within(stake).getByLabelText("Unbond (GRID)"), "150");
    expect(within(stake).getByText("a provider in a job must keep the minimum stake")).toBeInTheDocument();
    await userEvent.click(within(stake).getByRole("button", { name: "Unbond" }));
    expect(source.unbond).not.toHaveBeenCalled();
    // 140 GRID are locked for jobs: unbonding 70 would leave 130, above the minimum but below that.
    expect(within(stake).getByText(/locked for jobs 140 GRID/)).toBeInTheDocument();
    await userEvent.clear(within(stake).getByLabelText("Unbond (GRID)"));
    await userEvent.type(within(stake).getByLabelText("Unbond (GRID)"), "70");
    expect(
      within(stake).getByText("that much stake is locked for jobs: at least 140 GRID must stay bonded"),
    ).toBeInTheDocument();
    await userEvent.click(within(stake).getByRole("button", { name: "Unbond" }));
    expect(source.unbond).not.toHaveBeenCalled();
    await userEvent.clear(within(stake).getByLabelText("Unbond (GRID)"));
    await userEvent.type(within(stake).getByLabelText("Unbond (GRID)"), "50");
    await userEvent.click(within(stake).getByRole("button", { name: "Unbond" }));
    expect(source.unbond).toHaveBeenCalledWith(50n * UNIT, bob.signer);
    expect(within(stake).getByRole("status")).toHaveTextContent("Unbond: Waiting for the signature");
    act(() => tx.next({ type: "signed", txHash: "0x99" }));
    expect(within(stake).getByRole("status")).toHaveTextContent("Unbond: Pending");
    act(() =>
      tx.next({
        type: "finalized",
        txHash: "0x99",
        ok: false,
        events: [],
        block: { hash: "0xb", number: 41, index: 1 },
        dispatchError: { type: "Module", value: { type: "Providers", value: { type: "InJob" } } },
      }),
    );
    expect(within(stake).getByRole("status")).toHaveTextContent("Unbond: Failed #41");
    expect(within(stake).getByRole("status")).toHaveTextContent("Providers.InJob: the provider is in a job");

    await userEvent.type(within(stake).getByLabelText("Bond more (GRID)"), "12.5");
    await userEvent.click(within(stake).getByRole("button", { name: "Bond more" }));
    expect(source.bondMore).toHaveBeenCalledWith(12n * UNIT + UNIT / 2n, bob.signer);
    expect(within(stake).getByRole("status")).toHaveTextContent("Bond more: Waiting for the signature");
    // While a transaction is on its way the buttons wait.
    expect(within(stake).getByRole("button", { name: "Withdraw unbonded" })).toBeDisabled();
    act(() =>
      tx.next({ type: "finalized", txHash: "0x9a", ok: true, events: [], block: { hash: "0xc", number: 42, index: 1 } }),
    );
    expect(within(stake).getByRole("status")).toHaveTextContent("Bond more: Finalized #42");

    await userEvent.click(within(stake).getByRole("button", { name: "Withdraw unbonded" }));
    expect(source.withdrawUnbonded).toHaveBeenCalledWith(bob.signer);
  });

  it("says when the account is not a provider", async () => {
    render(<ProviderPage source={fakeSource().source} who={ALICE} at="0xbest" />);
    expect(await screen.findByRole("alert")).toHaveTextContent(`${ALICE} is not a registered provider on this chain.`);
  });
});

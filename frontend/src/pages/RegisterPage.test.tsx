import { act, fireEvent, render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import type { TxEvent } from "polkadot-api";
import { Subject } from "rxjs";
import { describe, expect, it, vi } from "vitest";
import type { Account } from "../lib/accounts";
import type { RegistrationSource } from "../lib/source";
import { UNIT } from "../lib/units";
import { ALICE, BOB, provider } from "../test/fixtures";
import { GENESIS, PEER, registrationJson } from "../test/registration";
import { RegisterPage } from "./RegisterPage";

function fakeSource(registered: string[] = []) {
  const tx = new Subject<TxEvent>();
  const source: RegistrationSource = {
    provider: vi.fn(async (who: string) => (registered.includes(who) ? provider(who) : undefined)),
    constants: vi.fn(async () => ({ minStake: 100n * UNIT, unbondingPeriod: 14_400, maxUnbondingChunks: 16 })),
    free: vi.fn(async () => 1_000n * UNIT),
    register: vi.fn(() => tx),
    update: vi.fn(() => tx),
  };
  return { source, tx };
}

const alice = { address: ALICE, name: "Alice", source: "dev", signer: {} } as Account;
const bob = { address: BOB, name: "Bob", source: "dev", signer: {} } as Account;

/** Pastes `value` into the registration field (typing JSON's braces would be read as key names). */
function paste(value: unknown) {
  const field = screen.getByLabelText("Registration (JSON)");
  fireEvent.change(field, { target: { value: typeof value === "string" ? value : JSON.stringify(value) } });
}

const problems = () => within(screen.getByRole("list", { name: "Problems with the registration" })).getAllByRole("listitem").map((li) => li.textContent);

describe("RegisterPage with a fake source", () => {
  it("checks the pasted registration, shows its summary, signs and follows the transaction", async () => {
    const { source, tx } = fakeSource();
    render(<RegisterPage source={source} at="0xbest" account={alice} genesisHash={GENESIS} />);
    expect(screen.getByRole("heading", { level: 1, name: "Register a provider" })).toBeInTheDocument();
    const sign = screen.getByRole("button", { name: "Sign and register" });
    expect(sign).toBeDisabled();
    await vi.waitFor(() => expect(source.free).toHaveBeenCalledWith(ALICE, "0xbest"));

    paste(registrationJson());
    expect(screen.queryByRole("list", { name: "Problems with the registration" })).not.toBeInTheDocument();
    const stake = screen.getByLabelText("Stake (GRID)");
    expect(stake).toHaveValue("200");
    const summary = screen.getByRole("region", { name: "Summary" });
    expect(summary).toHaveTextContent(PEER);
    expect(summary).toHaveTextContent(`/ip4/127.0.0.1/tcp/40333/p2p/${PEER}`);
    expect(summary).toHaveTextContent("1 × x86_64 2-core (Cpu), 24 GiB each");
    expect(summary).toHaveTextContent("0.15 TFLOP/s");
    expect(screen.getByTestId("registration-stake-summary")).toHaveTextContent("200 GRID");
    await screen.findByText(/minimum 100 GRID/);

    // The stake is editable and checked against the minimum and the free balance.
    await userEvent.clear(stake);
    await userEvent.type(stake, "50");
    expect(screen.getByText("below the minimum stake of 100 GRID")).toBeInTheDocument();
    expect(sign).toBeDisabled();
    await userEvent.clear(stake);
    await userEvent.type(stake, "2000");
    expect(screen.getByText("more than the account's free balance (1,000 GRID)")).toBeInTheDocument();
    await userEvent.clear(stake);
    await userEvent.type(stake, "250.5");
    expect(screen.getByTestId("registration-stake-summary")).toHaveTextContent("250.5 GRID");

    await userEvent.click(sign);
    expect(source.register).toHaveBeenCalledTimes(1);
    const [reg, amount, signer] = vi.mocked(source.register).mock.calls[0]!;
    expect(reg).toMatchObject({ account: ALICE, peerId: PEER, endpoint: "http://127.0.0.1:8090/health" });
    expect(amount).toBe(250n * UNIT + UNIT / 2n);
    expect(signer).toBe(alice.signer);
    expect(screen.getByRole("status")).toHaveTextContent("Register: Waiting for the signature");
    act(() => tx.next({ type: "signed", txHash: "0x77" }));
    expect(screen.getByRole("status")).toHaveTextContent("Register: Pending");
    act(() => tx.next({ type: "finalized", txHash: "0x77", ok: true, events: [], block: { hash: "0xf", number: 12, index: 1 } }));
    expect(screen.getByRole("status")).toHaveTextContent("Register: Finalized #12");
    expect(screen.getByRole("link", { name: "Open your provider page" })).toHaveAttribute("href", `#/providers/${ALICE}`);
  });

  it("shows the decoded error when the chain refuses", async () => {
    const { source, tx } = fakeSource();
    render(<RegisterPage source={source} at="0xbest" account={alice} genesisHash={GENESIS} />);
    paste(registrationJson());
    await userEvent.click(screen.getByRole("button", { name: "Sign and register" }));
    act(() =>
      tx.next({
        type: "txBestBlocksState",
        txHash: "0x78",
        found: true,
        ok: false,
        events: [],
        block: { hash: "0xe", number: 11, index: 1 },
        dispatchError: { type: "Module", value: { type: "Providers", value: { type: "BadPeerSignature" } } },
      }),
    );
    expect(screen.getByRole("status")).toHaveTextContent("Register: Failed #11");
    expect(screen.getByRole("status")).toHaveTextContent(
      "Providers.BadPeerSignature: the libp2p key's signature over (genesis hash, account) does not verify",
    );
  });

  it("says when it is made for another chain or another account, or is not a registration", async () => {
    const { source } = fakeSource();
    render(<RegisterPage source={source} at="0xbest" account={bob} genesisHash={GENESIS} />);
    paste(registrationJson({ genesis: `0x${"34".repeat(32)}` }));
    expect(problems()).toEqual([
      `made for another chain: its genesis is 0x${"34".repeat(32)}, the connected chain's is ${GENESIS}`,
      `made for account ${ALICE}: select that account to sign it (the selected one is ${BOB})`,
    ]);
    expect(screen.getByLabelText("Registration (JSON)")).toHaveAttribute("aria-invalid", "true");
    expect(screen.queryByRole("region", { name: "Summary" })).not.toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Sign and register" })).toBeDisabled();
    paste("{");
    expect(problems()[0]).toMatch(/^not valid JSON/);
    paste({ format: "something/else" });
    expect(problems()[0]).toMatch(/^not a registration: format is "something\/else"/);
    paste(registrationJson({ multiaddrs: [], account: BOB, peer_public: "0x12" }, { device_count: 0 }));
    expect(problems()).toEqual([
      "peer_public must be 32 bytes (64 hex digits), not 2 digits",
      "at least one listen multiaddr is needed",
      "capabilities.device_count: the device count must be a whole number from 1 to 255",
    ]);
    expect(source.register).not.toHaveBeenCalled();
  });

  it("tells an account that is registered already", async () => {
    const { source } = fakeSource([ALICE]);
    render(<RegisterPage source={source} at="0xbest" account={alice} genesisHash={GENESIS} />);
    expect(await screen.findByRole("note")).toHaveTextContent("The selected account is already a provider");
    paste(registrationJson());
    expect(problems()).toEqual([`${ALICE} is already a registered provider`]);
    expect(screen.getByRole("button", { name: "Sign and register" })).toBeDisabled();
  });

  it("asks for an account when none is selected", () => {
    render(<RegisterPage source={fakeSource().source} at="0xbest" genesisHash={GENESIS} />);
    expect(screen.getByRole("alert")).toHaveTextContent("Select the provider's account in the header to sign with it.");
  });
});

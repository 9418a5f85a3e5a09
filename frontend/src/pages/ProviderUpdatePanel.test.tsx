import { act, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import type { TxEvent } from "polkadot-api";
import { Subject } from "rxjs";
import { describe, expect, it, vi } from "vitest";
import type { Account } from "../lib/accounts";
import type { RegistrationSource } from "../lib/source";
import { UNIT } from "../lib/units";
import { ALICE, BOB, provider } from "../test/fixtures";
import { ProviderUpdatePanel } from "./ProviderUpdatePanel";

function fakeSource() {
  const tx = new Subject<TxEvent>();
  const source: RegistrationSource = {
    provider: vi.fn(async (who: string) => (who === BOB ? provider(BOB) : undefined)),
    constants: vi.fn(async () => ({ minStake: 100n * UNIT, unbondingPeriod: 14_400, maxUnbondingChunks: 16 })),
    free: vi.fn(async () => 1_000n * UNIT),
    register: vi.fn(() => tx),
    update: vi.fn(() => tx),
  };
  return { source, tx };
}

const alice = { address: ALICE, name: "Alice", source: "dev", signer: {} } as Account;
const bob = { address: BOB, name: "Bob", source: "dev", signer: {} } as Account;

describe("ProviderUpdatePanel with a fake source", () => {
  it("is prefilled from the provider's record and sends only what changed", async () => {
    const { source, tx } = fakeSource();
    render(<ProviderUpdatePanel source={source} who={BOB} at="0xbest" account={bob} />);
    const form = await screen.findByRole("form", { name: "Capabilities and addresses" });
    expect(form).toBeInTheDocument();
    expect(screen.getByLabelText("Device")).toHaveValue("Cpu");
    expect(screen.getByLabelText("Device name")).toHaveValue("x86_64 2-core");
    expect(screen.getByLabelText("Region")).toHaveValue("local");
    expect(screen.getByLabelText("Listen multiaddrs (one per line)")).toHaveValue("/ip4/127.0.0.1/tcp/40333");
    expect(screen.getByLabelText("Endpoint (http:// or https://)")).toHaveValue("http://127.0.0.1:8090");
    const sign = screen.getByRole("button", { name: "Sign and update" });
    expect(sign).toBeDisabled();
    expect(screen.getByTestId("update-changes")).toHaveTextContent("Nothing changed yet.");

    await userEvent.clear(screen.getByLabelText("Region"));
    await userEvent.type(screen.getByLabelText("Region"), "eu-west");
    expect(screen.getByTestId("update-changes")).toHaveTextContent("Will update: capabilities.");
    await userEvent.click(sign);
    expect(source.update).toHaveBeenCalledWith(
      { capabilities: { ...provider(BOB).capabilities, region: "eu-west" } },
      bob.signer,
    );
    expect(screen.getByRole("status")).toHaveTextContent("Update: Waiting for the signature");
    act(() => tx.next({ type: "finalized", txHash: "0x5", ok: true, events: [], block: { hash: "0xa", number: 9, index: 1 } }));
    expect(screen.getByRole("status")).toHaveTextContent("Update: Finalized #9");
  });

  it("checks each field and shows the chain's refusal", async () => {
    const { source, tx } = fakeSource();
    render(<ProviderUpdatePanel source={source} who={BOB} at="0xbest" account={bob} />);
    await screen.findByRole("form", { name: "Capabilities and addresses" });
    await userEvent.clear(screen.getByLabelText("Device count"));
    await userEvent.type(screen.getByLabelText("Device count"), "0");
    expect(screen.getByText("the device count must be a whole number from 1 to 255")).toBeInTheDocument();
    expect(screen.getByLabelText("Device count")).toHaveAttribute("aria-invalid", "true");
    await userEvent.clear(screen.getByLabelText("Listen multiaddrs (one per line)"));
    expect(screen.getByText("at least one listen multiaddr is needed")).toBeInTheDocument();
    await userEvent.clear(screen.getByLabelText("Endpoint (http:// or https://)"));
    await userEvent.type(screen.getByLabelText("Endpoint (http:// or https://)"), "gpu.example:8090");
    expect(screen.getByText("the endpoint must be an http:// or https:// URL")).toBeInTheDocument();
    expect(screen.getByTestId("update-changes")).toHaveTextContent("Fix the fields above first.");
    expect(screen.getByRole("button", { name: "Sign and update" })).toBeDisabled();

    await userEvent.click(screen.getByRole("button", { name: "Reset" }));
    expect(screen.getByLabelText("Device count")).toHaveValue("1");
    await userEvent.type(screen.getByLabelText("Listen multiaddrs (one per line)"), "{enter}/ip4/10.0.0.9/tcp/4001");
    await userEvent.selectOptions(screen.getByLabelText("Device"), "Cuda");
    expect(screen.getByTestId("update-changes")).toHaveTextContent("Will update: capabilities, listen addresses.");
    await userEvent.click(screen.getByRole("button", { name: "Sign and update" }));
    expect(source.update).toHaveBeenCalledWith(
      {
        capabilities: { ...provider(BOB).capabilities, device: "Cuda" },
        multiaddrs: ["/ip4/127.0.0.1/tcp/40333", "/ip4/10.0.0.9/tcp/4001"],
      },
      bob.signer,
    );
    act(() =>
      tx.next({
        type: "finalized",
        txHash: "0x6",
        ok: false,
        events: [],
        block: { hash: "0xb", number: 10, index: 1 },
        dispatchError: { type: "Module", value: { type: "Providers", value: { type: "BadMultiaddr" } } },
      }),
    );
    expect(screen.getByRole("status")).toHaveTextContent("Update: Failed #10");
    expect(screen.getByRole("status")).toHaveTextContent("Providers.BadMultiaddr: no listen multiaddr");
  });

  it("freezes the hardware while the provider is in a job, but not its addresses", async () => {
    const { source } = fakeSource();
    source.provider = vi.fn(async () => provider(BOB, { activeJobs: 1, jobLocks: [{ job: 3n, amount: 100n * UNIT, disputes: 0 }], locked: 100n * UNIT }));
    render(<ProviderUpdatePanel source={source} who={BOB} at="0xbest" account={bob} />);
    await screen.findByRole("form", { name: "Capabilities and addresses" });
    expect(screen.getByRole("group", { name: "Hardware" })).toHaveTextContent("In a job: the hardware cannot change");
    expect(screen.getByLabelText("Region")).toBeDisabled();
    expect(screen.getByLabelText("Device")).toBeDisabled();
    await userEvent.clear(screen.getByLabelText("Endpoint (http:// or https://)"));
    await userEvent.type(screen.getByLabelText("Endpoint (http:// or https://)"), "https://gpu.example");
    expect(screen.getByTestId("update-changes")).toHaveTextContent("Will update: endpoint.");
    await userEvent.click(screen.getByRole("button", { name: "Sign and update" }));
    expect(source.update).toHaveBeenCalledWith({ endpoint: "https://gpu.example" }, bob.signer);
  });

  it("is not shown to another account", async () => {
    const { source } = fakeSource();
    const { container } = render(<ProviderUpdatePanel source={source} who={BOB} at="0xbest" account={alice} />);
    await new Promise((r) => setTimeout(r, 20));
    expect(container).toBeEmptyDOMElement();
    expect(source.provider).not.toHaveBeenCalled();
  });
});

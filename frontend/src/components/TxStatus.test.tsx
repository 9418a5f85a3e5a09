import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { TxState } from "../lib/tx";
import { TxStatus } from "./TxStatus";

const block = { number: 12, hash: "0xbb" };

describe("TxStatus", () => {
  it.each<[TxState, RegExp]>([
    [{ phase: "signing" }, /Waiting for the signature/],
    [{ phase: "pending", txHash: "0x1234" }, /Pending/],
    [{ phase: "inBlock", txHash: "0x1234", block }, /In block #12/],
    [{ phase: "finalized", txHash: "0x1234", block }, /Finalized #12/],
  ])("shows %o", (state, text) => {
    render(<TxStatus state={state} label="Create job" />);
    const status = screen.getByRole("status");
    expect(status).toHaveTextContent(text);
    expect(status).toHaveTextContent(/^Create job:/);
    expect(status).toHaveAttribute("data-phase", state.phase);
  });

  it("shows a failure with its decoded error", () => {
    render(
      <TxStatus state={{ phase: "failed", txHash: "0xabc", block, error: "Jobs.NotBuyer: only the job's buyer may do that" }} />,
    );
    const status = screen.getByRole("status");
    expect(status).toHaveTextContent("Transaction: Failed #12");
    expect(status).toHaveTextContent("Jobs.NotBuyer: only the job's buyer may do that");
    expect(status).toHaveAttribute("aria-live", "polite");
  });

  it("is an empty live region when idle", () => {
    render(<TxStatus state={{ phase: "idle" }} />);
    expect(screen.getByRole("status")).toBeEmptyDOMElement();
  });
});

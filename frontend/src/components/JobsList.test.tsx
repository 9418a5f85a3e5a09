import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { BOB, job, RESNET_SPEC, TRANSFORMER_SPEC } from "../test/fixtures";
import { UNIT } from "../lib/units";
import { JobsList } from "./JobsList";

const JOBS = [
  job(2, { status: "Running", participants: 3, roundsSettled: 2, paid: 60n * UNIT, held: 90n * UNIT, buyer: BOB }),
  job(1, { status: "Completed", participants: 4, roundsSettled: 5, held: 0n, paid: 150n * UNIT }),
  job(0),
];

describe("JobsList", () => {
  it("renders a row per job with status, buyer, rounds, participants and escrow", () => {
    render(<JobsList jobs={JOBS} />);
    const rows = screen.getAllByRole("row").slice(1);
    expect(rows).toHaveLength(3);
    const running = within(rows[0]!);
    expect(running.getByRole("link", { name: "#2" })).toHaveAttribute("href", "#/jobs/2");
    expect(running.getByText("Running")).toBeInTheDocument();
    expect(running.getByText("2 / 5", { exact: false })).toBeInTheDocument();
    expect(running.getByText("3 (4–4)")).toBeInTheDocument();
    expect(running.getByText("60 GRID / 90 GRID")).toBeInTheDocument();
    expect(running.getByTitle(BOB)).toHaveTextContent("5FHneW46…jJM694ty");
    expect(within(rows[2]!).getByText("0 GRID / 151.5 GRID")).toBeInTheDocument();
    expect(within(rows[0]!).getByText(/GPT 2×64/)).toBeInTheDocument();
  });

  it("describes a transformer job's model", () => {
    render(<JobsList jobs={[job(7, { spec: TRANSFORMER_SPEC })]} />);
    const row = screen.getAllByRole("row")[1]!;
    expect(within(row).getByText(/^Transformer 2×64, 4 heads \(2 kv\), MLP 172 SwiGLU, RMSNorm, RoPE, tied embeddings/)).toBeInTheDocument();
  });

  it("describes a ResNet job's model", () => {
    render(<JobsList jobs={[job(8, { spec: RESNET_SPEC })]} />);
    const row = screen.getAllByRole("row")[1]!;
    expect(within(row).getByText("ResNet 1×28×28 → 10 classes, width 8, 2 stages × 1 block (5.1k params)")).toBeInTheDocument();
  });

  it("filters by status", async () => {
    render(<JobsList jobs={JOBS} />);
    const filter = screen.getByLabelText("Status");
    expect(within(filter).getByRole("option", { name: "Completed (1)" })).toBeInTheDocument();
    await userEvent.selectOptions(filter, "Completed");
    expect(screen.getAllByRole("row")).toHaveLength(2);
    expect(screen.getByRole("link", { name: "#1" })).toBeInTheDocument();
    await userEvent.selectOptions(filter, "Cancelled");
    expect(screen.queryByRole("table")).not.toBeInTheDocument();
    expect(screen.getByText("No cancelled jobs.")).toBeInTheDocument();
  });

  it("says when there are no jobs", () => {
    render(<JobsList jobs={[]} />);
    expect(screen.getByText("No jobs on this chain yet.")).toBeInTheDocument();
  });
});

import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { UNIT } from "../lib/units";
import { BOB, provider } from "../test/fixtures";
import { ProviderDetailView } from "./ProviderDetailView";

describe("ProviderDetailView's stake locked for jobs", () => {
  it("lists each job's lock, how long it lasts, and the total locked now", () => {
    const p = provider(BOB, {
      activeJobs: 1,
      jobLocks: [
        { job: 9n, amount: 100n * UNIT, disputes: 0 },
        { job: 3n, amount: 25n * UNIT / 2n, until: 80, disputes: 0 },
        { job: 1n, amount: 40n * UNIT, until: 60, disputes: 0 },
        { job: 4n, amount: 5n * UNIT, until: 60, disputes: 1 },
      ],
      // The lock until #60 no longer binds at the view's block; the disputed one does.
      locked: 117n * UNIT + UNIT / 2n,
    });
    render(<ProviderDetailView provider={p} jobs={[]} now={70} />);
    const locks = screen.getByRole("region", { name: "Stake locked for jobs" });
    const table = within(locks).getByRole("table", { name: "Stake locked for jobs" });
    expect(within(table).getAllByRole("columnheader").map((h) => h.textContent)).toEqual(["Job", "Locked", "Lasts"]);
    const rows = within(table).getAllByRole("row").slice(1);
    expect(rows.map((r) => [...r.children].map((c) => c.textContent))).toEqual([
      ["#9", "100 GRID", "while a member"],
      ["#3", "12.5 GRID", "until block #80 (in 10 blocks (60 s))"],
      ["#1", "40 GRID", "until block #60 (lapsed)"],
      ["#4", "5 GRID", "until block #60 (lapsed), and while 1 challenge of its work is open"],
      ["Total locked now", "117.5 GRID", ""],
    ]);
    expect(within(table).getByRole("link", { name: "#9" })).toHaveAttribute("href", "#/jobs/9");
    expect(within(locks).getByTestId("provider-locked")).toHaveTextContent("117.5 GRID");
    expect(screen.getByRole("region", { name: "Record" })).toHaveTextContent("Active jobs1");
  });

  it("says when nothing is locked, and gives no countdown without the best block", () => {
    const { rerender } = render(<ProviderDetailView provider={provider(BOB)} jobs={[]} />);
    expect(screen.getByRole("region", { name: "Stake locked for jobs" })).toHaveTextContent("No stake locked for jobs.");
    rerender(<ProviderDetailView provider={provider(BOB, { jobLocks: [{ job: 2n, amount: UNIT, until: 50, disputes: 0 }], locked: UNIT })} jobs={[]} />);
    expect(screen.getByRole("region", { name: "Stake locked for jobs" })).toHaveTextContent("#21 GRIDuntil block #50Total");
  });
});

import { describe, expect, it } from "vitest";
import { ALICE, BOB, CHARLIE } from "../test/fixtures";
import { foldProofLosses, lossSeries, trainerProblem, type TrainerReading } from "./losses";
import { cumulative, slashesOf } from "./rewards";
import { trainerStatus as status } from "../test/activity";

describe("loss series", () => {
  it("builds eval and train series per trainer and the chain's mean train loss", () => {
    const trainers: TrainerReading[] = [
      { who: BOB, endpoint: "http://b", status: status() },
      { who: CHARLIE, endpoint: "http://c", error: "http://c/status: HTTP 502" },
      { who: ALICE, endpoint: "http://a", status: status({ job: 2 }) },
    ];
    const proofs = foldProofLosses(
      [{ round: 2, provider: BOB, trainLoss: 2.5 }],
      [
        { round: 2, provider: CHARLIE, trainLoss: 2.7 },
        { round: 2, provider: BOB, trainLoss: 2.5 },
      ],
    );
    expect(proofs).toHaveLength(2);
    const series = lossSeries(trainers, proofs, 1n);
    expect(series.map((s) => s.id)).toEqual([`eval:${BOB}`, `train:${BOB}`, "train:chain"]);
    expect(series[0]!.points).toEqual([
      { x: 0, y: 4.3 },
      { x: 2, y: 2.9 },
    ]);
    expect(series[1]!.points.map((p) => p.x)).toEqual([0, 1, 2]);
    expect(series[2]!.points[0]!.x).toBe(2);
    expect(series[2]!.points[0]!.y).toBeCloseTo(2.6);
    expect(series[0]!.label).toBe("eval loss, bob-gpu");
    expect(trainerProblem(trainers[1]!, 1n)).toBe("http://c/status: HTTP 502");
    expect(trainerProblem(trainers[2]!, 1n)).toBe("it serves job #2, not this one");
    expect(trainerProblem({ who: BOB, status: status({ history: undefined }) }, 1n)).toMatch(/no loss history/);
  });

  it("is empty with nothing read", () => {
    expect(lossSeries([{ who: BOB }], [], 1n)).toEqual([]);
  });
});

describe("rewards and slashes over time", () => {
  it("sums by block into running totals", () => {
    expect(
      cumulative([
        { block: 30, amount: 5n },
        { block: 20, amount: 10n },
        { block: 30, amount: 1n },
        { block: undefined, amount: 99n },
      ]),
    ).toEqual([
      { block: 20, total: 10n, delta: 10n },
      { block: 30, total: 16n, delta: 6n },
    ]);
  });

  it("picks one provider's slashes from events", () => {
    const rows = [
      { block: 9, index: 0, pallet: "Providers", name: "Slashed", fields: { who: BOB, reason: { type: "Liveness" }, amount: 3n } },
      { block: 5, index: 1, pallet: "Providers", name: "Slashed", fields: { who: BOB, reason: { type: "Fraud" }, amount: 4n } },
      { block: 9, index: 2, pallet: "Providers", name: "Slashed", fields: { who: ALICE, reason: { type: "Fraud" }, amount: 1n } },
      { block: 9, index: 3, pallet: "Jobs", name: "RewardPaid", fields: { who: BOB, amount: 1n } },
    ];
    expect(slashesOf(rows, BOB)).toEqual([
      { block: 5, reason: "Fraud", amount: 4n },
      { block: 9, reason: "Liveness", amount: 3n },
    ]);
  });
});

import type { TxEvent } from "polkadot-api";
import { describe, expect, it } from "vitest";
import { createdJobId, formatDispatchError, IDLE, nextTxState, txErrorState, type TxState } from "./tx";

const block = { hash: "0xb1", number: 7, index: 1 };
const fold = (events: TxEvent[]): TxState[] => {
  const states: TxState[] = [];
  events.reduce<TxState>((s, e) => {
    const next = nextTxState(s, e);
    states.push(next);
    return next;
  }, IDLE);
  return states;
};
const notFound = (isValid: boolean): TxEvent => ({ type: "txBestBlocksState", txHash: "0xt", found: false, isValid });
const found = (ok: boolean): TxEvent =>
  ok
    ? { type: "txBestBlocksState", txHash: "0xt", found: true, ok: true, events: [], block }
    : {
        type: "txBestBlocksState",
        txHash: "0xt",
        found: true,
        ok: false,
        events: [],
        block,
        dispatchError: { type: "Module", value: { type: "Jobs", value: { type: "InsufficientBalance" } } },
      };

describe("transaction states", () => {
  it("go pending → in block → finalized", () => {
    const states = fold([
      { type: "signed", txHash: "0xt" },
      { type: "broadcasted", txHash: "0xt" },
      notFound(true),
      found(true),
      { type: "finalized", txHash: "0xt", ok: true, events: [], block },
    ]);
    expect(states.map((s) => s.phase)).toEqual(["pending", "pending", "pending", "inBlock", "finalized"]);
    expect(states[4]).toEqual({ phase: "finalized", txHash: "0xt", block: { number: 7, hash: "0xb1" } });
  });

  it("fail with the decoded dispatch error", () => {
    const [, s] = fold([{ type: "signed", txHash: "0xt" }, found(false)]);
    expect(s).toMatchObject({ phase: "failed", block: { number: 7 } });
    expect(s?.phase === "failed" && s.error).toBe(
      "Jobs.InsufficientBalance: the account cannot put that much on hold (the buyer its job's budget, a challenger the challenge's deposit and fee)",
    );
  });

  it("go back to pending after a re-org and fail when no longer valid", () => {
    expect(fold([found(true), notFound(true)]).map((s) => s.phase)).toEqual(["inBlock", "pending"]);
    expect(fold([notFound(false)])[0]).toMatchObject({ phase: "failed", error: /no longer valid/ });
  });

  it("report errors thrown by signing or submission", () => {
    const err = Object.assign(new Error("Invalid transaction"), { error: { type: "Invalid", value: { type: "Payment" } } });
    expect(txErrorState({ phase: "pending", txHash: "0xt" }, err)).toEqual({
      phase: "failed",
      txHash: "0xt",
      error: "Invalid transaction: Invalid.Payment",
    });
    expect(txErrorState({ phase: "signing" }, new Error("Cancelled"))).toMatchObject({ error: "Cancelled" });
  });
});

describe("dispatch errors", () => {
  it("name the pallet and error, with the job errors' meaning", () => {
    expect(formatDispatchError({ type: "Module", value: { type: "Jobs", value: { type: "NotBuyer" } } })).toBe(
      "Jobs.NotBuyer: only the job's buyer may do that",
    );
    expect(formatDispatchError({ type: "Module", value: { type: "Balances", value: { type: "InsufficientBalance" } } })).toBe(
      "Balances.InsufficientBalance",
    );
    expect(formatDispatchError({ type: "Token", value: { type: "FundsUnavailable" } })).toBe("Token.FundsUnavailable");
    expect(formatDispatchError({ type: "BadOrigin" })).toBe("BadOrigin");
  });

  it("explain the admission and verifiability errors", () => {
    const jobs = (type: string) => formatDispatchError({ type: "Module", value: { type: "Jobs", value: { type } } });
    expect(jobs("NotOnAllowlist")).toBe("Jobs.NotOnAllowlist: the job's buyer admits only the accounts on its allowlist");
    expect(jobs("HealthTooLow")).toBe("Jobs.HealthTooLow: the provider's health score is below the job's minimum");
    expect(jobs("RegisteredTooRecently")).toMatch(/^Jobs.RegisteredTooRecently: the provider registered more recently/);
    expect(jobs("TooFewToVerify")).toMatch(/^Jobs.TooFewToVerify: the job has a challenge window but too few min providers/);
    expect(jobs("BadInitialWeights")).toBe(
      "Jobs.BadInitialWeights: the initial weights' URI is empty or not text, or their content hash is zero",
    );
    expect(jobs("StakeTooLowToDeter")).toMatch(/^Jobs.StakeTooLowToDeter: the job has a challenge window but its min provider stake is too low .*\(AuditRate, FraudSlash\)$/);
  });

  it("explain why a challenge is refused", () => {
    const jobs = (type: string) => formatDispatchError({ type: "Module", value: { type: "Jobs", value: { type } } });
    expect(jobs("NotEligible")).toMatch(/^Jobs.NotEligible: the caller is not a registered provider .*nor, to challenge, the job's buyer/);
    expect(jobs("ChallengeWindowClosed")).toBe("Jobs.ChallengeWindowClosed: the job's challenge window for that round has passed (or the job has none)");
    expect(jobs("AlreadyChallenged")).toBe("Jobs.AlreadyChallenged: that contribution was already challenged");
    expect(jobs("NoSuchContribution")).toMatch(/^Jobs.NoSuchContribution: the provider was not paid for that round/);
    expect(jobs("RoundNotSettled")).toMatch(/^Jobs.RoundNotSettled: /);
    expect(jobs("NoVerifiers")).toMatch(/^Jobs.NoVerifiers: .*nobody could decide the challenge$/);
    expect(jobs("CannotChallengeSelf")).toBe("Jobs.CannotChallengeSelf: a provider cannot challenge its own contribution");
  });
});

describe("created job id", () => {
  it("comes from the Jobs.JobCreated event", () => {
    const events = [
      { type: "Balances", value: { type: "Withdraw", value: {} } },
      { type: "Jobs", value: { type: "JobCreated", value: { job: 4n, buyer: "x", budget: 1n } } },
    ];
    expect(createdJobId(events)).toBe(4n);
    expect(createdJobId([])).toBeUndefined();
  });
});

import { useState, type FormEvent } from "react";
import { validateStakeAmount, withdrawable, type ProviderRow, type StakeAction } from "../lib/providers";
import type { TxState } from "../lib/tx";
import { formatGrid } from "../lib/units";
import { TxStatus } from "./TxStatus";

export interface StakeActionsProps {
  provider: ProviderRow;
  /** Best block number (what is withdrawable depends on it). */
  now: number;
  minStake?: bigint;
  free?: bigint;
  onBond: (amount: bigint) => void;
  onUnbond: (amount: bigint) => void;
  onWithdraw: () => void;
  tx?: TxState;
  txLabel?: string;
}

/** Bond more, unbond and withdraw for the selected account's own provider record. */
export function StakeActions({ provider, now, minStake, free, onBond, onUnbond, onWithdraw, tx, txLabel }: StakeActionsProps) {
  const busy = tx?.phase === "signing" || tx?.phase === "pending";
  const ready = withdrawable(provider, now);
  const ctx = { stake: provider.stake, minStake, free, activeJobs: provider.activeJobs, locked: provider.locked };
  return (
    <section aria-labelledby="stake-title" className="card">
      <h2 id="stake-title">Your stake</h2>
      <p>
        Active {formatGrid(provider.stake)}
        {minStake !== undefined && <span className="muted"> (minimum {formatGrid(minStake)})</span>}
        {provider.locked > 0n && <span className="muted">; locked for jobs {formatGrid(provider.locked)}</span>}
        {free !== undefined && <span className="muted">; free balance {formatGrid(free)}</span>}
      </p>
      <div className="grid-2">
        <AmountForm id="bond" label="Bond more" action="bond" ctx={ctx} onSubmit={onBond} busy={busy} />
        <AmountForm id="unbond" label="Unbond" action="unbond" ctx={ctx} onSubmit={onUnbond} busy={busy} />
      </div>
      <p>
        <button type="button" onClick={onWithdraw} disabled={busy || ready === 0n}>
          Withdraw unbonded
        </button>{" "}
        <span className="muted">{ready > 0n ? `${formatGrid(ready)} unlocked` : "nothing unlocked yet"}</span>
      </p>
      {tx && <TxStatus state={tx} label={txLabel} />}
    </section>
  );
}

function AmountForm({
  id,
  label,
  action,
  ctx,
  onSubmit,
  busy,
}: {
  id: string;
  label: string;
  action: StakeAction;
  ctx: Parameters<typeof validateStakeAmount>[2];
  onSubmit: (amount: bigint) => void;
  busy: boolean;
}) {
  const [draft, setDraft] = useState("");
  const [touched, setTouched] = useState(false);
  const result = validateStakeAmount(draft, action, ctx);
  const error = touched && typeof result === "string" ? result : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setTouched(true);
    if (typeof result === "bigint") onSubmit(result);
  };
  return (
    <form onSubmit={submit} aria-label={label} noValidate>
      <div className={`field${error ? " invalid" : ""}`}>
        <label htmlFor={`${id}-amount`}>{label} (GRID)</label>
        <input
          id={`${id}-amount`}
          inputMode="decimal"
          value={draft}
          onChange={(e) => {
            setDraft(e.target.value);
            setTouched(true);
          }}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? `${id}-error` : undefined}
        />
        {error && (
          <small id={`${id}-error`} className="error">
            {error}
          </small>
        )}
      </div>
      <button type="submit" disabled={busy}>
        {label}
      </button>
    </form>
  );
}

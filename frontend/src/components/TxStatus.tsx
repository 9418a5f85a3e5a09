import { shortHash } from "../lib/format";
import type { TxState } from "../lib/tx";

const LABEL: Record<TxState["phase"], string> = {
  idle: "",
  signing: "Waiting for the signature…",
  pending: "Pending: submitted, waiting for a block",
  inBlock: "In block",
  finalized: "Finalized",
  failed: "Failed",
};

/** A transaction's progress; announced to screen readers as it changes. */
export function TxStatus({ state, label = "Transaction" }: { state: TxState; label?: string }) {
  if (state.phase === "idle") return <div role="status" aria-live="polite" />;
  const block = "block" in state && state.block ? ` #${state.block.number}` : "";
  return (
    <div role="status" aria-live="polite" className={`tx tx-${state.phase}`} data-phase={state.phase}>
      <strong>
        {label}: {LABEL[state.phase]}
        {block}
      </strong>
      {state.phase === "failed" && <p className="tx-error">{state.error}</p>}
      {"txHash" in state && state.txHash && (
        <p className="muted mono" title={state.txHash}>
          tx {shortHash(state.txHash)}
        </p>
      )}
    </div>
  );
}

import { useState, type FormEvent } from "react";
import { formatMemory, formatTflops } from "../lib/providers";
import { parseRegistration, validateRegistrationStake, type Registration } from "../lib/registration";
import type { TxState } from "../lib/tx";
import { formatGrid } from "../lib/units";
import { TxStatus } from "./TxStatus";

export interface RegisterProviderFormProps {
  /** The selected signing account (ss58), if any. */
  account?: string;
  /** The connected chain's genesis hash (undefined until connected). */
  genesisHash?: string;
  /** Whether the selected account is a provider already (undefined while unknown). */
  alreadyRegistered?: boolean;
  minStake?: bigint;
  /** The selected account's free balance. */
  free?: bigint;
  onSubmit: (registration: Registration, stake: bigint) => void;
  tx?: TxState;
}

/** GRID units as text the amount field parses back ("1000.5", no grouping). */
const gridText = (units: bigint) => formatGrid(units, false).replace(/,/g, "");

const COMMAND = "grid-trainer registration --config provider.toml";

/**
 * Registering the selected account as a provider with the JSON `grid-trainer registration`
 * printed: checked as pasted (chain, account, key lengths, addresses, capabilities), the stake
 * prefilled from it and editable, a summary, then the transaction's progress.
 */
export function RegisterProviderForm({ account, genesisHash, alreadyRegistered, minStake, free, onSubmit, tx }: RegisterProviderFormProps) {
  const [text, setText] = useState("");
  const [stakeDraft, setStakeDraft] = useState<string>();
  const busy = tx?.phase === "signing" || tx?.phase === "pending";
  const done = tx?.phase === "inBlock" || tx?.phase === "finalized";
  const parsed = parseRegistration(text, { genesisHash, account, alreadyRegistered: done ? false : alreadyRegistered });
  const reg = parsed.registration;
  const stakeText = stakeDraft ?? (reg ? gridText(reg.stake) : "");
  const stake = validateRegistrationStake(stakeText, { minStake, free });
  const touched = text.trim() !== "";
  const ready = !!reg && typeof stake === "bigint" && !!account && !!genesisHash && !busy && !done;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (reg && typeof stake === "bigint" && ready) onSubmit(reg, stake);
  };

  return (
    <form onSubmit={submit} aria-labelledby="register-title" className="card register" noValidate>
      <h2 id="register-title">The trainer's registration</h2>
      <p>
        The provider's libp2p key stays with its trainer. On the provider's machine, run <code>{COMMAND}</code> (the same
        file as <code>grid-trainer provide</code>) and paste what it prints. It binds the trainer's peer id to the account
        for this chain, with its listen addresses, endpoint and measured hardware.
      </p>
      {!account && <p role="alert">Select the provider's account in the header to sign with it.</p>}
      <div className={`field${touched && parsed.errors.length ? " invalid" : ""}`}>
        <label htmlFor="registration-json">Registration (JSON)</label>
        <textarea
          id="registration-json"
          rows={8}
          spellCheck={false}
          className="mono"
          placeholder='{"format":"grid/registration/v1", …}'
          value={text}
          onChange={(e) => {
            setText(e.target.value);
            setStakeDraft(undefined);
          }}
          aria-invalid={touched && parsed.errors.length ? true : undefined}
          aria-describedby={touched && parsed.errors.length ? "registration-errors" : undefined}
          disabled={busy}
        />
        {touched && parsed.errors.length > 0 && (
          <ul id="registration-errors" className="error errors" aria-label="Problems with the registration">
            {parsed.errors.map((e) => (
              <li key={e}>{e}</li>
            ))}
          </ul>
        )}
      </div>
      {reg && (
        <>
          <div className={`field${typeof stake === "string" ? " invalid" : ""}`}>
            <label htmlFor="registration-stake">Stake (GRID)</label>
            <input
              id="registration-stake"
              inputMode="decimal"
              value={stakeText}
              onChange={(e) => setStakeDraft(e.target.value)}
              aria-invalid={typeof stake === "string" ? true : undefined}
              aria-describedby="registration-stake-help"
              disabled={busy || done}
            />
            <small id="registration-stake-help" className={typeof stake === "string" ? "error" : "muted"}>
              {typeof stake === "string"
                ? stake
                : `held from the free balance${free !== undefined ? ` (${formatGrid(free)})` : ""}${minStake !== undefined ? `; minimum ${formatGrid(minStake)}` : ""}`}
            </small>
          </div>
          <section aria-labelledby="registration-summary-title" className="summary">
            <h3 id="registration-summary-title">Summary</h3>
            <dl className="kv">
              <dt>Account</dt>
              <dd className="mono break">{reg.account}</dd>
              <dt>Stake to hold</dt>
              <dd data-testid="registration-stake-summary">{typeof stake === "bigint" ? formatGrid(stake) : "—"}</dd>
              <dt>Peer id</dt>
              <dd className="mono break">{reg.peerId}</dd>
              <dt>Listen addresses</dt>
              <dd>
                <ul className="plain mono break">
                  {reg.multiaddrs.map((m) => (
                    <li key={m}>{m}</li>
                  ))}
                </ul>
              </dd>
              <dt>Endpoint</dt>
              <dd className="mono break">{reg.endpoint}</dd>
              <dt>Hardware</dt>
              <dd>
                {reg.capabilities.deviceCount} × {reg.capabilities.deviceName} ({reg.capabilities.device}),{" "}
                {formatMemory(reg.capabilities.memoryMib)} each
              </dd>
              <dt>Throughput</dt>
              <dd>{formatTflops(reg.capabilities.tflopsMilli)}</dd>
              <dt>Bandwidth</dt>
              <dd>{reg.capabilities.bandwidthMbps} Mbit/s</dd>
              <dt>Region</dt>
              <dd>{reg.capabilities.region || "—"}</dd>
            </dl>
          </section>
        </>
      )}
      <div className="actions">
        <button type="submit" disabled={!ready}>
          Sign and register
        </button>
      </div>
      {tx && <TxStatus state={tx} label="Register" />}
      {done && reg && (
        <p>
          Registered. <a href={`#/providers/${reg.account}`}>Open your provider page</a>.
        </p>
      )}
    </form>
  );
}

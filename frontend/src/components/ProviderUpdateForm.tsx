import { useState, type FormEvent } from "react";
import type { ProviderRow } from "../lib/providers";
import { buildUpdate, DEVICE_KINDS, draftOf, type ProviderUpdate, type UpdateDraft } from "../lib/registration";
import type { TxState } from "../lib/tx";
import { TxStatus } from "./TxStatus";

export interface ProviderUpdateFormProps {
  /** With `activeJobs` > 0 the hardware is frozen (`Providers.InJob`): only addresses may change. */
  provider: Pick<ProviderRow, "capabilities" | "multiaddrs" | "endpoint"> & Partial<Pick<ProviderRow, "activeJobs">>;
  onSubmit: (update: ProviderUpdate) => void;
  tx?: TxState;
}

type FieldKey = keyof UpdateDraft;

const FIELDS: { key: Exclude<FieldKey, "device" | "multiaddrs" | "endpoint">; label: string; numeric?: boolean }[] = [
  { key: "deviceName", label: "Device name" },
  { key: "deviceCount", label: "Device count", numeric: true },
  { key: "memoryMib", label: "Memory per device (MiB)", numeric: true },
  { key: "tflopsMilli", label: "Throughput (milli-TFLOP/s)", numeric: true },
  { key: "bandwidthMbps", label: "Bandwidth (Mbit/s)", numeric: true },
  { key: "region", label: "Region" },
];

const describe = (u: ProviderUpdate) =>
  [u.capabilities && "capabilities", u.multiaddrs && "listen addresses", u.endpoint !== undefined && "endpoint"]
    .filter(Boolean)
    .join(", ");

/**
 * `Providers.update` for the selected account's own record: capabilities, listen addresses and
 * endpoint prefilled from it, checked as typed, and only what changed is sent.
 */
export function ProviderUpdateForm({ provider, onSubmit, tx }: ProviderUpdateFormProps) {
  const [draft, setDraft] = useState<UpdateDraft>(() => draftOf(provider));
  const busy = tx?.phase === "signing" || tx?.phase === "pending";
  const inJob = (provider.activeJobs ?? 0) > 0;
  // In a job only the addresses are sent, whatever the hardware fields hold.
  const result = buildUpdate(
    inJob ? { ...draftOf(provider), multiaddrs: draft.multiaddrs, endpoint: draft.endpoint } : draft,
    provider,
  );
  const errors = result.errors ?? {};
  const set = (key: FieldKey, value: string) => setDraft((d) => ({ ...d, [key]: value }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (result.update) onSubmit(result.update);
  };
  const field = (key: FieldKey) => ({
    id: `update-${key}`,
    value: draft[key],
    "aria-invalid": errors[key] ? true : undefined,
    "aria-describedby": errors[key] ? `update-${key}-error` : undefined,
    disabled: busy,
  });
  const error = (key: FieldKey) =>
    errors[key] && (
      <small id={`update-${key}-error`} className="error">
        {errors[key]}
      </small>
    );
  return (
    <form onSubmit={submit} aria-labelledby="update-title" className="card" noValidate>
      <h2 id="update-title">Capabilities and addresses</h2>
      <p className="muted">
        What the chain records about this provider's hardware and where to reach its trainer. Only what you change is
        sent (<code>Providers.update</code>).
      </p>
      <fieldset disabled={inJob} aria-describedby={inJob ? "update-frozen" : undefined}>
        <legend>Hardware</legend>
        {inJob && (
          <p id="update-frozen" className="muted">
            In a job: the hardware cannot change until the provider leaves it (<code>Providers.InJob</code>); addresses
            and endpoint still can.
          </p>
        )}
        <div className="fields">
          <div className={`field${errors.device ? " invalid" : ""}`}>
            <label htmlFor="update-device">Device</label>
            <select {...field("device")} onChange={(e) => set("device", e.target.value)}>
              {DEVICE_KINDS.map((k) => (
                <option key={k} value={k}>
                  {k}
                </option>
              ))}
            </select>
            {error("device")}
          </div>
          {FIELDS.map((f) => (
            <div key={f.key} className={`field${errors[f.key] ? " invalid" : ""}`}>
              <label htmlFor={`update-${f.key}`}>{f.label}</label>
              <input {...field(f.key)} inputMode={f.numeric ? "numeric" : undefined} onChange={(e) => set(f.key, e.target.value)} />
              {error(f.key)}
            </div>
          ))}
        </div>
      </fieldset>
      <fieldset>
        <legend>Addresses</legend>
        <div className={`field${errors.multiaddrs ? " invalid" : ""}`}>
          <label htmlFor="update-multiaddrs">Listen multiaddrs (one per line)</label>
          <textarea {...field("multiaddrs")} rows={3} spellCheck={false} className="mono" onChange={(e) => set("multiaddrs", e.target.value)} />
          {error("multiaddrs")}
        </div>
        <div className={`field${errors.endpoint ? " invalid" : ""}`}>
          <label htmlFor="update-endpoint">Endpoint (http:// or https://)</label>
          <input {...field("endpoint")} className="mono" onChange={(e) => set("endpoint", e.target.value)} />
          {error("endpoint")}
        </div>
      </fieldset>
      <p className="muted" data-testid="update-changes">
        {result.update ? `Will update: ${describe(result.update)}.` : "nothing" in result && result.nothing ? "Nothing changed yet." : "Fix the fields above first."}
      </p>
      <div className="actions">
        <button type="submit" disabled={busy || !result.update}>
          Sign and update
        </button>
        <button type="button" onClick={() => setDraft(draftOf(provider))} disabled={busy}>
          Reset
        </button>
      </div>
      {tx && <TxStatus state={tx} label="Update" />}
    </form>
  );
}

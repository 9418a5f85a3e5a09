import type { Account } from "../lib/accounts";
import { shortAddress } from "../lib/format";
import { formatGrid } from "../lib/units";

export interface AccountPickerProps {
  accounts: Account[];
  selected?: string;
  onSelect: (address: string) => void;
  balance?: bigint;
  note?: string;
}

/** The signing account: dev accounts on dev chains, extension accounts when present. */
export function AccountPicker({ accounts, selected, onSelect, balance, note }: AccountPickerProps) {
  return (
    <div className="account-picker">
      <label htmlFor="account">Account</label>
      <select
        id="account"
        value={selected ?? ""}
        onChange={(e) => onSelect(e.target.value)}
        disabled={accounts.length === 0}
      >
        {accounts.length === 0 && <option value="">No accounts</option>}
        {accounts.map((a) => (
          <option key={`${a.source}:${a.address}`} value={a.address}>
            {a.name} ({a.source}) {shortAddress(a.address)}
          </option>
        ))}
      </select>
      {balance !== undefined && <span className="muted">free {formatGrid(balance)}</span>}
      {note && <span className="muted">{note}</span>}
    </div>
  );
}

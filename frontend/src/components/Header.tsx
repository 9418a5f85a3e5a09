import { useEffect, useState, type FormEvent } from "react";
import type { ConnectionState } from "../lib/chain";

export interface HeaderProps {
  url: string;
  onConnect: (url: string) => void;
  state: ConnectionState;
  chainName?: string;
  best?: number;
  finalized?: number;
  children?: React.ReactNode;
}

const STATE_TEXT: Record<ConnectionState, string> = {
  connecting: "Connecting",
  connected: "Connected",
  error: "Connection error",
  closed: "Disconnected",
};

/** Node URL, connection state, chain name and the live best / finalized block numbers. */
export function Header({ url, onConnect, state, chainName, best, finalized, children }: HeaderProps) {
  const [draft, setDraft] = useState(url);
  useEffect(() => setDraft(url), [url]);
  const valid = /^wss?:\/\/\S+$/.test(draft.trim());
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (valid) onConnect(draft.trim());
  };
  return (
    <header className="header">
      <div className="brand">
        <a href="#/jobs">Grid</a>
      </div>
      <form className="node-form" onSubmit={submit} aria-label="Node connection">
        <label htmlFor="node-url">Node</label>
        <input
          id="node-url"
          type="url"
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          aria-invalid={!valid}
          spellCheck={false}
        />
        <button type="submit" disabled={!valid}>
          Connect
        </button>
      </form>
      <dl className="chain-state" aria-live="polite">
        <div>
          <dt>Status</dt>
          <dd>
            <span className={`dot dot-${state}`} aria-hidden="true" />
            {STATE_TEXT[state]}
          </dd>
        </div>
        <div>
          <dt>Chain</dt>
          <dd>{chainName ?? "—"}</dd>
        </div>
        <div>
          <dt>Best</dt>
          <dd data-testid="best">{best !== undefined ? `#${best.toLocaleString("en")}` : "—"}</dd>
        </div>
        <div>
          <dt>Finalized</dt>
          <dd data-testid="finalized">{finalized !== undefined ? `#${finalized.toLocaleString("en")}` : "—"}</dd>
        </div>
      </dl>
      {children}
    </header>
  );
}
